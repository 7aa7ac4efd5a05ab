//! A channel split of a conv2d's result, read by nothing else, becomes one
//! conv per part, each computing its own range of output channels (filter
//! and bias sliced at build, activations, input scale and upsample kept):
//!
//! split_c(conv(x, W) + bias) == [conv(x, W[o0..o1]) + bias[o0..o1], ...]
//!
//! The split's copies are gone (YOLOv8's C2f blocks split each cv1 result
//! in two: 16 copy kernels of 5-7 us each on an H200) for one more
//! convolution per split, over the same input, writing the same bytes;
//! where a part would lose the float16 tensor cores the whole conv takes,
//! the split stays. A conv with a residual (the last of a concat's chain,
//! `fuse/concat.rs`) stays whole too: splitting the chain would add as many
//! convs as the split has copies.

use std::sync::Arc;

use super::concat::{push, slice};
use super::rewrite_pairs;
use crate::ml::gpu::tensor_cores_fill;
use crate::ml::graph_ir::{GraphIr, Node, OperandKind};
use crate::ml::ops::{Conv2dFilterLayout, InputLayout, Op};
use crate::ml::shape::nchw;
use crate::ml::OperandDescriptor;

/// The rewritten graph: each split that qualifies is gone, and the conv
/// it read is as many convs as the split had parts, at the conv's place.
pub(super) fn split_conv_outputs(ir: GraphIr) -> GraphIr {
    rewrite_pairs(ir, splittable, false, |ir, conv, split| {
        per_part(ir, conv, split)
    })
}

/// The conv2d node whose result node `i` (a split) splits along its
/// channels and may compute part by part.
fn splittable(ir: &GraphIr, uses: &[usize], producer: &[Option<usize>], i: usize) -> Option<usize> {
    let split = &ir.nodes[i];
    let Op::Split { axis, ref sizes } = split.op else {
        return None;
    };
    let x = split.inputs[0];
    let p = producer[x]?;
    let conv = &ir.nodes[p];
    let Op::Conv2d(o) = &conv.op else {
        return None;
    };
    let f = *conv.inputs.get(1)?;
    let bias_constant = conv
        .op_inputs()
        .get(2)
        .is_none_or(|&b| ir.constant(b).is_some());
    let ok = axis == channel_axis(o.input_layout)
        && uses[x] == 1
        && o.groups == 1
        // A residual or late residual would need its own channel slice.
        && !conv.residual
        && !conv.late_residual
        && conv.outputs.len() == 1
        && ir.desc(x).rank() == 4
        && ir.desc(x).data_type.is_float()
        && ir.desc(f).rank() == 4
        && ir.constant(f).is_some()
        && bias_constant
        && same_tensor_cores(ir.desc(x), o.input_layout, sizes);
    ok.then_some(p)
}

/// Whether every part of a conv's result `y` (`parts` channels each) fills
/// the float16 tensor cores as the whole does (`ml/gpu/conv2d/choose.rs`),
/// so that no part falls back to a slower kernel. YOLOv8n's 1x1 128 -> 128
/// on its 40x40 map takes them at 640x640, 128 -> 64 does not (too few
/// workgroups): that split stays.
fn same_tensor_cores(y: &OperandDescriptor, layout: InputLayout, parts: &[usize]) -> bool {
    let s = &y.shape;
    let [n, c, h, w] = nchw(layout, [s[0], s[1], s[2], s[3]]);
    let fills = |channels| tensor_cores_fill(n, [h, w], channels, 1);
    parts.iter().all(|&part| fills(part) == fills(c))
}

fn channel_axis(layout: InputLayout) -> usize {
    match layout {
        InputLayout::Nchw => 1,
        InputLayout::Nhwc => 3,
    }
}

/// The filter axis of the output channels.
fn output_channel_axis(layout: Conv2dFilterLayout) -> usize {
    match layout {
        Conv2dFilterLayout::Oihw | Conv2dFilterLayout::Ohwi => 0,
        Conv2dFilterLayout::Hwio | Conv2dFilterLayout::Ihwo => 3,
    }
}

/// The convolutions replacing `conv`, one per output of `split`, with
/// their sliced filters and biases added to `ir`.
fn per_part(ir: &mut GraphIr, conv: &Node, split: &Node) -> Vec<Node> {
    let Op::Conv2d(o) = &conv.op else {
        unreachable!("split_conv_outputs only splits conv2d nodes");
    };
    let axis = output_channel_axis(o.filter_layout);
    let channels = channel_axis(o.input_layout);
    let inputs = conv.op_inputs();
    let mut c0 = 0;
    let mut nodes = Vec::with_capacity(split.outputs.len());
    for &y in &split.outputs {
        let c = ir.desc(y).shape[channels];
        let range = c0..c0 + c;
        let mut part_inputs = vec![inputs[0], sliced(ir, inputs[1], axis, range.clone())];
        if let Some(&b) = inputs.get(2) {
            part_inputs.push(sliced(ir, b, 0, range));
        }
        part_inputs.extend(conv.input_scale());
        nodes.push(Node {
            op: conv.op.clone(),
            inputs: part_inputs,
            outputs: vec![y],
            activations: conv.activations.clone(),
            input_scale: conv.input_scale,
            residual: false,
            late_residual: false,
            input_upsample: conv.input_upsample,
        });
        c0 += c;
    }
    nodes
}

