//! The frame kernels as the runtime builds them: every variant valid WGSL
//! that translates to SPIR-V (no GPU needed), every `struct Params` laid out
//! as its Rust twin, and, on the GPU, no new pipeline for a new size.

use super::composite::{
    BlurParams, BlurTile, CompositeParams, CompositeSwitches, SmoothParams, SMOOTH_SOURCE,
};
use super::frame_read::{Reader, YuvParams};
use super::image_out::{ImageOutParams, IMAGE_OUT_SOURCE};
use super::tensorize::{TensorizeParams, TensorizeSwitches};
use super::*;
use crate::gpu::shader::testing::{assert_same_layout, offsets, validate};
use crate::gpu::Gpu;
use crate::ml::DataType;

/// Every frame kernel's source (label, WGSL): each reader x tensorize
/// layout, channel order, resize mode and output type; each reader x
/// composite effect and edge switch; each blur pass's tile and reader; mask
/// smoothing; image out.
pub(crate) fn frame_kernel_sources() -> Vec<(String, String)> {
    let mut all = Vec::new();
    for s in TensorizeSwitches::all() {
        all.push((format!("tensorize {s:?}"), s.source()));
    }
    for s in CompositeSwitches::all() {
        all.push((format!("composite {s:?}"), s.source()));
    }
    for (tile, reader) in BlurTile::all() {
        all.push((format!("blur {tile:?} {reader:?}"), tile.source(reader)));
    }
    all.push(("mask smoothing".into(), SMOOTH_SOURCE.into()));
    all.push(("image out".into(), IMAGE_OUT_SOURCE.into()));
    all
}

#[test]
fn every_frame_kernel_variant_validates_and_translates_to_spirv() {
    let sources = frame_kernel_sources();
    // 120 tensorize + 50 composite + the blur tiles + 2.
    assert!(sources.len() > 172, "{}", sources.len());
    for (what, src) in &sources {
        assert!(!src.contains("override"), "{what} declares an override");
        validate(what, src);
    }
}

#[test]
fn every_params_struct_is_laid_out_as_its_rust_twin() {
    let tensorize = TensorizeSwitches::all()
        .into_iter()
        .find(|s| s.reader == Reader::Nv12)
        .expect("an NV12 variant")
        .source();
    assert_same_layout(
        &tensorize,
        "Params",
        size_of::<TensorizeParams>(),
        &offsets!(
            TensorizeParams: scale,
            offset,
            pad_color,
            region,
            region_pixels,
            out_w,
            out_h,
            whole_frame,
            asymmetric,
            dst_offset,
            _pad0,
            _pad1,
            _pad2
        ),
    );
    // The YUV reader's, within that kernel.
    assert_same_layout(
        &tensorize,
        "YuvParams",
        size_of::<YuvParams>(),
        &offsets!(YuvParams: kr, kb, luma_offset, luma_range, chroma_range, _pad0, _pad1, _pad2),
    );
    let composite = CompositeSwitches::all()[0].source();
    assert_same_layout(
        &composite,
        "Params",
        size_of::<CompositeParams>(),
        &offsets!(
            CompositeParams: bg,
            mask_w,
            mask_h,
            edge_lo,
            edge_hi,
            blur_step,
            _pad0,
            _pad1,
            _pad2
        ),
    );
    let (tile, reader) = BlurTile::all()[0];
    assert_same_layout(
        &tile.source(reader),
        "Params",
        size_of::<BlurParams>(),
        &offsets!(BlurParams: sigma, radius, _pad0, _pad1),
    );
    assert_same_layout(
        SMOOTH_SOURCE,
        "Params",
        size_of::<SmoothParams>(),
        &offsets!(SmoothParams: alpha, mask_len, _pad0, _pad1),
    );
    assert_same_layout(
        IMAGE_OUT_SOURCE,
        "Params",
        size_of::<ImageOutParams>(),
        &offsets!(ImageOutParams: in_w, in_h, x0, out_w, out_h, whole, _pad0, _pad1),
    );
}

/// A device of the test's own, so that its compile count is the test's.
fn own_gpu() -> Gpu {
    Gpu::new().unwrap_or_else(|e| {
        panic!("this test needs a GPU adapter (install mesa-vulkan-drivers for lavapipe): {e}")
    })
}

