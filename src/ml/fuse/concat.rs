//! A channel concat read only by a conv2d becomes a chain of convolutions,
//! one per concatenated operand, each adding the one before as its
//! residual:
//!
//! conv(concat_c(a, b), W) + bias + r
//!     == conv(b, W[:, cb]) + (conv(a, W[:, ca]) + bias + r)
//!
//! The concat is never written (ESRGAN-slim's three took 0.5-0.6 ms of an
//! H100), and the pieces keep the channel counts of the operands: 64-channel
//! pieces take the tensor-core kernel in float16 where 68 or 132 input
//! channels did not. The conv's residual (an `add` fused before this pass
//! runs) and bias go on the first conv of the chain, its activations on the
//! last. The pieces' filters are sliced from the constant filter at build.
//!
//! The chain costs a conv per operand, though, and a tensor-core conv costs
//! about 10 us on an H200 whatever its size: YOLOv8n's C2f concats (3-4
//! operands of 16-128 channels on 20x20..160x160 maps) ran 3-4 such convs
//! where one concat copy (one kernel, `ml/gpu/concat.rs`) and one conv
//! would do. So a concat becomes a chain only where [`chain_pays`].

use std::sync::Arc;

use super::rewrite_pairs;
use crate::ml::gpu::TC_CHANNELS;
use crate::ml::graph_ir::{GraphIr, Node, OperandId, OperandInfo, OperandKind};
use crate::ml::ops::{Conv2dFilterLayout, InputLayout, Op};

/// Bytes per image of a concat's output from which it stays a chain of
/// convolutions whatever its operands: ESRGAN-slim's 960x540 concats
/// (68-132 channels, 70-280 MB an image) took 0.5-0.6 ms of an H100 written
/// out; YOLOv8n's at 640 (at most 160x160x48, 4.9 MB in float32) cost a
/// conv each as chains. Between the two: to be measured on the H200.
const CHAIN_MIN_IMAGE_BYTES: usize = 16 << 20;

/// Whether a channel concat of operands of `channels` (an image of its
/// output `image_bytes` long) read by a conv is better run as a chain of
/// convs than as the concat's copy and one conv.
fn chain_pays(channels: &[usize], image_bytes: usize) -> bool {
    let total: usize = channels.iter().sum();
    // Two convs against a copy and a conv: no more kernels.
    channels.len() <= 2
        // The merged conv would lose the float16 tensor cores that a part
        // keeps (ESRGAN-slim's 64 + 64 + 4 channels).
        || (total % TC_CHANNELS != 0 && channels.iter().any(|c| c % TC_CHANNELS == 0))
        // Writing the concat costs more than the convs' launches.
        || image_bytes >= CHAIN_MIN_IMAGE_BYTES
}

/// The rewritten graph: each concat that qualifies is gone, and the conv
/// reading it is a chain of as many convs as the concat had operands, at
/// the conv's place.
pub(super) fn split_concats(ir: GraphIr) -> GraphIr {
    rewrite_pairs(ir, splittable, true, chain)
}

/// The concat node that node `i` (a conv2d) reads and may be split over.
fn splittable(ir: &GraphIr, uses: &[usize], producer: &[Option<usize>], i: usize) -> Option<usize> {
    let conv = &ir.nodes[i];
    let Op::Conv2d(o) = &conv.op else {
        return None;
    };
    let (x, f) = (conv.inputs[0], *conv.inputs.get(1)?);
    let p = producer[x]?;
    let concat = &ir.nodes[p];
    let Op::Concat { axis } = concat.op else {
        return None;
    };
    let channel_axis = match o.input_layout {
        InputLayout::Nchw => 1,
        InputLayout::Nhwc => 3,
    };
    let fd = ir.desc(f);
    let ok = axis == channel_axis
        && uses[x] == 1
        && !conv.inputs[1..].contains(&x)
        && o.groups == 1
        && !conv.input_scale
        // The chain's first conv takes the residual, before activations.
        && !conv.late_residual
        && conv.input_upsample.is_none()
        && conv.outputs.len() == 1
        && concat.inputs.len() >= 2
        && concat.outputs.len() == 1
        && concat.activations.is_empty()
        && ir.desc(x).rank() == 4
        && ir.desc(x).data_type.is_float()
        && fd.rank() == 4
        && fd.data_type.is_float()
        && ir.constant(f).is_some();
    let d = ir.desc(x);
    let channels: Vec<usize> = concat
        .inputs
        .iter()
        .map(|&c| ir.desc(c).shape[channel_axis])
        .collect();
    let image_bytes = d.byte_length() / d.shape[0].max(1);
    (ok && chain_pays(&channels, image_bytes)).then_some(p)
}

