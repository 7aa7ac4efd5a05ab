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
//! convs as the split has copies. In float32 the split stays as well
//! (`split_pays`): there the parts only half-fill the GEMM kernels' tiles.

use std::sync::Arc;

use super::concat::{push, slice};
use super::rewrite_pairs;
use crate::ml::gpu::tensor_cores_fill;
use crate::ml::graph_ir::{GraphIr, Node, OperandKind};
use crate::ml::ops::{Conv2dFilterLayout, InputLayout, Op};
use crate::ml::shape::nchw;
use crate::ml::{DataType, OperandDescriptor};

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
        && ir.desc(f).rank() == 4
        && ir.constant(f).is_some()
        && bias_constant
        && split_pays(
            ir.desc(conv.inputs[0]).data_type,
            ir.desc(f).data_type,
            ir.desc(x),
            o.input_layout,
            sizes,
        );
    ok.then_some(p)
}

/// Whether a conv reading `input` with a `filter` of these types, whose
/// result `y` splits into `parts` channels each, pays to compute part by
/// part: only where it computes in float16 (input and filter float16) and
/// every part keeps the tensor cores the whole takes. In float32 the GEMM
/// kernels' 64-channel tiles were half-filled by YOLOv8n's 16-32 channel
/// parts: on an H200 its float32 batch of 32 went from 32.77 to 34.04 ms
/// with the split; only the float16 tensor cores were measured to gain.
fn split_pays(
    input: DataType,
    filter: DataType,
    y: &OperandDescriptor,
    layout: InputLayout,
    parts: &[usize],
) -> bool {
    input == DataType::Float16 && filter == DataType::Float16 && same_tensor_cores(y, layout, parts)
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

    use super::super::concat::tests::{fused_outputs as fused, ops};
    use super::split_pays;
    use crate::ml::graph_ir::GraphIr;
    use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions, InputLayout};
    use crate::ml::{DataType, GraphBuilder, Operand, OperandDescriptor};

    const F16: DataType = DataType::Float16;
    const F32: DataType = DataType::Float32;

    /// A constant of `dt` holding `values`.
    fn constant(b: &GraphBuilder, dt: DataType, shape: &[usize], values: &[f32]) -> Operand {
        let bytes: Vec<u8> = match dt {
            DataType::Float16 => values
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
                .collect(),
            _ => bytemuck::cast_slice(values).to_vec(),
        };
        b.constant(OperandDescriptor::new(dt, shape), &bytes)
            .unwrap()
    }

    /// Constant `id`'s float16 values.
    fn values(ir: &GraphIr, id: usize) -> Vec<f32> {
        let bytes = ir.constant(id).unwrap();
        bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()
    }

    /// A 1x1 NHWC conv in `dt` of 2 input channels to 3 outputs (HWIO
    /// filter whose value is 10 * input channel + output channel, bias
    /// 0.5 * output channel), relu, split along `axis` into 1 and 2 (or 2
    /// and 2 of the height), each part also relu'd so that the graph's
    /// outputs are not the split's own; with `filter_input` the filter is
    /// an input, with `second_reader` the conv's result is also an output.
    fn c2f_head(
        b: &GraphBuilder,
        dt: DataType,
        axis: usize,
        filter_input: bool,
        second_reader: bool,
    ) -> crate::error::Result<Vec<Operand>> {
        let x = b.input("x", OperandDescriptor::new(dt, [1, 4, 5, 2]))?;
        let weights: Vec<f32> = (0..6).map(|k| (10 * (k / 3) + k % 3) as f32).collect();
        let f = if filter_input {
            b.input("f", OperandDescriptor::new(dt, [1, 1, 2, 3]))?
        } else {
            constant(b, dt, &[1, 1, 2, 3], &weights)
        };
        let bias = constant(b, dt, &[3], &[0.0, 0.5, 1.0]);
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
    fn a_channel_split_of_a_float16_conv_becomes_a_conv_per_part() {
        let ir = fused(|b| c2f_head(b, F16, 3, false, false));
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

    /// Only float16 convs split; the parts must keep the tensor cores.
    #[test]
    fn split_pays_in_float16_alone() {
        let y = |c| OperandDescriptor::new(F16, [1, 20, 20, c]);
        let nhwc = InputLayout::Nhwc;
        // A small map: neither the whole nor a part takes the tensor cores.
        let small = OperandDescriptor::new(F16, [1, 5, 7, 32]);
        assert!(split_pays(F16, F16, &small, nhwc, &[16, 16]));
        for (input, filter) in [(F32, F32), (F16, F32), (F32, F16)] {
            assert!(!split_pays(input, filter, &small, nhwc, &[16, 16]));
        }
        // A 1x1 128 -> 128 at 20x20 fills the tensor cores' small tiles
        // (80 workgroups), its halves do not (40).
        assert!(!split_pays(F16, F16, &y(128), nhwc, &[64, 64]));
    }

    #[test]
    fn other_splits_stay() {
        for (what, ir) in [
            ("float32", fused(|b| c2f_head(b, F32, 3, false, false))),
            ("height axis", fused(|b| c2f_head(b, F16, 1, false, false))),
            ("filter input", fused(|b| c2f_head(b, F16, 3, true, false))),
            ("second reader", fused(|b| c2f_head(b, F16, 3, false, true))),
            // A 1x1 128 -> 128 at 20x20 fills the tensor cores' small
            // tiles (80 workgroups), its halves do not (40).
            (
                "parts without the tensor cores",
                fused(|b| {
                    let x = b.input("x", OperandDescriptor::new(F16, [1, 20, 20, 128]))?;
                    let f = constant(b, F16, &[1, 1, 128, 128], &vec![0.0; 128 * 128]);
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
