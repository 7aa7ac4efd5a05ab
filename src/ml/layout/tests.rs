//! The pass on small graphs of the shapes YOLO and ResNet exports have,
//! with odd extents (channels not a multiple of 4, odd heights and widths,
//! two images): the transposes it leaves, and the results of the converted
//! graph against the graph as written, unfused, on the CPU context and on
//! the GPU (lavapipe in CI).

use super::{to_nhwc, Policy};
use crate::error::Result;
use crate::ml::graph::Graph;
use crate::ml::graph_ir::GraphIr;
use crate::ml::ops::*;
use crate::ml::{Context, DataType, GraphBuilder, Operand, OperandDescriptor, TensorDescriptor};

type Outputs = Result<Vec<Operand>>;

/// The graph `f` writes, as written (no pass, no fusion).
fn written(f: impl FnOnce(&GraphBuilder) -> Outputs) -> GraphIr {
    let ctx = Context::cpu();
    let b = GraphBuilder::new(&ctx);
    let outs = f(&b).unwrap();
    let mut ir = b.ir().clone();
    for (i, o) in outs.iter().enumerate() {
        ir.outputs.push((format!("y{i}"), o.id));
    }
    ir
}

fn count(ir: &GraphIr, name: &str) -> usize {
    ir.nodes.iter().filter(|n| n.op.name() == name).count()
}

fn nhwc_convs(ir: &GraphIr) -> usize {
    let nhwc = |n: &&crate::ml::graph_ir::Node| matches!(&n.op, Op::Conv2d(o) if o.input_layout == InputLayout::Nhwc);
    ir.nodes.iter().filter(nhwc).count()
}

/// Small numbers that vary with the index, negative too.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919 + seed * 104_729) % 251) as f32 / 125.0 - 1.0)
        .collect()
}

fn constant(b: &GraphBuilder, shape: &[usize], seed: usize) -> Result<Operand> {
    let n = shape.iter().product();
    b.constant_f32(shape, &values(n, seed))
}

fn run(ctx: &Context, graph: &Graph, ir: &GraphIr) -> Vec<Vec<f32>> {
    let mut tensors = Vec::new();
    for (k, (name, x)) in ir.inputs.iter().enumerate() {
        let d = ir.desc(*x);
        let t = ctx
            .create_tensor(TensorDescriptor::new(d.data_type, d.shape.clone()).writable())
            .unwrap();
        let v = values(d.element_count(), k + 1);
        ctx.write_tensor(&t, bytemuck::cast_slice(&v)).unwrap();
        tensors.push((name.as_str(), t));
    }
    let mut outs = Vec::new();
    for (name, y) in &ir.outputs {
        let d = ir.desc(*y);
        let t = ctx
            .create_tensor(TensorDescriptor::new(d.data_type, d.shape.clone()).readable())
            .unwrap();
        outs.push((name.as_str(), t));
    }
    let ins: Vec<_> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    let outputs: Vec<_> = outs.iter().map(|(n, t)| (*n, t)).collect();
    ctx.dispatch(graph, &ins, &outputs).unwrap();
    outs.iter().map(|(_, t)| ctx.read_f32(t).unwrap()).collect()
}

/// The graph converted by the pass (every region that pays on the CPU
/// converted), and the graph built for `ctx` (its context's policy, then
/// fusion), compute what it computes as written, unfused, on `ctx`.
fn same_results(ctx: &Context, ir: &GraphIr, what: &str) {
    let reference = run(ctx, &Graph::build_unfused(ctx, ir.clone()).unwrap(), ir);
    let converted = to_nhwc(ir.clone(), Policy::FewerTransposes);
    let graphs = [
        ("converted", Graph::build_unfused(ctx, converted).unwrap()),
        ("built", Graph::build(ctx, ir.clone()).unwrap()),
    ];
    for (how, graph) in graphs {
        let got = run(ctx, &graph, ir);
        for (k, (want, got)) in reference.iter().zip(&got).enumerate() {
            assert_eq!(want.len(), got.len());
            for (i, (a, b)) in want.iter().zip(got).enumerate() {
                let tolerance = 1e-4 * a.abs().max(1.0);
                assert!(
                    (a - b).abs() <= tolerance,
                    "{what} ({how}): output {k}[{i}] {b}, want {a}"
                );
            }
        }
    }
}

