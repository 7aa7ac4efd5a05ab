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
//! Which regions pay ([`region`], [`Policy`]) depends on the context. On
//! the GPU only the float16 tensor cores gain from NHWC: on an H200, with
//! every profitable-looking region converted, ResNet-50 in float32 took
//! 1.62 ms at batch 1 and 27.5 ms at batch 32 against 1.45 and 21.0 as
//! written, and YOLOv8n in float16 at batch 1 (whose small maps the tensor
//! cores leave to the other kernels) 3.31 ms against 2.41; at batch 32 in
//! float16, where the tensor cores take nearly every convolution, NHWC took
//! YOLOv8n from 34.4 to 18.9 ms and ResNet-50 from 20.7 to 11.2. So a GPU
//! region converts where the tensor cores take more of its convolutions
//! (counted over the batch as conv2d's choice counts them) than it has
//! transposes and convolutions left to the other kernels. The CPU context's
//! convolution computes in NHWC and transposes an NCHW input on every call
//! (`cpu/conv.rs`), so there a region converts where its transposes are
//! fewer than its convolutions. A lone convolution between a graph input
//! and output (two transposes) stays as written.
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
use super::Context;

/// Which regions the pass converts (the module's documentation says why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Regions with fewer transposes than convolutions: the CPU context.
    FewerTransposes,
    /// Regions whose float16 convolutions the tensor cores take, more of
    /// them than transposes and other convolutions: a GPU with float16
    /// tensor cores.
    TensorCores,
    /// None: a GPU without float16 tensor cores.
    Never,
}

impl Policy {
    pub fn for_context(context: &Context) -> Policy {
        match context.gpu_handle() {
            None => Policy::FewerTransposes,
            Some(gpu) if gpu.has_f16_tensor_cores() => Policy::TensorCores,
            Some(_) => Policy::Never,
        }
    }
}

/// The graph with its NCHW regions that pay under `policy` in NHWC; a graph
/// without an NCHW conv2d is returned unchanged.
pub(crate) fn to_nhwc(ir: GraphIr, policy: Policy) -> GraphIr {
    if policy == Policy::Never {
        return ir;
    }
    let regions = region::Regions::find(&ir, policy);
    if !regions.any_flipped() {
        return ir;
    }
    rewrite::rewrite(ir, &regions)
}
