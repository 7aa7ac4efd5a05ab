//! A 1x1 conv2d of an upsampled tensor runs before the upsample instead:
//!
//! conv1x1(resample(x)) == resample(conv1x1(x))
//!
//! A 1x1 conv is the same linear map (plus bias) at every pixel, and each
//! resampled pixel is a blend of input pixels with weights summing to 1
//! (nearest: one pixel; linear: (1 - w, w) along each axis), so the two
//! commute, bias included. Decoders that upsample and then mix channels
//! (selfie's three stages: bilinear x2, then 1x1 to fewer channels) run the
//! conv on a quarter of the pixels, the resample on its fewer channels, and
//! a `mul` by a gate before the resample becomes the conv's input scale.
//! Runs first, on the graph as written: the conv then has no fused
//! activation, and one read by an activation keeps its place (the
//! activation would otherwise stay a kernel of its own after the resample).

use super::walk_state;
use crate::ml::graph_ir::{GraphIr, Node, OperandInfo, OperandKind};
use crate::ml::ops::{InputLayout, Op};
use crate::ml::shape::conv_filter_ochw;

pub(super) fn swap_resample_pointwise(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, _) = walk_state(&ir);
    // Readers of each operand that are activations.
    let mut activated = vec![false; ir.operands.len()];
    for node in &ir.nodes {
        if matches!(node.op, Op::Unary(_)) {
            for &x in &node.inputs {
                activated[x] = true;
            }
        }
    }
    let mut swaps = Vec::new();
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        let x = node.inputs[0];
        if let Some(p) = producer[x] {
            if uses[x] == 1 && !activated[node.outputs[0]] && swappable(&ir, &ir.nodes[p], node) {
                swaps.push((p, i));
            }
        }
        for &o in &ir.nodes[i].outputs {
            producer[o] = Some(i);
        }
    }
    if swaps.is_empty() {
        return ir;
    }
    let nodes = std::mem::take(&mut ir.nodes);
    let mut pairs: Vec<Option<[Node; 2]>> = vec![None; nodes.len()];
    let mut dropped = vec![false; nodes.len()];
    for &(p, i) in &swaps {
        let (resample, conv) = (&nodes[p], &nodes[i]);
        let (small, y) = (resample.inputs[0], conv.outputs[0]);
        // The conv's result at the resample's input size.
        let Op::Resample2d(ro) = &resample.op else {
            unreachable!("swap_resample_pointwise pairs resample2d nodes");
        };
        let mut shape = ir.desc(y).shape.clone();
        for a in ro.axes {
            shape[a] = ir.desc(small).shape[a];
        }
        let low = ir.operands.len();
        ir.operands.push(OperandInfo {
            desc: crate::ml::OperandDescriptor::new(ir.desc(y).data_type, shape),
            kind: OperandKind::Computed,
            label: format!("conv2d #{i} before its input's resample"),
        });
        let mut first = conv.clone();
        first.inputs[0] = small;
        first.outputs = vec![low];
        let mut second = resample.clone();
        second.inputs[0] = low;
        second.outputs = vec![y];
        // At the conv's place: its filter and bias may be computed after
        // the resample ran.
        pairs[i] = Some([first, second]);
        dropped[p] = true;
    }
    for (i, node) in nodes.into_iter().enumerate() {
        match pairs[i].take() {
            Some(pair) => ir.nodes.extend(pair),
            None if !dropped[i] => ir.nodes.push(node),
            None => {}
        }
    }
    ir
}

/// Whether `conv` is a 1x1 conv2d (stride 1, no padding; any groups or
/// bias) without fusions that reads the result of `resample`, an upsample
/// (more output pixels than input) of its spatial axes, nearest or linear,
/// without fusions, of the same float type.
fn swappable(ir: &GraphIr, resample: &Node, conv: &Node) -> bool {
    let (Op::Resample2d(ro), Op::Conv2d(o)) = (&resample.op, &conv.op) else {
        return false;
    };
    let Some(&f) = conv.inputs.get(1) else {
        return false;
    };
    let (t, f) = (conv.inputs[0], ir.desc(f));
    let (Some(&x), Some(&r)) = (resample.inputs.first(), resample.outputs.first()) else {
        return false;
    };
    let (xd, rd, yd) = (ir.desc(x), ir.desc(r), ir.desc(conv.outputs[0]));
    if xd.rank() != 4 || rd.rank() != 4 || yd.rank() != 4 || f.rank() != 4 {
        return false;
    }
    let [_, _, kh, kw] = conv_filter_ochw(
        o.filter_layout,
        [f.shape[0], f.shape[1], f.shape[2], f.shape[3]],
    );
    let axes = match o.input_layout {
        InputLayout::Nchw => [2, 3],
        InputLayout::Nhwc => [1, 2],
    };
    let plain = |n: &Node| {
        n.activations.is_empty()
            && !n.residual
            && !n.input_scale
            && n.input_upsample.is_none()
            && n.outputs.len() == 1
    };
    let pixels = |d: &crate::ml::OperandDescriptor| d.shape[axes[0]] * d.shape[axes[1]];
    t == r
        && plain(resample)
        && plain(conv)
        && !conv.inputs[1..].contains(&t)
        && resample.inputs.len() == 1
        && ro.axes == axes
        && [kh, kw] == [1, 1]
        && o.strides == [1, 1]
        && o.padding == [0; 4]
        && xd.data_type.is_float()
        && xd.data_type == rd.data_type
        && rd.data_type == yd.data_type
        && pixels(rd) > pixels(xd)
}
