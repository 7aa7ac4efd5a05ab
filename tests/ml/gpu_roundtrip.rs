//! The adapter the library picks runs a real compute shader, and the transfer
//! counters count exactly the bytes that crossed.

use crate::common;

use wgnn::gpu::TransferStats;

const SHADER: &str = r#"
@group(0) @binding(0) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if id.x < arrayLength(&data) {
        data[id.x] = data[id.x] * 3u + id.x;
    }
}
"#;

#[test]
fn compute_shader_round_trip_is_counted_exactly() {
    let gpu = common::own_gpu();
    eprintln!("adapter: {}", gpu.describe());
    let n = 1000u32; // not a multiple of the workgroup size
    let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let bytes: &[u8] = bytemuck::cast_slice(&input);

    let device = gpu.device();
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("roundtrip"),
        size: bytes.len() as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let before = gpu.transfers();
    gpu.upload_buffer(&buffer, 0, bytes).unwrap();

    let pipeline = common::compute_pipeline(&gpu, "roundtrip", SHADER);
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(n.div_ceil(64), 1, 1);
    }
    gpu.queue().submit([encoder.finish()]);

    let out = gpu
        .download_buffer(&buffer, 0, bytes.len() as u64)
        .unwrap()
        .wait()
        .unwrap();
    let out: &[u32] = bytemuck::cast_slice(&out);
    for (i, (&x, &y)) in input.iter().zip(out).enumerate() {
        assert_eq!(y, x.wrapping_mul(3).wrapping_add(i as u32), "element {i}");
    }
    gpu.check().unwrap();

    let moved = gpu.transfers().since(&before);
    assert_eq!(
        moved,
        TransferStats {
            uploads: 1,
            upload_bytes: 4000,
            downloads: 1,
            download_bytes: 4000,
            ..Default::default()
        }
    );
}

#[test]
fn odd_lengths_and_texture_rows_are_counted_as_asked() {
    let gpu = common::own_gpu();
    let buffer = gpu
        .create_buffer_with_data(
            "odd",
            &[1, 2, 3, 4, 5, 6, 7],
            wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        )
        .unwrap();
    let before = gpu.transfers();
    gpu.upload_buffer(&buffer, 4, &[9, 9, 9]).unwrap();
    let back = gpu.download_buffer(&buffer, 0, 7).unwrap().wait().unwrap();
    assert_eq!(back, vec![1, 2, 3, 4, 9, 9, 9]);

    // A 13x5 RGBA texture: rows of 52 bytes, neither 256-aligned.
    let texture = gpu.device().create_texture(&wgpu::TextureDescriptor {
        label: None,
        size: wgpu::Extent3d {
            width: 13,
            height: 5,
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: wgpu::TextureFormat::Rgba8Unorm,
        usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
        view_formats: &[],
    });
    let pixels: Vec<u8> = (0..13 * 5 * 4).map(|i| (i * 7 % 251) as u8).collect();
    let region = wgnn::gpu::transfer::TextureRegion::whole(&texture);
    gpu.upload_texture(&texture, region, &pixels, 52, 5)
        .unwrap();
    let back = pollster::block_on(gpu.download_texture(&texture, region).unwrap()).unwrap();
    assert_eq!(back, pixels);

    let moved = gpu.transfers().since(&before);
    assert_eq!(moved.uploads, 2);
    assert_eq!(moved.upload_bytes, 3 + 260);
    assert_eq!(moved.downloads, 2);
    assert_eq!(moved.download_bytes, 7 + 260);
}

#[test]
fn bad_transfers_are_errors_not_panics() {
    let gpu = common::gpu();
    let buffer = gpu
        .create_buffer_with_data("small", &[0; 16], wgpu::BufferUsages::COPY_DST)
        .unwrap();
    let err = gpu.upload_buffer(&buffer, 8, &[0; 12]).unwrap_err();
    assert!(
        err.to_string().contains("overruns a 16-byte buffer"),
        "{err}"
    );
    let err = gpu.download_buffer(&buffer, 0, 4).unwrap_err();
    assert!(err.to_string().contains("COPY_SRC"), "{err}");
    let err = gpu.upload_buffer(&buffer, 2, &[0; 4]).unwrap_err();
    assert!(err.to_string().contains("offset 2"), "{err}");
    gpu.check().unwrap();
}

#[test]
fn shader_errors_are_captured_not_aborting() {
    let gpu = common::gpu();
    let result = gpu.scoped("broken shader", || {
        gpu.device()
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("broken"),
                source: wgpu::ShaderSource::Wgsl("fn main( {".into()),
            })
    });
    let err = result.expect_err("a broken shader must be an error");
    assert!(err.to_string().contains("broken shader"), "{err}");
    gpu.check().unwrap();
}