/// A frame of bytes that vary smoothly and by position, uploaded.
fn frame(gpu: &Gpu, format: VideoFormat, w: u32, h: u32) -> (FrameLayout, Vec<u8>, GpuFrame) {
    let layout = FrameLayout::packed(format, w, h);
    let bytes: Vec<u8> = (0..layout.len())
        .map(|i| ((i * 37 + i / 7 * 11) % 251) as u8)
        .collect();
    let gpu_frame = upload_frame(gpu, &TexturePool::new(), &layout, &bytes).unwrap();
    (layout, bytes, gpu_frame)
}

fn buffer(gpu: &Gpu, bytes: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("test"),
        size: bytes,
        usage,
        mapped_at_creation: false,
    })
}

fn read_f32(gpu: &Gpu, b: &wgpu::Buffer) -> Vec<f32> {
    let bytes = gpu.download_buffer(b, 0, b.size()).unwrap().wait().unwrap();
    bytemuck::pod_collect_to_vec(&bytes)
}

#[test]
fn a_tensorizer_for_another_size_compiles_no_new_pipeline() {
    let gpu = own_gpu();
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let options = |w, h, normalize, pad| TensorizeOptions {
        layout: TensorLayout::Nchw,
        resize: Resize::Letterbox { pad },
        normalize,
        ..TensorizeOptions::new(w, h)
    };
    let start = gpu.pipelines_compiled();
    let first = Tensorizer::new(&gpu, options(16, 12, Normalize::ZERO_ONE, [0; 3])).unwrap();
    let (_, _, f) = frame(&gpu, VideoFormat::Nv12, 30, 18);
    let dst = buffer(&gpu, first.output_bytes(), usage);
    let shape = first.output_shape().map(|d| d as usize);
    first
        .run(&f, TensorBuffer::new(&dst, DataType::Float32, &shape))
        .unwrap();
    let compiled = gpu.pipelines_compiled();
    assert!(compiled > start, "the first tensorizer compiles its kernel");

    // Another model size, normalisation, pad colour and frame size: values.
    let o = options(9, 21, Normalize::MINUS_ONE_ONE, [10, 200, 30]);
    let second = Tensorizer::new(&gpu, o).unwrap();
    let (layout, bytes, f) = frame(&gpu, VideoFormat::Nv12, 14, 26);
    let dst = buffer(&gpu, second.output_bytes(), usage);
    let shape = second.output_shape().map(|d| d as usize);
    second
        .run(&f, TensorBuffer::new(&dst, DataType::Float32, &shape))
        .unwrap();
    assert_eq!(
        gpu.pipelines_compiled(),
        compiled,
        "same switches, no compile"
    );

    // And the values reach the shared kernel.
    let got = read_f32(&gpu, &dst);
    let mut want = vec![0.0; got.len()];
    cpu::Tensorizer::new(o)
        .unwrap()
        .run(
            &cpu::CpuFrame::from_layout(&layout, &bytes).unwrap(),
            &mut want,
        )
        .unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() < 1e-3, "element {i}: GPU {g}, CPU {w}");
    }
    gpu.check().unwrap();
}

#[test]
fn a_compositor_for_another_size_compiles_no_new_pipeline() {
    // Blur radius 6 and 7, both 4 groups of 4 taps.
    another_size_compiles_nothing(2.0, 2.2);
}

#[test]
fn a_sampled_blur_for_another_size_compiles_no_new_pipeline() {
    // Radius 26 and 27 at step 2: both 7 groups of 4 taps per phase. The
    // blur's samples (and so its intermediates) differ in size too.
    another_size_compiles_nothing(8.5, 9.0);
}

