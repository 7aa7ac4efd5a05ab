//! `conv2d.wgsl` and `conv2d_depthwise.wgsl`: one invocation per output
//! element (or LANES per output over many input channels), which take any
//! convolution; the depthwise one with its taps compiled in.

use super::super::lower::{grid, Lowering};
use super::params::{bias_and_output, Conv, WG};
use crate::error::Result;
use crate::gpu::Specialization;

/// `conv2d.wgsl`, each output summed over `lanes` invocations.
pub(super) fn emit(l: &mut Lowering, c: &Conv, lanes: u32) -> Result<()> {
    let spec = Specialization::new().u32("LANES", lanes);
    let invocations = c.total * lanes as usize;
    pixel_kernel(l, c, include_str!("conv2d.wgsl"), spec, invocations)
}

/// `conv2d_depthwise.wgsl` for a `kh` x `kw` filter.
pub(super) fn emit_depthwise(l: &mut Lowering, c: &Conv, kh: u32, kw: u32) -> Result<()> {
    let spec = Specialization::new().u32("KH", kh).u32("KW", kw);
    pixel_kernel(l, c, include_str!("conv2d_depthwise.wgsl"), spec, c.total)
}

/// One of the two bodies after the shared params, reading the filter as it
/// is, the store adding any residual before the activations or, a late
/// one, after them.
fn pixel_kernel(
    l: &mut Lowering,
    c: &Conv,
    body: &str,
    spec: Specialization,
    invocations: usize,
) -> Result<()> {
    let source = format!("{}{}", include_str!("conv2d_params.wgsl"), body);
    let (has_bias, has_scale, has_residual) = c.flags();
    // `Conv::kernel` adds `finish`, which adds the residual before the
    // activations or, a late one, after them.
    let spec = spec
        .code(&bias_and_output(has_bias, has_scale, has_residual))
        .code("fn store(v: f32, i: u32) -> f32 { return finish(v, residual(i)); }");
    l.kernel(c.kernel(
        &source,
        spec,
        &c.params,
        None,
        c.node.inputs.clone(),
        (grid(invocations, WG), WG),
    ))
}