/// A new constant: `range` along `axis` of constant `id`.
fn sliced(ir: &mut GraphIr, id: usize, axis: usize, range: std::ops::Range<usize>) -> usize {
    let d = ir.desc(id).clone();
    let bytes = ir.constant(id).cloned().unwrap_or_default();
    let mut shape = d.shape.clone();
    shape[axis] = range.len();
    let label = format!(
        "{} (output channels {}..{})",
        ir.label(id),
        range.start,
        range.end
    );
    let part = slice(&bytes, &d.shape, axis, range, d.data_type.byte_size());
    push(
        ir,
        OperandDescriptor::new(d.data_type, shape),
        OperandKind::Constant(Arc::new(part)),
        label,
    )
}

#[cfg(test)]
mod tests {
    //! What the rewrite makes of small graphs (built and fused on the CPU
    //! context): the per-part convs, their sliced filters and biases; and
    //! the graphs it must leave alone. Both contexts' values are checked
    //! against unsplit graphs in tests/ml/conv_output_splits.rs.

    use super::super::concat::tests::{f32_desc, fused_outputs as fused, ops, values};
    use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions, InputLayout};
    use crate::ml::{GraphBuilder, Operand};

    /// A 1x1 NHWC conv of 2 input channels to 3 outputs (HWIO filter whose
    /// value is 10 * input channel + output channel, bias 0.5 * output
    /// channel), relu, split along `axis` into 1 and 2 (or 2 and 2 of the
    /// height), each part also relu'd so that the graph's outputs are not
    /// the split's own; with `filter_input` the filter is an input, with
    /// `second_reader` the conv's result is also an output.
    fn c2f_head(
        b: &GraphBuilder,
        axis: usize,
        filter_input: bool,
        second_reader: bool,
    ) -> crate::error::Result<Vec<Operand>> {
        let x = b.input("x", f32_desc(&[1, 4, 5, 2]))?;
        let weights: Vec<f32> = (0..6).map(|k| (10 * (k / 3) + k % 3) as f32).collect();
        let f = if filter_input {
            b.input("f", f32_desc(&[1, 1, 2, 3]))?
        } else {
            b.constant(f32_desc(&[1, 1, 2, 3]), bytemuck::cast_slice(&weights))?
        };
        let bias = b.constant(f32_desc(&[3]), bytemuck::cast_slice(&[0.0f32, 0.5, 1.0]))?;
        let o = Conv2dOptions {
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Hwio,
            ..Conv2dOptions::new()
        };
        let y = b.relu(&b.conv2d(&x, &f, Some(&bias), o)?)?;
        let sizes: &[usize] = if axis == 3 { &[1, 2] } else { &[2, 2] };
        let parts = b.split_sizes(&y, sizes, axis)?;
        let mut outs = vec![b.relu(&parts[0])?, b.relu(&parts[1])?];
        if second_reader {
            outs.push(y);
        }
        Ok(outs)
    }

    #[test]
    fn a_channel_split_of_a_conv_becomes_a_conv_per_part() {
        let ir = fused(|b| c2f_head(b, 3, false, false));
        assert_eq!(ops(&ir), ["conv2d", "conv2d", "relu", "relu"]);
        let x = ir.inputs[0].1;
        let (first, second) = (&ir.nodes[0], &ir.nodes[1]);
        assert_eq!([first.inputs[0], second.inputs[0]], [x, x]);
        // HWIO [1, 1, 2, 3] sliced along O: [0, 10] and [1, 2, 11, 12].
        assert_eq!(values(&ir, first.inputs[1]), [0., 10.]);
        assert_eq!(ir.desc(first.inputs[1]).shape, [1, 1, 2, 1]);
        assert_eq!(values(&ir, second.inputs[1]), [1., 2., 11., 12.]);
        assert_eq!(values(&ir, first.inputs[2]), [0.0]);
        assert_eq!(values(&ir, second.inputs[2]), [0.5, 1.0]);
        // Each keeps the relu and writes its part.
        for (k, conv) in [first, second].into_iter().enumerate() {
            assert_eq!(conv.activations.len(), 1, "part {k}");
            assert_eq!(ir.desc(conv.outputs[0]).shape, [1, 4, 5, k + 1]);
            assert_eq!(ir.nodes[2 + k].inputs[0], conv.outputs[0]);
        }
    }

    #[test]
    fn other_splits_stay() {
        for (what, ir) in [
            ("height axis", fused(|b| c2f_head(b, 1, false, false))),
            ("filter input", fused(|b| c2f_head(b, 3, true, false))),
            ("second reader", fused(|b| c2f_head(b, 3, false, true))),
            // A 1x1 128 -> 128 at 20x20 fills the tensor cores' small
            // tiles (80 workgroups), its halves do not (40).
            (
                "parts without the tensor cores",
                fused(|b| {
                    let x = b.input("x", f32_desc(&[1, 20, 20, 128]))?;
                    let f = b.constant(f32_desc(&[1, 1, 128, 128]), &vec![0; 128 * 128 * 4])?;
                    let o = Conv2dOptions {
                        input_layout: InputLayout::Nhwc,
                        filter_layout: Conv2dFilterLayout::Hwio,
                        ..Conv2dOptions::new()
                    };
                    let parts = b.split(&b.conv2d(&x, &f, None, o)?, 2, 3)?;
                    Ok(vec![b.relu(&parts[0])?, b.relu(&parts[1])?])
                }),
            ),
        ] {
            assert!(ops(&ir).contains(&"split"), "{what}: {:?}", ops(&ir));
        }
    }
}