/// A compositor blurring at `first`, then one at `second` (with the same
/// blur tile) for another mask and frame size and threshold: the second
/// compiles nothing and matches the CPU path.
fn another_size_compiles_nothing(first_strength: f32, second_strength: f32) {
    let gpu = own_gpu();
    let options = |w, h, strength, threshold| CompositeOptions {
        mask: MaskOptions {
            edge: Some(EdgeSoftening {
                threshold,
                softness: 0.1,
            }),
            temporal: 0.5,
            ..MaskOptions::new(w, h)
        },
        effect: Effect::Blur { strength },
        color: ColorSpec::default(),
    };
    let mask = |w: u32, h: u32| -> Vec<f32> {
        (0..w * h)
            .map(|i| ((i % w) as f32 / w as f32 + (i / w) as f32 / h as f32) / 2.0)
            .collect()
    };
    let mask_buffer = |m: &[f32]| {
        gpu.create_buffer_with_data(
            "test mask",
            bytemuck::cast_slice(m),
            wgpu::BufferUsages::STORAGE,
        )
        .unwrap()
    };
    let start = gpu.pipelines_compiled();
    let mut first = Compositor::new(&gpu, options(8, 6, first_strength, 0.5)).unwrap();
    let (_, _, f) = frame(&gpu, VideoFormat::I420, 40, 30);
    let out = create_rgba_texture(&gpu, 40, 30).unwrap();
    let b = mask_buffer(&mask(8, 6));
    first
        .run(
            &f,
            TensorBuffer::new(&b, DataType::Float32, &[1, 6, 8, 1]),
            &out,
        )
        .unwrap();
    let compiled = gpu.pipelines_compiled();
    assert!(
        compiled > start,
        "the first compositor compiles its kernels"
    );

    // Another mask and frame size, threshold and strength.
    let o = options(5, 9, second_strength, 0.4);
    let mut second = Compositor::new(&gpu, o.clone()).unwrap();
    let (layout, bytes, f) = frame(&gpu, VideoFormat::I420, 23, 35);
    let out = create_rgba_texture(&gpu, 23, 35).unwrap();
    let m = mask(5, 9);
    let b = mask_buffer(&m);
    second
        .run(
            &f,
            TensorBuffer::new(&b, DataType::Float32, &[1, 9, 5, 1]),
            &out,
        )
        .unwrap();
    assert_eq!(
        gpu.pipelines_compiled(),
        compiled,
        "same switches, no compile"
    );

    let got = download_rgba(&gpu, &out).unwrap();
    let mut want = vec![0; got.len()];
    let cpu_options = cpu::CompositeOptions {
        mask: o.mask,
        effect: cpu::Effect::Blur {
            strength: second_strength,
        },
        color: o.color,
    };
    cpu::Compositor::new(cpu_options)
        .unwrap()
        .run(
            &cpu::CpuFrame::from_layout(&layout, &bytes).unwrap(),
            &m,
            &mut want,
            23 * 4,
        )
        .unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(g.abs_diff(*w) <= 1, "byte {i}: GPU {g}, CPU {w}");
    }
    gpu.check().unwrap();
}

#[test]
fn an_image_writer_for_another_size_compiles_no_new_pipeline() {
    let gpu = own_gpu();
    let tensor = |w: u32, h: u32| {
        let values: Vec<f32> = (0..w * h * 3).map(|i| (i * 7 % 256) as f32).collect();
        gpu.create_buffer_with_data(
            "test tensor",
            bytemuck::cast_slice(&values),
            wgpu::BufferUsages::STORAGE,
        )
        .unwrap()
    };
    let start = gpu.pipelines_compiled();
    let first = ImageWriter::new(&gpu).unwrap();
    let t = tensor(6, 4);
    first
        .run(
            TensorBuffer::new(&t, DataType::Float32, &[1, 4, 6, 3]),
            &create_rgba_texture(&gpu, 6, 4).unwrap(),
        )
        .unwrap();
    let compiled = gpu.pipelines_compiled();
    assert!(compiled > start, "the first writer compiles its kernel");

    let second = ImageWriter::new(&gpu).unwrap();
    let src = tensor(5, 3);
    let src = TensorBuffer::new(&src, DataType::Float32, &[1, 3, 5, 3]);
    let out = create_rgba_texture(&gpu, 5, 3).unwrap();
    second.run(src, &out).unwrap();
    // A region, upscaled: 5x3 -> 10x6 at column 2 of a 12x6 texture.
    let wide = create_rgba_texture(&gpu, 12, 6).unwrap();
    let region = ImageRegion {
        x0: 2,
        width: 10,
        height: 6,
    };
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    second
        .encode_region(&mut encoder, src, &wide, region)
        .unwrap();
    gpu.submit("kernel test", [encoder.finish()]).unwrap();
    assert_eq!(
        gpu.pipelines_compiled(),
        compiled,
        "no switches, no compile"
    );

    let whole = download_rgba(&gpu, &out).unwrap();
    for (i, px) in whole.chunks(4).enumerate() {
        let want: Vec<u8> = (0..3).map(|c| ((i * 3 + c) * 7 % 256) as u8).collect();
        assert_eq!(&px[..3], &want[..], "pixel {i}");
        assert_eq!(px[3], 255);
    }
    let wide = download_rgba(&gpu, &wide).unwrap();
    for y in 0..6 {
        // Columns 0 and 1 stay as created (zero); the region is opaque.
        assert_eq!(wide[(y * 12) * 4 + 3], 0, "row {y} column 0 untouched");
        assert_eq!(wide[(y * 12 + 2) * 4 + 3], 255, "row {y} column 2 written");
    }
    gpu.check().unwrap();
}