/// The convolutions replacing `conv` (node `at`), one per operand of
/// `concat`, with their filters and intermediate results added to `ir`.
fn chain(ir: &mut GraphIr, concat: &Node, conv: &Node) -> Vec<Node> {
    let Op::Conv2d(o) = &conv.op else {
        unreachable!("split_concats only chains conv2d nodes");
    };
    let f = conv.inputs[1];
    let fd = ir.desc(f).clone();
    let bytes = ir.constant(f).cloned().unwrap_or_default();
    let axis = input_channel_axis(o.filter_layout);
    let channel_axis = match o.input_layout {
        InputLayout::Nchw => 1,
        InputLayout::Nhwc => 3,
    };
    let out = conv.outputs[0];
    let parts = concat.inputs.len();
    let mut nodes = Vec::with_capacity(parts);
    let mut c0 = 0;
    let mut previous: Option<OperandId> = None;
    for (k, &piece) in concat.inputs.iter().enumerate() {
        let c = ir.desc(piece).shape[channel_axis];
        let mut shape = fd.shape.clone();
        shape[axis] = c;
        let filter = push(
            ir,
            crate::ml::OperandDescriptor::new(fd.data_type, shape),
            OperandKind::Constant(Arc::new(slice(
                &bytes,
                &fd.shape,
                axis,
                c0..c0 + c,
                fd.data_type.byte_size(),
            ))),
            format!("{} (input channels {c0}..{})", ir.label(f), c0 + c),
        );
        c0 += c;
        let last = k + 1 == parts;
        let y = if last {
            out
        } else {
            push(
                ir,
                ir.desc(out).clone(),
                OperandKind::Computed,
                format!("{} (part {} of {parts})", ir.label(out), k + 1),
            )
        };
        let mut inputs = vec![piece, filter];
        // The bias and the conv's own residual go on the first conv, each
        // later one adds the one before.
        let residual = match previous {
            None => {
                inputs.extend(conv.op_inputs().get(2));
                conv.residual()
            }
            Some(p) => Some(p),
        };
        inputs.extend(residual);
        nodes.push(Node {
            op: conv.op.clone(),
            inputs,
            outputs: vec![y],
            activations: if last {
                conv.activations.clone()
            } else {
                Vec::new()
            },
            input_scale: false,
            residual: residual.is_some(),
            late_residual: false,
            input_upsample: None,
        });
        previous = Some(y);
    }
    nodes
}

/// The filter axis of the input channels.
fn input_channel_axis(layout: Conv2dFilterLayout) -> usize {
    match layout {
        Conv2dFilterLayout::Oihw => 1,
        Conv2dFilterLayout::Hwio => 2,
        Conv2dFilterLayout::Ohwi => 3,
        Conv2dFilterLayout::Ihwo => 0,
    }
}

/// The bytes of `range` along `axis` of a tensor of `shape` (elements of
/// `size` bytes, row-major).
pub(super) fn slice(
    bytes: &[u8],
    shape: &[usize],
    axis: usize,
    range: std::ops::Range<usize>,
    size: usize,
) -> Vec<u8> {
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product::<usize>() * size;
    let n = shape[axis];
    let mut v = Vec::with_capacity(outer * range.len() * inner);
    for i in 0..outer {
        let row = &bytes[(i * n + range.start) * inner..(i * n + range.end) * inner];
        v.extend_from_slice(row);
    }
    v
}

pub(super) fn push(
    ir: &mut GraphIr,
    desc: crate::ml::OperandDescriptor,
    kind: OperandKind,
    label: String,
) -> OperandId {
    ir.operands.push(OperandInfo { desc, kind, label });
    ir.operands.len() - 1
}

