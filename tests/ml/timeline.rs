//! The MLTensor explainer's timeline semantics on both contexts: chained
//! inference with no host wait, one input reused by several graphs, and the
//! errors for misuse.

use crate::common;

use wgnn::ml::{Context, DataType, GraphBuilder, OperandDescriptor, TensorDescriptor};

fn contexts() -> Vec<(&'static str, Context)> {
    vec![
        ("gpu", Context::gpu(&common::gpu())),
        ("cpu", Context::cpu()),
    ]
}

fn fibonacci(ctx: &Context, n: usize) -> i32 {
    let b = GraphBuilder::new(ctx);
    let desc = OperandDescriptor::new(DataType::Int32, [1]);
    let f1 = b.input("F_n-1", desc.clone()).unwrap();
    let f2 = b.input("F_n-2", desc).unwrap();
    let sum = b.add(&f1, &f2).unwrap();
    let graph = b.build(&[("F_n", &sum)]).unwrap();

    let mut descs = vec![
        TensorDescriptor::new(DataType::Int32, [1]).writable(),
        TensorDescriptor::new(DataType::Int32, [1]).writable(),
        TensorDescriptor::new(DataType::Int32, [1]),
    ];
    descs[n % 3].readable = true;
    let t: Vec<_> = descs
        .into_iter()
        .map(|d| ctx.create_tensor(d).unwrap())
        .collect();
    ctx.write_tensor(&t[0], bytemuck::bytes_of(&0i32)).unwrap();
    ctx.write_tensor(&t[1], bytemuck::bytes_of(&1i32)).unwrap();
    for i in 2..=n {
        ctx.dispatch(
            &graph,
            &[("F_n-1", &t[(i - 1) % 3]), ("F_n-2", &t[(i - 2) % 3])],
            &[("F_n", &t[i % 3])],
        )
        .unwrap();
    }
    let bytes = pollster::block_on(ctx.read_tensor(&t[n % 3]).unwrap()).unwrap();
    bytemuck::pod_read_unaligned(&bytes)
}

#[test]
fn fibonacci_by_chained_inference() {
    for (name, ctx) in contexts() {
        let before = ctx.gpu_handle().map(|g| g.transfers());
        assert_eq!(fibonacci(&ctx, 30), 832_040, "{name}");
        assert_eq!(fibonacci(&ctx, 2), 1, "{name}");
        assert_eq!(fibonacci(&ctx, 3), 2, "{name}");
        if let (Some(gpu), Some(_)) = (ctx.gpu_handle(), before) {
            gpu.check().unwrap();
        }
    }
}

#[test]
fn one_input_reused_by_three_graphs() {
    for (name, ctx) in contexts() {
        let x_desc = OperandDescriptor::f32([2, 3]);
        let graphs: Vec<_> = [2.0f32, -1.0, 0.5]
            .iter()
            .map(|&k| {
                let b = GraphBuilder::new(&ctx);
                let x = b.input("input", x_desc.clone()).unwrap();
                let c = b.constant_f32(&[1], &[k]).unwrap();
                let y = b.mul(&x, &c).unwrap();
                let y = b.relu(&y).unwrap();
                b.build(&[("output", &y)]).unwrap()
            })
            .collect();
        let input = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [2, 3]).writable())
            .unwrap();
        let data = [1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0];
        ctx.write_tensor(&input, bytemuck::cast_slice(&data))
            .unwrap();
        let outs: Vec<_> = graphs
            .iter()
            .map(|g| {
                let out = ctx
                    .create_tensor(TensorDescriptor::new(DataType::Float32, [2, 3]).readable())
                    .unwrap();
                ctx.dispatch(g, &[("input", &input)], &[("output", &out)])
                    .unwrap();
                out
            })
            .collect();
        let handles: Vec<_> = outs.iter().map(|t| ctx.read_tensor(t).unwrap()).collect();
        let got: Vec<Vec<f32>> = handles
            .into_iter()
            .map(|h| bytemuck::pod_collect_to_vec(&h.wait().unwrap()))
            .collect();
        assert_eq!(got[0], [2.0, 0.0, 6.0, 0.0, 10.0, 0.0], "{name}");
        assert_eq!(got[1], [0.0, 2.0, 0.0, 4.0, 0.0, 6.0], "{name}");
        assert_eq!(got[2], [0.5, 0.0, 1.5, 0.0, 2.5, 0.0], "{name}");
        // mul + relu fused into one kernel.
        assert_eq!(graphs[0].node_count(), 1, "{name}");
    }
}

