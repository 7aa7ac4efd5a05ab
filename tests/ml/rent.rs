//! Renting a tensor to custom WGSL (WebNN issue 33's interop experiment, its third variant): a graph runs conv2d,
//! our own shader adds the bias and applies relu in place on the rented
//! buffer, and a second graph consumes the same tensor, with no copy and no
//! read-back in between. The result equals a CPU-context graph doing it all.

use crate::common;

use rand::{Rng, SeedableRng};
use wgnn::ml::*;

const BIAS_RELU: &str = r#"
@group(0) @binding(0) var<storage, read_write> t: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if i < arrayLength(&t) {
        let c = i % arrayLength(&bias); // NHWC: channel is the fastest axis
        t[i] = max(t[i] + bias[c], 0.0);
    }
}
"#;

const H: usize = 9;
const W: usize = 7;
const C: usize = 5;

fn conv_options() -> Conv2dOptions {
    let mut o = Conv2dOptions::new();
    o.padding = [1; 4];
    o.input_layout = InputLayout::Nhwc;
    o.filter_layout = Conv2dFilterLayout::Ohwi;
    o
}

/// graph 1: conv2d without bias; graph 2: y = t * scale (a 1x1 conv).
fn graphs(ctx: &Context, filter: &[f32], scale: &[f32]) -> (Graph, Graph) {
    let b = GraphBuilder::new(ctx);
    let x = b.input("x", OperandDescriptor::f32([1, H, W, 3])).unwrap();
    let f = b.constant_f32(&[C, 3, 3, 3], filter).unwrap();
    let y = b.conv2d(&x, &f, None, conv_options()).unwrap();
    let g1 = b.build(&[("t", &y)]).unwrap();

    let b = GraphBuilder::new(ctx);
    let t = b.input("t", OperandDescriptor::f32([1, H, W, C])).unwrap();
    let s = b.constant_f32(&[C, 1, 1, C], scale).unwrap();
    let mut o = Conv2dOptions::new();
    o.input_layout = InputLayout::Nhwc;
    o.filter_layout = Conv2dFilterLayout::Ohwi;
    let y = b.conv2d(&t, &s, None, o).unwrap();
    (g1, b.build(&[("y", &y)]).unwrap())
}

#[test]
fn conv_then_custom_bias_relu_on_the_rented_buffer_then_a_second_graph() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let mut rand = |n: usize| {
        (0..n)
            .map(|_| rng.random_range(-1.0f32..1.0))
            .collect::<Vec<_>>()
    };
    let (input, filter, bias, scale) = (rand(H * W * 3), rand(C * 27), rand(C), rand(C * C));

    // Reference: the whole chain on the CPU context, bias and relu in the graph.
    let cpu = Context::cpu();
    let b = GraphBuilder::new(&cpu);
    let x = b.input("x", OperandDescriptor::f32([1, H, W, 3])).unwrap();
    let f = b.constant_f32(&[C, 3, 3, 3], &filter).unwrap();
    let bb = b.constant_f32(&[C], &bias).unwrap();
    let t = b.conv2d(&x, &f, Some(&bb), conv_options()).unwrap();
    let t = b.relu(&t).unwrap();
    let s = b.constant_f32(&[C, 1, 1, C], &scale).unwrap();
    let mut o = Conv2dOptions::new();
    o.input_layout = InputLayout::Nhwc;
    o.filter_layout = Conv2dFilterLayout::Ohwi;
    let y = b.conv2d(&t, &s, None, o).unwrap();
    let reference_graph = b.build(&[("y", &y)]).unwrap();
    let xin = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [1, H, W, 3]).writable())
        .unwrap();
    let yout = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [1, H, W, C]).readable())
        .unwrap();
    cpu.write_tensor(&xin, bytemuck::cast_slice(&input))
        .unwrap();
    cpu.dispatch(&reference_graph, &[("x", &xin)], &[("y", &yout)])
        .unwrap();
    let expected = cpu.read_f32(&yout).unwrap();

    // GPU: graph 1, our shader on the rented tensor, graph 2.
    let gpu = common::own_gpu();
    let ctx = Context::gpu(&gpu);
    let (g1, g2) = graphs(&ctx, &filter, &scale);
    let x = ctx
        .create_tensor(TensorDescriptor::new(DataType::Float32, [1, H, W, 3]).writable())
        .unwrap();
    let t = ctx
        .create_tensor(TensorDescriptor::new(DataType::Float32, [1, H, W, C]).exportable_to_gpu())
        .unwrap();
    let y = ctx
        .create_tensor(TensorDescriptor::new(DataType::Float32, [1, H, W, C]).readable())
        .unwrap();
    let device = gpu.device();
    let pipeline = common::compute_pipeline(&gpu, "bias relu", BIAS_RELU);
    let bias_buffer = gpu
        .create_buffer_with_data(
            "bias",
            bytemuck::cast_slice(&bias),
            wgpu::BufferUsages::STORAGE,
        )
        .unwrap();

    ctx.write_tensor(&x, bytemuck::cast_slice(&input)).unwrap();
    ctx.dispatch(&g1, &[("x", &x)], &[("t", &t)]).unwrap();
    let before = gpu.transfers();
    {
        let rented = ctx.export_to_gpu(&t).unwrap();
        // While rented, the context refuses to touch the tensor.
        let e = ctx
            .dispatch(&g2, &[("t", &t)], &[("y", &y)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("rented to the GPU"), "{e}");
        let e = ctx.export_to_gpu(&t).err().unwrap().to_string();
        assert!(e.contains("rented to the GPU"), "{e}");

        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: rented.buffer().as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: bias_buffer.as_entire_binding(),
                },
            ],
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups((H * W * C).div_ceil(64) as u32, 1, 1);
        }
        gpu.queue().submit([encoder.finish()]);
        rented.give_back();
    }
    ctx.dispatch(&g2, &[("t", &t)], &[("y", &y)]).unwrap();
    let between = gpu.transfers().since(&before);
    assert_eq!(
        between.downloads, 0,
        "nothing may be read back between the graphs"
    );
    assert_eq!(
        between.uploads, 0,
        "nothing may be uploaded between the graphs"
    );

    let got = ctx.read_f32(&y).unwrap();
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert!(
            (g - e).abs() <= 1e-4 * e.abs().max(1.0),
            "element {i}: gpu {g} vs cpu {e}"
        );
    }
    assert!(
        expected.iter().any(|&v| v != 0.0),
        "the reference must not be trivially zero"
    );
    gpu.check().unwrap();
}

#[test]
fn renting_needs_a_gpu_context_and_the_flag() {
    let cpu = Context::cpu();
    let e = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4]).exportable_to_gpu())
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs a GPU context"), "{e}");
    let ctx = Context::gpu(&common::gpu());
    let t = ctx
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4]))
        .unwrap();
    let e = ctx.export_to_gpu(&t).err().unwrap().to_string();
    assert!(e.contains("not created with exportable_to_gpu"), "{e}");
}