/// On the CPU context and on the GPU.
fn same_results_everywhere(ir: &GraphIr, what: &str) {
    same_results(&Context::cpu(), ir, what);
    let gpu = crate::gpu::Gpu::new().unwrap();
    same_results(&Context::gpu(&gpu), ir, what);
}

fn conv(b: &GraphBuilder, x: &Operand, oc: usize, k: usize, seed: usize) -> Result<Operand> {
    let ic = x.descriptor().shape[1];
    let f = constant(b, &[oc, ic, k, k], seed)?;
    let bias = constant(b, &[oc], seed + 1)?;
    let p = k / 2;
    let o = Conv2dOptions {
        padding: [p; 4],
        ..Conv2dOptions::new()
    };
    b.conv2d(x, &f, Some(&bias), o)
}

/// SiLU as PyTorch exports it: sigmoid, then mul.
fn silu(b: &GraphBuilder, x: &Operand) -> Result<Operand> {
    b.mul(x, &b.sigmoid(x)?)
}

/// Conv -> SiLU -> split on channels -> conv of a half -> concat on
/// channels -> max pool -> nearest 2x resize -> 1x1 conv -> add of a
/// [1, C, 1, 1] constant.
fn yolo_block(b: &GraphBuilder) -> Outputs {
    let x = b.input("x", OperandDescriptor::f32([2, 6, 9, 7]))?;
    let y = silu(b, &conv(b, &x, 10, 3, 1)?)?;
    let halves = b.split(&y, 2, 1)?;
    let z = silu(b, &conv(b, &halves[1], 5, 3, 3)?)?;
    let cat = b.concat(&[&halves[0], &halves[1], &z], 1)?;
    let pooled = b.max_pool2d(
        &cat,
        Pool2dOptions {
            window_dimensions: Some([3, 3]),
            padding: [1; 4],
            ..Pool2dOptions::new()
        },
    )?;
    let up = b.resample2d(
        &pooled,
        Resample2dOptions {
            scales: [2.0, 2.0],
            coordinate_transform: CoordinateTransform::Asymmetric,
            nearest_rounding: NearestRounding::Floor,
            ..Resample2dOptions::default()
        },
    )?;
    let head = conv(b, &up, 7, 1, 5)?;
    Ok(vec![b.add(&head, &constant(b, &[1, 7, 1, 1], 7)?)?])
}

/// Conv (stride 2) -> batch normalization -> relu -> max pool -> two convs
/// with a residual add -> relu -> global average pool -> flatten -> gemm.
fn resnet_block(b: &GraphBuilder) -> Outputs {
    let x = b.input("x", OperandDescriptor::f32([2, 3, 11, 9]))?;
    let stem = b.conv2d(
        &x,
        &constant(b, &[13, 3, 3, 3], 1)?,
        None,
        Conv2dOptions {
            padding: [1; 4],
            strides: [2, 2],
            ..Conv2dOptions::new()
        },
    )?;
    let mean = constant(b, &[13], 2)?;
    let variance = b.constant_f32(&[13], &[0.5; 13])?;
    let scale = constant(b, &[13], 3)?;
    let bn = b.batch_normalization(&stem, &mean, &variance, Some(&scale), None, 1, 1e-5)?;
    let pooled = b.max_pool2d(
        &b.relu(&bn)?,
        Pool2dOptions {
            window_dimensions: Some([3, 3]),
            padding: [1; 4],
            strides: [2, 2],
            ..Pool2dOptions::new()
        },
    )?;
    let inner = b.relu(&conv(b, &pooled, 13, 3, 4)?)?;
    let y = b.relu(&b.add(&conv(b, &inner, 13, 3, 6)?, &pooled)?)?;
    let gap = b.average_pool2d(&y, Pool2dOptions::new())?;
    let flat = b.reshape(&gap, &[2, 13])?;
    let w = constant(b, &[13, 5], 8)?;
    Ok(vec![b.gemm(&flat, &w, None, GemmOptions::default())?])
}