#[test]
fn misuse_is_a_clear_error() {
    for (name, ctx) in contexts() {
        let b = GraphBuilder::new(&ctx);
        let x = b.input("x", OperandDescriptor::f32([4])).unwrap();
        let y = b.relu(&x).unwrap();
        let g = b.build(&[("y", &y)]).unwrap();
        let t_in = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [4]).writable())
            .unwrap();
        let t_out = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [4]))
            .unwrap();
        let wrong = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [5]))
            .unwrap();

        let e = ctx.write_tensor(&t_out, &[0; 16]).unwrap_err().to_string();
        assert!(e.contains("was not created writable"), "{name}: {e}");
        let e = ctx.write_tensor(&t_in, &[0; 12]).unwrap_err().to_string();
        assert!(e.contains("holds 16 bytes, got 12"), "{name}: {e}");
        let e = ctx.read_tensor(&t_out).err().unwrap().to_string();
        assert!(e.contains("was not created readable"), "{name}: {e}");
        let e = ctx
            .dispatch(&g, &[("nope", &t_in)], &[("y", &t_out)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown input 'nope'"), "{name}: {e}");
        let e = ctx
            .dispatch(&g, &[("x", &wrong)], &[("y", &t_out)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("input 'x' is float32 [4]"), "{name}: {e}");
        let e = ctx
            .dispatch(&g, &[("x", &t_in)], &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no tensor given for output 'y'"), "{name}: {e}");

        t_in.destroy();
        let e = ctx
            .dispatch(&g, &[("x", &t_in)], &[("y", &t_out)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("has been destroyed"), "{name}: {e}");

        let other = Context::cpu();
        let foreign = other
            .create_tensor(TensorDescriptor::new(DataType::Float32, [4]))
            .unwrap();
        let e = ctx
            .dispatch(&g, &[("x", &foreign)], &[("y", &t_out)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("belongs to another context"), "{name}: {e}");

        let b2 = GraphBuilder::new(&other);
        let x2 = b2.input("x", OperandDescriptor::f32([4])).unwrap();
        let g2 = b2.build(&[("y", &b2.relu(&x2).unwrap())]).unwrap();
        let t2 = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [4]))
            .unwrap();
        let e = ctx
            .dispatch(&g2, &[("x", &t2)], &[("y", &t_out)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("built for another context"), "{name}: {e}");

        g.destroy();
        let t3 = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [4]))
            .unwrap();
        let e = ctx
            .dispatch(&g, &[("x", &t3)], &[("y", &t_out)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("graph has been destroyed"), "{name}: {e}");

        ctx.destroy();
        let e = ctx
            .create_tensor(TensorDescriptor::new(DataType::Float32, [4]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("context has been destroyed"), "{name}: {e}");
    }
}

#[test]
fn shape_mismatches_are_reported_at_the_op() {
    let ctx = Context::cpu();
    let b = GraphBuilder::new(&ctx);
    let a = b.input("a", OperandDescriptor::f32([2, 3])).unwrap();
    let c = b.input("c", OperandDescriptor::f32([4, 3])).unwrap();
    let e = b.add(&a, &c).unwrap_err().to_string();
    assert!(
        e.contains("add: shapes [2, 3] and [4, 3] do not broadcast"),
        "{e}"
    );
    let e = b.matmul(&a, &c).unwrap_err().to_string();
    assert!(e.contains("matmul: inner dimensions differ"), "{e}");
    let e = b.reshape(&a, &[7]).unwrap_err().to_string();
    assert!(e.contains("cannot reshape"), "{e}");
}

/// `Graph::profile` on a CPU context: queued behind an earlier dispatch like
/// any other work (it sees that dispatch's result), times each node by name,
/// and computes the same values as a dispatch.
#[test]
fn cpu_profile_runs_in_timeline_order_and_times_each_node() {
    let ctx = Context::cpu();
    let b = GraphBuilder::new(&ctx);
    let desc = OperandDescriptor::new(DataType::Float32, [4]);
    let x = b.input("x", desc.clone()).unwrap();
    let doubled = b.add(&x, &x).unwrap();
    let y = b.mul(&doubled, &x).unwrap();
    let graph = b.build(&[("y", &y)]).unwrap();
    let tensor = |d: TensorDescriptor| ctx.create_tensor(d.readable().writable()).unwrap();
    let (t0, t1, t2) = (
        tensor(TensorDescriptor::new(DataType::Float32, [4])),
        tensor(TensorDescriptor::new(DataType::Float32, [4])),
        tensor(TensorDescriptor::new(DataType::Float32, [4])),
    );
    ctx.write_tensor(&t0, bytemuck::cast_slice(&[1.0f32, 2.0, -3.0, 0.5]))
        .unwrap();
    // t1 = 2 t0², then the profiled run reads t1: t2 = 2 t1².
    ctx.dispatch(&graph, &[("x", &t0)], &[("y", &t1)]).unwrap();
    let profile = graph.profile(&ctx, &[("x", &t1)], &[("y", &t2)]).unwrap();
    let labels: Vec<&str> = profile.kernels.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["add", "mul"]);
    let summed: f64 = profile.kernels.iter().map(|(_, ms)| ms).sum();
    assert!(profile.kernels.iter().all(|(_, ms)| *ms >= 0.0));
    assert!(profile.total_ms >= summed, "{profile:?}");
    let got: Vec<f32> = bytemuck::pod_collect_to_vec(&ctx.read_tensor_blocking(&t2).unwrap());
    assert_eq!(got, [8.0, 128.0, 648.0, 0.5]);
}

/// `Graph::gpu_time`: one dispatch encoded as untimed ones are, between two
/// timestamps. It runs in timeline order and computes what a dispatch does;
/// a CPU context answers with an error naming the cause.
#[test]
fn gpu_time_times_the_whole_dispatch_in_timeline_order() {
    let ctx = Context::gpu(&common::gpu());
    let b = GraphBuilder::new(&ctx);
    let x = b
        .input("x", OperandDescriptor::new(DataType::Float32, [4]))
        .unwrap();
    let doubled = b.add(&x, &x).unwrap();
    let y = b.mul(&doubled, &x).unwrap();
    let graph = b.build(&[("y", &y)]).unwrap();
    let tensor = || {
        ctx.create_tensor(
            TensorDescriptor::new(DataType::Float32, [4])
                .readable()
                .writable(),
        )
        .unwrap()
    };
    let (t0, t1, t2) = (tensor(), tensor(), tensor());
    ctx.write_tensor(&t0, bytemuck::cast_slice(&[1.0f32, 2.0, -3.0, 0.5]))
        .unwrap();
    ctx.dispatch(&graph, &[("x", &t0)], &[("y", &t1)]).unwrap();
    let ms = graph.gpu_time(&ctx, &[("x", &t1)], &[("y", &t2)]).unwrap();
    assert!(ms.is_finite() && ms > 0.0, "{ms}");
    let got: Vec<f32> = bytemuck::pod_collect_to_vec(&ctx.read_tensor_blocking(&t2).unwrap());
    assert_eq!(got, [8.0, 128.0, 648.0, 0.5]);

    let cpu = Context::cpu();
    let b = GraphBuilder::new(&cpu);
    let x = b
        .input("x", OperandDescriptor::new(DataType::Float32, [4]))
        .unwrap();
    let y = b.relu(&x).unwrap();
    let graph = b.build(&[("y", &y)]).unwrap();
    let t = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4]).writable())
        .unwrap();
    let out = cpu
        .create_tensor(TensorDescriptor::new(DataType::Float32, [4]))
        .unwrap();
    let e = graph
        .gpu_time(&cpu, &[("x", &t)], &[("y", &out)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("CPU context"), "{e}");
}
