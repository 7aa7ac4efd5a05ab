//! Element-wise nodes of one shape run as one generated GPU kernel
//! (`ml/gpu/pointwise.rs`): each graph is checked GPU against CPU (which
//! runs the nodes one by one) on odd shapes in both float types, with the
//! GPU's kernel count, so that the fusion cannot silently stop applying.

use wgnn::ml::*;

use crate::common::ops::{gpu_kernels, random, rng, Build, In, Pair};

const FLOAT_TYPES: [DataType; 2] = [DataType::Float32, DataType::Float16];

/// GPU against CPU, and the GPU's kernels.
fn check(what: &str, build: &Build<'_>, inputs: &[In], want: &[&str]) {
    let pair = Pair::new();
    for (k, out) in pair.check(what, build, inputs).iter().enumerate() {
        assert!(
            out.values.iter().any(|&v| v != 0.0),
            "{what} output {k}: a degenerate reference"
        );
    }
    assert_eq!(
        gpu_kernels(&pair.gpu, build, inputs),
        want,
        "{what}: GPU kernels"
    );
}

/// YOLOv8's head after its convs, in small: class logits of two levels
/// (NHWC [1, 3, 4, 3] and [1, 2, 3, 3], scaled by a constant as a conv's
/// epilogue would be) transposed to NCHW, flattened and concatenated over
/// the levels (18 anchors), then the sigmoid; box distances [1, 4, 18]
/// decoded as `dist2bbox` does against anchors [2, 18], times strides
/// [1, 18]; boxes and classes concatenated as [1, 7, 18].
fn yolo_head(b: &GraphBuilder, x: &[Operand]) -> wgnn::Result<Vec<Operand>> {
    let dt = x[0].data_type();
    let scalar = |v: f32| {
        b.constant(
            OperandDescriptor::new(dt, [1]),
            &crate::common::ops::float_bytes(dt, &[v]),
        )
    };
    let mut levels = Vec::new();
    for level in &x[..2] {
        let [_, h, w, c] = level.shape()[..] else {
            unreachable!()
        };
        let nchw = b.transpose(&b.mul(level, &scalar(0.5)?)?, Some(&[0, 3, 1, 2]))?;
        levels.push(b.reshape(&nchw, &[1, c, h * w])?);
    }
    let cls = b.sigmoid(&b.concat(&levels.iter().collect::<Vec<_>>(), 2)?)?;
    let (d, anchors, strides) = (&x[2], &x[3], &x[4]);
    let lt = b.slice(d, &[0, 0, 0], &[1, 2, 18], None)?;
    let rb = b.slice(d, &[0, 2, 0], &[1, 2, 18], None)?;
    let x1y1 = b.sub(anchors, &lt)?;
    let x2y2 = b.add(anchors, &rb)?;
    let c_xy = b.div(&b.add(&x1y1, &x2y2)?, &scalar(2.0)?)?;
    let wh = b.sub(&x2y2, &x1y1)?;
    let dbox = b.mul(&b.concat(&[&c_xy, &wh], 1)?, strides)?;
    Ok(vec![b.concat(&[&dbox, &cls], 1)?])
}

#[test]
fn a_yolo_head_runs_its_element_wise_tail_as_one_kernel() {
    for (k, dt) in FLOAT_TYPES.into_iter().enumerate() {
        let mut r = rng(900 + k as u64);
        let inputs = [
            random(&mut r, dt, &[1, 3, 4, 3], -8.0, 8.0),
            random(&mut r, dt, &[1, 2, 3, 3], -8.0, 8.0),
            random(&mut r, dt, &[1, 4, 18], 0.0, 4.0),
            random(&mut r, dt, &[2, 18], 0.0, 20.0),
            random(&mut r, dt, &[1, 18], 8.0, 32.0),
        ];
        // The sigmoid runs in the class logits' muls, whose transposes
        // store into the output through the levels' concat; the slices are
        // read through, and sub, add, add, div, sub and the strides' mul
        // (one per part of its concat) are one kernel storing its rows of
        // the output. No concat runs.
        let want = ["mul", "transpose", "mul", "transpose", "pointwise"];
        check(&format!("YOLO head ({dt})"), &yolo_head, &inputs, &want);
    }
}

/// Two chains meeting in one node, with broadcasting, a residual and
/// activations; one member also a graph output and one read by a later
/// reduction: relu(x * b + c + d - sigmoid(x)) over [3, 5, 7], b [5, 1],
/// c [7], d [3, 5, 7] (the add of d a residual), then tanh of that plus x.
fn chains(g: &GraphBuilder, x: &[Operand]) -> wgnn::Result<Vec<Operand>> {
    let (v, b, c, d) = (&x[0], &x[1], &x[2], &x[3]);
    let left = g.add(&g.add(&g.mul(v, b)?, c)?, d)?;
    let right = g.sigmoid(v)?;
    let y = g.relu(&g.sub(&left, &right)?)?;
    let z = g.tanh(&g.add(&y, v)?)?;
    let sum = g.reduce_sum(&left, Some(&[2]), false)?;
    Ok(vec![z, right, sum])
}

#[test]
fn chains_of_one_shape_run_as_one_kernel() {
    for (k, dt) in FLOAT_TYPES.into_iter().enumerate() {
        let mut r = rng(910 + k as u64);
        let inputs = [
            random(&mut r, dt, &[3, 5, 7], -2.0, 2.0),
            random(&mut r, dt, &[5, 1], -2.0, 2.0),
            random(&mut r, dt, &[7], -2.0, 2.0),
            random(&mut r, dt, &[3, 5, 7], -2.0, 2.0),
        ];
        // mul, add + residual d, sigmoid, sub + relu, add + tanh: one
        // kernel storing z, sigmoid(x) and the sum's operand.
        let want = ["pointwise", "reduceSum"];
        check(&format!("chains ({dt})"), &chains, &inputs, &want);
    }
}

/// A member read, before the group's last member, by a node outside it:
/// the group stops there. exp(x * x - x) feeds a reduction whose result the
/// second chain reads, so the chain after the reduction is a group of its
/// own.
fn read_between(g: &GraphBuilder, x: &[Operand]) -> wgnn::Result<Vec<Operand>> {
    let v = &x[0];
    let e = g.exp(&g.sub(&g.mul(v, v)?, v)?)?;
    let s = g.reduce_sum(&e, Some(&[1]), true)?;
    let y = g.mul(&g.div(&e, &s)?, v)?;
    Ok(vec![y])
}

#[test]
fn a_member_read_in_between_ends_its_group() {
    for (k, dt) in FLOAT_TYPES.into_iter().enumerate() {
        let mut r = rng(920 + k as u64);
        let inputs = [random(&mut r, dt, &[3, 9], -2.0, 2.0)];
        let want = ["pointwise", "reduceSum", "pointwise"];
        check(
            &format!("read between ({dt})"),
            &read_between,
            &inputs,
            &want,
        );
    }
}
