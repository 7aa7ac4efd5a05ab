//! Faults surface as errors, never as a panic or an abort: a lost device
//! (forced with `Gpu::destroy`, as a driver reset would lose it) fails every
//! later dispatch, read, write and transfer with one line naming the cause,
//! and a tensor or texture larger than the device allows is refused with one
//! line naming the size and the limit before wgpu sees it.

use crate::common;

use wgnn::ml::{Context, DataType, GraphBuilder, OperandDescriptor, TensorDescriptor};

fn relu_graph(ctx: &Context) -> wgnn::ml::Graph {
    let b = GraphBuilder::new(ctx);
    let x = b.input("x", OperandDescriptor::f32([4])).unwrap();
    let y = b.relu(&x).unwrap();
    b.build(&[("y", &y)]).unwrap()
}

fn tensor(ctx: &Context) -> wgnn::ml::Tensor {
    let desc = TensorDescriptor::new(DataType::Float32, [4])
        .readable()
        .writable();
    ctx.create_tensor(desc).unwrap()
}

fn assert_lost(what: &str, e: wgnn::Error) {
    let text = e.to_string();
    assert!(
        matches!(e, wgnn::Error::DeviceLost(_)),
        "{what}: expected a lost device, got {text}"
    );
    assert!(
        text.starts_with("the GPU device was lost: "),
        "{what}: {text}"
    );
    assert!(
        !text.contains('\n') && !text.contains(".rs:"),
        "{what}: {text}"
    );
}

#[test]
fn a_lost_device_fails_dispatch_reads_writes_and_transfers() {
    let gpu = common::own_gpu();
    let ctx = Context::gpu(&gpu);
    let graph = relu_graph(&ctx);
    let (x, y) = (tensor(&ctx), tensor(&ctx));
    let input = [1.0f32, -2.0, 3.0, -4.0];
    ctx.write_tensor(&x, bytemuck::cast_slice(&input)).unwrap();
    ctx.dispatch(&graph, &[("x", &x)], &[("y", &y)]).unwrap();
    assert_eq!(ctx.read_f32(&y).unwrap(), [1.0, 0.0, 3.0, 0.0]);
    let buffer = gpu
        .create_buffer(&wgpu::BufferDescriptor {
            label: Some("fault test"),
            size: 16,
            usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
        .unwrap();
    // A read-back in flight when the device goes.
    let pending = ctx.read_tensor(&y).unwrap();

    gpu.destroy();

    if let Err(e) = pending.wait() {
        assert_lost("a read in flight", e);
    }
    assert_lost("check", gpu.check().unwrap_err());
    assert_lost(
        "dispatch",
        ctx.dispatch(&graph, &[("x", &x)], &[("y", &y)])
            .unwrap_err(),
    );
    assert_lost("read_tensor", ctx.read_f32(&y).unwrap_err());
    assert_lost(
        "write_tensor",
        ctx.write_tensor(&x, bytemuck::cast_slice(&input))
            .unwrap_err(),
    );
    let desc = TensorDescriptor::new(DataType::Float32, [4]).readable();
    assert_lost("create_tensor", ctx.create_tensor(desc).unwrap_err());
    let b = GraphBuilder::new(&ctx);
    let x2 = b.input("x", OperandDescriptor::f32([4])).unwrap();
    let y2 = b.relu(&x2).unwrap();
    match b.build(&[("y", &y2)]) {
        Ok(_) => panic!("build on a lost device succeeded"),
        Err(e) => assert_lost("build", e),
    }
    assert_lost(
        "upload",
        gpu.upload_buffer(&buffer, 0, &[0; 16]).unwrap_err(),
    );
    assert_lost(
        "download",
        gpu.download_buffer(&buffer, 0, 16)
            .and_then(|d| d.wait())
            .unwrap_err(),
    );
    assert_lost(
        "create_buffer_with_data",
        gpu.create_buffer_with_data("fault test", &[1; 8], wgpu::BufferUsages::STORAGE)
            .unwrap_err(),
    );
    assert_lost("wait_idle", gpu.wait_idle().unwrap_err());
    // Everything made before the loss is released as usual.
    drop((graph, x, y, buffer, ctx));
    assert_eq!(gpu.live().buffers, 0, "{}", gpu.live());
    assert_eq!(gpu.live().graphs, 0, "{}", gpu.live());
}

#[test]
fn a_tensor_larger_than_the_device_allows_is_one_line_naming_size_and_limit() {
    let gpu = common::gpu();
    let ctx = Context::gpu(&gpu);
    let limit = gpu.limits().max_storage_buffer_binding_size;
    // 4 GiB of float32: beyond the storage binding limit of any Vulkan
    // driver (maxStorageBufferRange is a 32-bit count of bytes).
    let desc = TensorDescriptor::new(DataType::Float32, [1 << 15, 1 << 15]);
    let e = ctx.create_tensor(desc).unwrap_err().to_string();
    assert!(
        e.contains("4294967296") && e.contains(&limit.to_string()),
        "{e}"
    );
    assert!(!e.contains('\n') && !e.contains(".rs:"), "{e}");
    // The context still works.
    let t = tensor(&ctx);
    assert_eq!(ctx.read_f32(&t).unwrap(), [0.0; 4]);
}

#[test]
fn oversized_textures_and_buffers_are_refused_before_wgpu_sees_them() {
    let gpu = common::gpu();
    let max = gpu.limits().max_texture_dimension_2d;
    let e = gpu
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("a huge frame"),
            size: wgpu::Extent3d {
                width: 20000.max(max + 1),
                height: 20000.max(max + 1),
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::STORAGE_BINDING,
            view_formats: &[],
        })
        .unwrap_err();
    assert!(matches!(e, wgnn::Error::TooLarge(_)), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("a huge frame") && e.contains(&format!("{max}x{max}")),
        "{e}"
    );

    let max = gpu.limits().max_buffer_size;
    let e = gpu
        .create_buffer(&wgpu::BufferDescriptor {
            label: Some("a huge buffer"),
            size: max + 4,
            usage: wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
        .unwrap_err();
    assert!(matches!(e, wgnn::Error::TooLarge(_)), "{e}");
    assert!(e.to_string().contains(&format!("({max} bytes)")), "{e}");
    // Refused before wgpu: the device has no fault to report.
    gpu.check().unwrap();
}