#[test]
fn a_yolo_block_runs_in_nhwc_with_a_transpose_in_and_one_out() {
    let ir = written(yolo_block);
    let converted = to_nhwc(ir.clone(), Policy::FewerTransposes);
    assert_eq!(nhwc_convs(&converted), 3);
    assert_eq!(count(&converted, "transpose"), 2);
    same_results_everywhere(&ir, "yolo block");
}

#[test]
fn a_resnet_block_keeps_one_transpose_and_flattens_by_reshape() {
    let ir = written(resnet_block);
    let converted = to_nhwc(ir.clone(), Policy::FewerTransposes);
    assert_eq!(nhwc_convs(&converted), 3);
    assert_eq!(count(&converted, "transpose"), 1);
    // The pooled [2, 13, 1, 1] is the same data in NHWC: a reshape takes it
    // back to NCHW for the flatten.
    let pool = converted
        .nodes
        .iter()
        .position(|n| n.op.name() == "averagePool2d");
    assert_eq!(converted.nodes[pool.unwrap() + 1].op, Op::Reshape);
    same_results_everywhere(&ir, "resnet block");
}

#[test]
fn a_graph_ending_in_a_reshape_transposes_before_it() {
    let ir = written(|b| {
        let x = b.input("x", OperandDescriptor::f32([2, 5, 7, 3]))?;
        let y = b.relu(&conv(b, &x, 6, 3, 1)?)?;
        let y = b.relu(&conv(b, &y, 6, 3, 2)?)?;
        let y = conv(b, &y, 6, 1, 3)?;
        Ok(vec![b.reshape(&y, &[2, 6, 21])?])
    });
    let converted = to_nhwc(ir.clone(), Policy::FewerTransposes);
    assert_eq!(nhwc_convs(&converted), 3);
    assert_eq!(count(&converted, "transpose"), 2);
    let last = converted.nodes.last().unwrap();
    assert_eq!(last.op, Op::Reshape);
    same_results_everywhere(&ir, "ending in reshape");
}

#[test]
fn a_concat_of_two_convs_moves_to_the_channel_axis_of_nhwc() {
    let ir = written(|b| {
        let x = b.input("x", OperandDescriptor::f32([2, 3, 5, 7]))?;
        let a = conv(b, &x, 5, 3, 1)?;
        let c = conv(b, &x, 2, 1, 2)?;
        let cat = b.concat(&[&a, &c], 1)?;
        Ok(vec![b.softmax(&conv(b, &cat, 3, 3, 3)?, 1)?])
    });
    let converted = to_nhwc(ir.clone(), Policy::FewerTransposes);
    assert_eq!(nhwc_convs(&converted), 3);
    assert_eq!(count(&converted, "transpose"), 2);
    let axes = converted.nodes.iter().filter_map(|n| match n.op {
        Op::Concat { axis } | Op::Softmax { axis } => Some(axis),
        _ => None,
    });
    assert_eq!(axes.collect::<Vec<_>>(), [3, 3]);
    same_results_everywhere(&ir, "concat");
}

#[test]
fn a_region_that_needs_as_many_transposes_as_it_has_convs_is_left_alone() {
    // Three inputs and one output around two convs: four transposes; one
    // conv between an input and an output: two.
    let three_inputs = written(|b| {
        let d = OperandDescriptor::f32([1, 3, 5, 5]);
        let [x, y, z] = ["x", "y", "z"].map(|n| b.input(n, d.clone()).unwrap());
        let cat = b.concat(&[&x, &y, &z], 1)?;
        Ok(vec![conv(b, &conv(b, &cat, 4, 3, 1)?, 4, 3, 2)?])
    });
    let lone_conv = written(|b| {
        let x = b.input("x", OperandDescriptor::f32([1, 3, 5, 5]))?;
        Ok(vec![b.relu(&conv(b, &x, 4, 3, 1)?)?])
    });
    for ir in [three_inputs, lone_conv] {
        let converted = to_nhwc(ir.clone(), Policy::FewerTransposes);
        assert_eq!(nhwc_convs(&converted), 0);
        assert_eq!(converted.nodes.len(), ir.nodes.len());
    }
}

