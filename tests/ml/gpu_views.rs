//! What the GPU plan runs as views instead of copies: a concat's operands
//! written in place by their transposes, slices and element-wise ops
//! (`ml/gpu/concat_writes.rs`), and slices read through by the binary op
//! reading them (`ml/gpu/slice_reads.rs`). YOLOv8's head in small (NHWC ->
//! NCHW transposes reshaped into one concat; the box decoding's slices,
//! element-wise ops and concats) and a strided, broadcast slice, on odd
//! shapes in both float types, the GPU against the CPU context, with the
//! copies the GPU still runs counted from its profile.

use wgnn::ml::*;

use crate::common::ops::{gpu_kernels, random, rng, In, Pair};

/// Outputs: the three scales' transposed, reshaped maps and a plain input
/// concatenated along the anchors; the decoded boxes and class scores; and
/// a transpose that is also a graph output, which its concat must copy.
fn head(b: &GraphBuilder, x: &[Operand]) -> wgnn::Result<Vec<Operand>> {
    let dt = x[0].descriptor().data_type;
    let flat = |t: &Operand| {
        let s = &t.descriptor().shape;
        b.reshape(t, &[s[0], s[1], s[2] * s[3]])
    };
    let t0 = b.transpose(&x[0], Some(&[0, 3, 1, 2]))?;
    let t1 = b.transpose(&x[1], Some(&[0, 3, 1, 2]))?;
    let maps = b.concat(&[&flat(&t0)?, &x[2], &flat(&t1)?], 2)?;
    // Box decoding as Ultralytics exports it: distances d to the anchors a.
    let (d, a, stride) = (&x[3], &x[4], &x[5]);
    let lt = b.slice(d, &[0, 0, 0], &[1, 2, 7], None)?;
    let rb = b.slice(d, &[0, 2, 0], &[1, 2, 7], None)?;
    let p = b.sub(a, &lt)?;
    let q = b.add(a, &rb)?;
    let two = b.constant(
        OperandDescriptor::new(dt, [1]),
        &crate::common::ops::float_bytes(dt, &[2.0]),
    )?;
    let centre = b.div(&b.add(&p, &q)?, &two)?;
    let boxes = b.concat(&[&centre, &b.sub(&q, &p)?], 1)?;
    let scores = b.sigmoid(&x[6])?;
    let decoded = b.concat(&[&b.mul(&boxes, stride)?, &scores], 1)?;
    // Read twice: stays whole.
    let t2 = b.transpose(&x[2], Some(&[0, 2, 1]))?;
    let kept = b.concat(&[&t2, &x[7]], 1)?;
    // A strided slice broadcast against a vector, read through; one read
    // twice, copied.
    let strided = b.slice(&x[8], &[0, 1, 0], &[2, 2, 3], Some(&[1, 2, 2]))?;
    let scaled = b.mul(&x[9], &strided)?;
    let twice = b.slice(&x[8], &[1, 0, 1], &[1, 5, 5], None)?;
    let squared = b.mul(&twice, &twice)?;
    Ok(vec![maps, decoded, kept, t2, scaled, squared])
}

fn inputs(dt: DataType, seed: u64) -> Vec<In> {
    let mut r = rng(seed);
    [
        vec![1, 3, 5, 6],
        vec![1, 2, 3, 6],
        vec![1, 6, 4],
        vec![1, 4, 7],
        vec![1, 2, 7],
        vec![1, 7],
        vec![1, 3, 7],
        vec![1, 3, 6],
        vec![2, 5, 6],
        vec![3],
    ]
    .iter()
    .map(|s| random(&mut r, dt, s, -2.0, 2.0))
    .collect()
}

#[test]
fn concat_operands_are_written_in_place_and_slices_read_through() {
    let pair = Pair::new();
    for (k, dt) in [DataType::Float32, DataType::Float16]
        .into_iter()
        .enumerate()
    {
        let ins = inputs(dt, 900 + k as u64);
        let outs = pair.check(&format!("yolo head ({dt})"), &|b, x| head(b, x), &ins);
        assert_eq!(outs.len(), 6);
        let ops = gpu_kernels(&pair.gpu, &|b, x| head(b, x), &ins);
        let count = |op: &str| ops.iter().filter(|o| o.as_str() == op).count();
        // The plain input of the first concat and both operands of the
        // third (one kernel) are copied; every other operand was stored by
        // its writer.
        assert_eq!(count("concat"), 2, "{dt}: {ops:?}");
        assert_eq!(count("transpose"), 3, "{dt}: {ops:?}");
        // Only the slice read twice runs.
        assert_eq!(count("slice"), 1, "{dt}: {ops:?}");
        // The box decoding's sub, add, add, div, sub and its strides' mul
        // (one per part of its concat) are one kernel (`pointwise.rs`).
        assert_eq!(count("pointwise"), 1, "{dt}: {ops:?}");
        assert_eq!(ops.len(), 10, "{dt}: {ops:?}");
    }
}
