//! A nearest-neighbour `resample2d` by integer factors read only by a
//! conv2d becomes that conv's input upsample: the conv reads input pixel
//! (y / sy, x / sx) where it would have read (y, x) of the upsampled
//! tensor, which is never written. ESRGAN's x2 (x4) models upsample a
//! 12-channel tensor to 1920x1080 (3840x2160) only for their last conv to
//! read it: a 100 MB (400 MB) write and read, 0.24 (0.95) ms on an H100.

use super::{walk_state, without_folded};
use crate::ml::graph_ir::{GraphIr, Node};
use crate::ml::ops::{InputLayout, InterpolationMode, Op};
use crate::ml::resample_taps::{scales, taps};
use crate::ml::shape::conv_filter_ochw;

/// Output channels (one group) up to which conv2d's GPU lowering computes
/// all of an output pixel's channels in one invocation
/// (`conv2d_narrow.wgsl`).
pub(crate) const NARROW_MAX_OUTPUTS: usize = 8;
/// Output channels per group from which conv2d's GPU lowering takes an
/// implicit-GEMM kernel (below it, and past one group, the direct kernel).
const GEMM_MIN_OUTPUTS: usize = 4;

/// Whether conv2d's GPU lowering takes one of its pixel-by-pixel kernels
/// (upsampled, narrow or direct), the ones that read through an input
/// upsample, for `groups` groups of `ocg` output channels. The implicit-GEMM and
/// tensor-core kernels address their input tiles without it: a conv that
/// would take them keeps its resample2d.
pub(crate) fn pixel_by_pixel(groups: usize, ocg: usize) -> bool {
    (groups == 1 && ocg <= NARROW_MAX_OUTPUTS) || ocg < GEMM_MIN_OUTPUTS
}

pub(super) fn fuse_upsamples(mut ir: GraphIr) -> GraphIr {
    let (uses, mut producer, mut keep) = walk_state(&ir);
    for i in 0..ir.nodes.len() {
        let node = &ir.nodes[i];
        let fusion = match &node.op {
            Op::Conv2d(o) if node.input_upsample.is_none() && takes_upsample(&ir, node) => {
                let x = node.inputs[0];
                producer[x].and_then(|p| {
                    let r = &ir.nodes[p];
                    (keep[p] && uses[x] == 1 && !node.inputs[1..].contains(&x))
                        .then(|| integer_upsample(&ir, r, o.input_layout))
                        .flatten()
                        .map(|factors| (p, r.inputs[0], factors))
                })
            }
            _ => None,
        };
        if let Some((p, small, factors)) = fusion {
            let conv = &mut ir.nodes[i];
            conv.inputs[0] = small;
            conv.input_upsample = Some(factors);
            keep[p] = false;
        }
        for &o in &ir.nodes[i].outputs {
            producer[o] = Some(i);
        }
    }
    without_folded(ir, keep)
}

/// A conv2d with a 4-D filter that the GPU lowering runs pixel by pixel.
fn takes_upsample(ir: &GraphIr, node: &Node) -> bool {
    let Op::Conv2d(o) = &node.op else {
        return false;
    };
    let Some(f) = node.inputs.get(1).map(|&f| ir.desc(f)) else {
        return false;
    };
    if f.rank() != 4 || o.groups == 0 {
        return false;
    }
    let [oc, _, _, _] = conv_filter_ochw(
        o.filter_layout,
        [f.shape[0], f.shape[1], f.shape[2], f.shape[3]],
    );
    pixel_by_pixel(o.groups, oc / o.groups)
}

/// The factors (height, width) of `node` if it is a nearest-neighbour
/// resample2d of a float 4-D tensor in `layout` along its spatial axes,
/// without activations, whose every output coordinate y reads input
/// coordinate y / s for an integer s (whatever its coordinate transform and
/// rounding: the taps both back ends use are checked one by one).
fn integer_upsample(ir: &GraphIr, node: &Node, layout: InputLayout) -> Option<[usize; 2]> {
    let Op::Resample2d(o) = &node.op else {
        return None;
    };
    let (x, y) = (
        ir.desc(*node.inputs.first()?),
        ir.desc(*node.outputs.first()?),
    );
    let axes = match layout {
        InputLayout::Nchw => [2, 3],
        InputLayout::Nhwc => [1, 2],
    };
    let ok = o.mode == InterpolationMode::NearestNeighbor
        && o.axes == axes
        && node.activations.is_empty()
        && !node.input_scale
        && !node.residual
        && node.outputs.len() == 1
        && x.rank() == 4
        && y.rank() == 4
        && x.data_type.is_float()
        && x.data_type == y.data_type;
    if !ok {
        return None;
    }
    let sc = scales(x, y, o);
    let mut factors = [1; 2];
    for k in 0..2 {
        let (n, m) = (x.shape[axes[k]], y.shape[axes[k]]);
        if n == 0 || m % n != 0 {
            return None;
        }
        let s = m / n;
        let exact = taps(n, m, sc[k], o)
            .iter()
            .enumerate()
            .all(|(d, t)| t.i0 == d / s && t.i1 == d / s);
        if !exact {
            return None;
        }
        factors[k] = s;
    }
    Some(factors)
}