#[test]
fn a_graph_without_conv_is_left_alone() {
    let ir = written(|b| {
        let x = b.input("x", OperandDescriptor::f32([2, 3, 5, 5]))?;
        let pooled = b.max_pool2d(&x, Pool2dOptions::new())?;
        Ok(vec![
            b.add(&b.relu(&pooled)?, &constant(b, &[1, 3, 1, 1], 1)?)?
        ])
    });
    let converted = to_nhwc(ir.clone(), Policy::FewerTransposes);
    let ops = |ir: &GraphIr| ir.nodes.iter().map(|n| n.op.clone()).collect::<Vec<_>>();
    assert_eq!(ops(&converted), ops(&ir));
    assert_eq!(converted.operands.len(), ir.operands.len());
}

/// A chain of three float16 3x3 convolutions on `size` x `size` maps of
/// 64 channels (constant filters), between an input and an output: two
/// transposes.
fn f16_chain(size: usize, images: usize) -> GraphIr {
    written(|b| {
        let half = |shape: &[usize], seed| {
            let n: usize = shape.iter().product();
            let v: Vec<half::f16> = values(n, seed)
                .into_iter()
                .map(half::f16::from_f32)
                .collect();
            b.constant(
                OperandDescriptor::new(DataType::Float16, shape.to_vec()),
                bytemuck::cast_slice(&v),
            )
        };
        let x = b.input(
            "x",
            OperandDescriptor::new(DataType::Float16, [images, 64, size, size]),
        )?;
        let mut y = x;
        for seed in 0..3 {
            let o = Conv2dOptions {
                padding: [1; 4],
                ..Conv2dOptions::new()
            };
            y = b.conv2d(&y, &half(&[64, 64, 3, 3], seed)?, None, o)?;
        }
        Ok(vec![y])
    })
}

#[test]
fn on_tensor_cores_a_region_converts_where_they_take_most_of_its_convolutions() {
    // 66 rows of two 64-pixel runs pass TC_MIN_WORKGROUPS (64): three
    // tensor-core convolutions against two transposes.
    let large = to_nhwc(f16_chain(66, 1), Policy::TensorCores);
    assert_eq!(nhwc_convs(&large), 3);
    assert_eq!(count(&large, "transpose"), 2);
    // 16 rows an image leave them to the other kernels at batch 1 ...
    let small = f16_chain(16, 1);
    assert_eq!(nhwc_convs(&to_nhwc(small.clone(), Policy::TensorCores)), 0);
    // ... which the CPU's rule converts all the same ...
    assert_eq!(nhwc_convs(&to_nhwc(small, Policy::FewerTransposes)), 3);
    // ... and a batch of 9 such images fills them (9 x 16 = 144 rows).
    assert_eq!(
        nhwc_convs(&to_nhwc(f16_chain(16, 9), Policy::TensorCores)),
        3
    );
    // The same convolutions in float32, and any region under `Never`, stay.
    assert_eq!(nhwc_convs(&to_nhwc(f16_chain(66, 1), Policy::Never)), 0);
    let f32_chain = written(|b| {
        let x = b.input("x", OperandDescriptor::f32([1, 64, 66, 66]))?;
        let y = conv(b, &conv(b, &conv(b, &x, 64, 3, 1)?, 64, 3, 2)?, 64, 3, 3)?;
        Ok(vec![y])
    });
    assert_eq!(nhwc_convs(&to_nhwc(f32_chain, Policy::TensorCores)), 0);
}
