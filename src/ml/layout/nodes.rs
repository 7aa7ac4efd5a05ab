//! Which nodes run on either layout, and their NHWC form.

use super::perm;
use crate::ml::graph_ir::{GraphIr, Node};
use crate::ml::ops::{InputLayout, Op};
use crate::ml::DataType;

/// A node as it runs in an NHWC region.
#[derive(Clone, Debug)]
pub(super) struct Form {
    pub op: Op,
    /// Per input: whether it carries the node's layout (a 4-D computed
    /// operand, which joins the node's region and is stored as the region
    /// stores it).
    pub carried: Vec<bool>,
    /// The leading inputs whose layout is the node's: past them come
    /// filters and biases, which stay as written. Those of them not carried
    /// (constants, lower-rank operands that broadcast) are permuted.
    pub slots: usize,
}

/// `node`'s NHWC form, if it has one: every output 4-D, every input in a
/// layout slot of rank at most 4, and each that is not carried one that
/// can be permuted (a constant, or data whose order the permutation keeps).
pub(super) fn form(ir: &GraphIr, node: &Node) -> Option<Form> {
    let plain = !node.input_scale && !node.residual && node.input_upsample.is_none();
    if !plain || node.outputs.iter().any(|&y| ir.desc(y).rank() != 4) {
        return None;
    }
    let (op, slots) = nhwc_op(ir, node)?;
    let mut carried = vec![false; node.inputs.len()];
    for (k, &x) in node.inputs[..slots].iter().enumerate() {
        let d = ir.desc(x);
        let constant = ir.constant(x).is_some();
        carried[k] = d.rank() == 4 && !constant;
        let padded = [vec![1; 4usize.saturating_sub(d.rank())], d.shape.clone()].concat();
        let permutable =
            constant || d.element_count() == 1 || perm::moves_only_ones(&padded, &perm::TO_NHWC);
        if d.rank() > 4 || (!carried[k] && !permutable) {
            return None;
        }
    }
    Some(Form { op, carried, slots })
}

/// The op in NHWC and how many leading inputs take its layout.
fn nhwc_op(ir: &GraphIr, node: &Node) -> Option<(Op, usize)> {
    let all = node.inputs.len();
    let rank4 = node.inputs.iter().all(|&x| ir.desc(x).rank() == 4);
    let op = match &node.op {
        Op::Conv2d(o) if o.input_layout == InputLayout::Nchw => {
            let mut o = o.clone();
            o.input_layout = InputLayout::Nhwc;
            return Some((Op::Conv2d(o), 1));
        }
        Op::ConvTranspose2d(o) if o.input_layout == InputLayout::Nchw => {
            let mut o = o.clone();
            o.input_layout = InputLayout::Nhwc;
            return Some((Op::ConvTranspose2d(o), 1));
        }
        Op::Pool2d(kind, o) if o.layout == InputLayout::Nchw => {
            let mut o = o.clone();
            o.layout = InputLayout::Nhwc;
            Op::Pool2d(*kind, o)
        }
        // Element-wise: operands broadcast to the output, permuted with it.
        Op::Unary(_)
        | Op::Cast
        | Op::Identity
        | Op::Binary(_)
        | Op::Prelu
        | Op::BatchNormalization { .. } => return Some((node.op.clone(), all)),
        _ if !rank4 => return None,
        Op::Resample2d(o) => {
            let mut o = o.clone();
            o.axes = o.axes.map(perm::axis);
            Op::Resample2d(o)
        }
        Op::Concat { axis } => Op::Concat {
            axis: perm::axis(*axis),
        },
        Op::Split { sizes, axis } => Op::Split {
            sizes: sizes.clone(),
            axis: perm::axis(*axis),
        },
        Op::Slice {
            starts,
            sizes,
            strides,
        } => Op::Slice {
            starts: perm::nhwc(starts),
            sizes: perm::nhwc(sizes),
            strides: perm::nhwc(strides),
        },
        Op::Pad {
            beginning,
            ending,
            mode,
            value,
        } => Op::Pad {
            beginning: perm::nhwc(beginning),
            ending: perm::nhwc(ending),
            mode: *mode,
            value: *value,
        },
        Op::Softmax { axis } => Op::Softmax {
            axis: perm::axis(*axis),
        },
        Op::Reduce {
            kind,
            axes,
            keep_dimensions: true,
        } => {
            let mut axes: Vec<usize> = axes.iter().map(|&a| perm::axis(a)).collect();
            axes.sort_unstable();
            Op::Reduce {
                kind: *kind,
                axes,
                keep_dimensions: true,
            }
        }
        Op::ArgMinMax {
            max,
            axis,
            keep_dimensions: true,
            select_last_index,
        } => Op::ArgMinMax {
            max: *max,
            axis: perm::axis(*axis),
            keep_dimensions: true,
            select_last_index: *select_last_index,
        },
        _ => return None,
    };
    Some((op, all))
}

/// Whether `op` is a convolution, which a region must hold to be converted.
pub(super) fn is_conv(op: &Op) -> bool {
    matches!(op, Op::Conv2d(_) | Op::ConvTranspose2d(_))
}

/// Whether conv2d's choice would give `node`, once in NHWC, to the float16
/// tensor cores (on a device that has them): an NCHW conv2d of a float16
/// input by a constant float16 filter that fills enough of their
/// workgroups. (The choice's other exclusions, a fused input scale, are
/// fused after this pass.)
pub(super) fn tensor_cores_take(ir: &GraphIr, node: &Node) -> bool {
    let Op::Conv2d(o) = &node.op else {
        return false;
    };
    let (x, filter, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let f16 = |id| ir.desc(id).data_type == DataType::Float16;
    let shape = &ir.desc(y).shape;
    o.input_layout == InputLayout::Nchw
        && f16(x)
        && f16(filter)
        && ir.constant(filter).is_some()
        && shape.len() == 4
        && o.groups > 0
        && crate::ml::gpu::tensor_cores_fill(
            shape[0],
            [shape[2], shape[3]],
            shape[1] / o.groups,
            o.groups,
        )
}