#[cfg(test)]
pub(super) mod tests {
    //! What the split makes of small graphs (built and fused on the CPU
    //! context): the chain's nodes, their inputs and sliced filters; and the
    //! graphs it must leave alone. Both contexts' values for split graphs
    //! are checked against unsplit ones in tests/ml/conv_input_fusions.rs.

    use crate::ml::graph_ir::GraphIr;
    use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions, InputLayout, Op};
    use crate::ml::{Context, DataType, GraphBuilder, Operand, OperandDescriptor};

    pub(in crate::ml::fuse) fn f32_desc(shape: &[usize]) -> OperandDescriptor {
        OperandDescriptor::new(DataType::Float32, shape)
    }

    /// The fused graph of `f`'s output.
    fn fused(f: impl FnOnce(&GraphBuilder) -> crate::error::Result<Operand>) -> GraphIr {
        fused_outputs(|b| Ok(vec![f(b)?]))
    }

    /// The fused graph of `f`'s outputs ("y0", "y1", ...), built on the CPU
    /// context.
    pub(in crate::ml::fuse) fn fused_outputs(
        f: impl FnOnce(&GraphBuilder) -> crate::error::Result<Vec<Operand>>,
    ) -> GraphIr {
        let ctx = Context::cpu();
        let b = GraphBuilder::new(&ctx);
        let ys = f(&b).unwrap();
        let names: Vec<String> = (0..ys.len()).map(|k| format!("y{k}")).collect();
        let outs: Vec<(&str, &Operand)> = names.iter().map(String::as_str).zip(&ys).collect();
        let g = b.build(&outs).unwrap();
        (*g.inner.ir).clone()
    }

    pub(in crate::ml::fuse) fn ops(ir: &GraphIr) -> Vec<&'static str> {
        ir.nodes.iter().map(|n| n.op.name()).collect()
    }

    pub(in crate::ml::fuse) fn values(ir: &GraphIr, id: usize) -> Vec<f32> {
        bytemuck::pod_collect_to_vec(ir.constant(id).unwrap())
    }

    /// concat(a, c) of 2 and 3 NHWC channels (with `groups` 2 or along
    /// another axis, of 2 and 2), 1x1 conv to 2 outputs with an HWIO filter
    /// whose value is 10 * input channel + output channel; add(conv, r) then
    /// relu.
    fn esrgan_block(
        b: &GraphBuilder,
        groups: usize,
        axis: usize,
        filter_input: bool,
    ) -> crate::error::Result<Operand> {
        let a = b.input("a", f32_desc(&[1, 4, 5, 2]))?;
        let c_channels = if groups == 1 && axis == 3 { 3 } else { 2 };
        let c = b.input("c", f32_desc(&[1, 4, 5, c_channels]))?;
        let cat = b.concat(&[&a, &c], axis)?;
        let [_, h, w, channels] = cat.descriptor().shape[..] else {
            unreachable!("a 4-D concat")
        };
        let r = b.input("r", f32_desc(&[1, h, w, 2]))?;
        let ic = channels / groups;
        let shape = [1, 1, ic, 2];
        let weights: Vec<f32> = (0..ic * 2).map(|k| (10 * (k / 2) + k % 2) as f32).collect();
        let f = if filter_input {
            b.input("f", f32_desc(&shape))?
        } else {
            b.constant(f32_desc(&shape), bytemuck::cast_slice(&weights))?
        };
        let bias = b.constant(f32_desc(&[2]), bytemuck::cast_slice(&[0.5f32, -0.5]))?;
        let o = Conv2dOptions {
            groups,
            input_layout: InputLayout::Nhwc,
            filter_layout: Conv2dFilterLayout::Hwio,
            ..Conv2dOptions::new()
        };
        let y = b.conv2d(&cat, &f, Some(&bias), o)?;
        b.relu(&b.add(&y, &r)?)
    }

    #[test]
    fn a_channel_concat_read_by_a_conv_becomes_a_chain_of_convs() {
        let ir = fused(|b| esrgan_block(b, 1, 3, false));
        assert_eq!(ops(&ir), ["conv2d", "conv2d"]);
        let (first, second) = (&ir.nodes[0], &ir.nodes[1]);
        let [a, c, r] = [0, 1, 2].map(|k| ir.inputs[k].1);
        // First: conv(a, W[:, 0..2]) + bias + r, no activation.
        assert_eq!(first.inputs[0], a);
        assert_eq!(values(&ir, first.inputs[1]), [0., 1., 10., 11.]);
        assert_eq!(values(&ir, first.inputs[2]), [0.5, -0.5]);
        assert_eq!(first.residual(), Some(r));
        assert!(first.activations.is_empty());
        // Second: conv(c, W[:, 2..5]) + first, no bias, the relu.
        assert_eq!(second.inputs[0], c);
        assert_eq!(
            values(&ir, second.inputs[1]),
            [20., 21., 30., 31., 40., 41.]
        );
        assert_eq!(second.op_inputs().len(), 2);
        assert_eq!(second.residual(), Some(first.outputs[0]));
        assert_eq!(second.activations.len(), 1);
        assert_eq!(second.outputs[0], ir.outputs[0].1);
        assert_eq!(ir.desc(first.outputs[0]), ir.desc(second.outputs[0]));
    }

    #[test]
    fn other_concats_stay() {
        // Two groups, a concat along the height, a filter that is not a
        // constant, and a concat read by something else too.
        for (what, ir) in [
            ("groups 2", fused(|b| esrgan_block(b, 2, 3, false))),
            ("height axis", fused(|b| esrgan_block(b, 1, 1, false))),
            ("filter input", fused(|b| esrgan_block(b, 1, 3, true))),
            (
                "three operands of 16 channels on a small map",
                fused(|b| {
                    let parts = ["a", "c", "d"].map(|n| b.input(n, f32_desc(&[1, 4, 5, 16])));
                    let [a, c, d] = parts;
                    let cat = b.concat(&[&a?, &c?, &d?], 3)?;
                    let f = b.constant(f32_desc(&[1, 1, 48, 8]), &[0; 48 * 8 * 4])?;
                    let o = Conv2dOptions {
                        input_layout: InputLayout::Nhwc,
                        filter_layout: Conv2dFilterLayout::Hwio,
                        ..Conv2dOptions::new()
                    };
                    b.conv2d(&cat, &f, None, o)
                }),
            ),
            (
                "two readers",
                fused(|b| {
                    let a = b.input("a", f32_desc(&[1, 2, 3, 3]))?;
                    let c = b.input("c", f32_desc(&[1, 2, 3, 3]))?;
                    let cat = b.concat(&[&a, &c], 1)?;
                    let f = b.constant(f32_desc(&[2, 4, 1, 1]), &[0; 32])?;
                    let y = b.conv2d(&cat, &f, None, Conv2dOptions::new())?;
                    b.add(&y, &b.slice(&cat, &[0, 0, 0, 0], &[1, 2, 3, 3], None)?)
                }),
            ),
        ] {
            assert!(
                ir.nodes.iter().any(|n| matches!(n.op, Op::Concat { .. })),
                "{what}: {:?}",
                ops(&ir)
            );
        }
    }

    #[test]
    fn a_chain_only_where_it_pays() {
        use super::{chain_pays, CHAIN_MIN_IMAGE_BYTES};
        let small = 1 << 20;
        // Two operands: two convs, no more kernels than a copy and a conv.
        assert!(chain_pays(&[64, 64], small));
        assert!(chain_pays(&[5, 4], small));
        // YOLOv8n's C2f and SPPF concats: one copy and one conv.
        assert!(!chain_pays(&[16, 16, 16], small));
        assert!(!chain_pays(&[128; 4], small));
        // No tensor cores to keep where no part has them.
        assert!(!chain_pays(&[2, 3, 5], small));
        // ESRGAN-slim's 64 + 64 + 4: the parts of 64 keep the tensor cores
        // that 132 channels lose.
        assert!(chain_pays(&[64, 64, 4], small));
        // A large map: the concat's bytes cost more than the convs.
        assert!(chain_pays(&[16, 16, 16], CHAIN_MIN_IMAGE_BYTES));
        assert!(!chain_pays(&[16, 16, 16], CHAIN_MIN_IMAGE_BYTES - 1));
    }
}
