//! The layout pass: graphs written in NCHW (every ONNX model) run their
//! convolutions in NHWC, where the fast conv2d kernels are (the float16
//! tensor-core kernels, the NHWC vector and split kernels), as TensorRT's
//! and onnx2tf's layout passes do.
//!
//! 4-D operands are grouped into regions: operands joined by nodes that
//! can run on either layout ([`nodes`]): convolutions, pooling, resampling,
//! normalizations, element-wise ops (their constant or broadcast operands
//! permuted), concat, split, slice, pad, softmax and reductions keeping
//! their axes (axes remapped). A region that is converted stores all its
//! operands NHWC; a transpose converts each operand that enters it from
//! elsewhere (a graph input, a reshape, ...) and each operand that leaves it
//! (a graph output, a flatten, ...), so the graph's inputs and outputs keep
//! their shapes. Within a region no transpose is left: the transposes a
//! naive per-conv conversion inserts have sunk to its edges and cancelled.
//! A transpose that moves only dimensions of extent 1 (a global pool's
//! [n, c, 1, 1]) is written as a reshape, a plain copy; the rule below
//! counts it as a transpose all the same (a squeeze-and-excitation chain of
//! two 1x1 convolutions is one kernel in NCHW already).
//!
//! Which regions pay ([`region`]): those whose transposes are fewer than
//! the convolutions they move onto the NHWC kernels. A transpose is one pass
//! over a tensor; a convolution at least one over its input and one over its
//! output plus its arithmetic, and in float16 only NHWC reaches the tensor
//! cores. A lone convolution between a graph input and output (two
//! transposes) stays as written.
//!
//! Filters stay as written (OIHW for ONNX): every NHWC conv2d kernel reads
//! its filter through strides of any layout, and the tensor-core kernels
//! re-block constant filters into their own tiles at build, so no filter
//! layout is faster for them to read.

mod nodes;
mod perm;
mod region;
mod rewrite;
#[cfg(test)]
mod tests;

use super::graph_ir::GraphIr;

/// The graph with its profitable NCHW regions in NHWC; a graph without an
/// NCHW conv2d is returned unchanged.
pub(crate) fn to_nhwc(ir: GraphIr) -> GraphIr {
    let regions = region::Regions::find(&ir);
    if !regions.any_flipped() {
        return ir;
    }
    rewrite::rewrite(ir, &regions)
}
