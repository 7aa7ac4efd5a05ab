//! A fused depthwise + pointwise conv2d pair (`Op::DepthwisePointwise`): the
//! depthwise result, with its bias and activations, kept in f32 (the GPU
//! kernel never rounds or writes it), then the 1x1 conv2d with the node's
//! epilogue.

use super::conv::conv2d;
use super::epilogue::Epilogue;
use super::Values;
use crate::ml::ops::{Conv2dOptions, DepthwisePointwiseOptions};
use crate::ml::shape::{conv_filter_ochw, from_nchw, nchw};
use crate::ml::types::OperandDescriptor;

/// `args`: the input (already scaled by a fused input scale), the depthwise
/// filter and bias, the pointwise filter and bias (each bias if any).
pub(crate) fn depthwise_pointwise(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    o: &DepthwisePointwiseOptions,
    ep: Epilogue,
) -> Values {
    let layout = o.depthwise.input_layout;
    let s = &out.shape;
    let [n, _, oh, ow] = nchw(layout, [s[0], s[1], s[2], s[3]]);
    let f = &args[1].1.shape;
    let [c, _, _, _] = conv_filter_ochw(o.depthwise.filter_layout, [f[0], f[1], f[2], f[3]]);
    let mid_desc = OperandDescriptor::new(out.data_type, from_nchw(layout, n, c, oh, ow));
    let pw_at = 2 + o.depthwise_bias as usize;
    let mid = conv2d(
        &args[..pw_at],
        &mid_desc,
        &o.depthwise,
        Epilogue::new(&o.depthwise_activations, false),
    );
    let mut pw_args = vec![(&mid, &mid_desc)];
    pw_args.extend_from_slice(&args[pw_at..pw_at + 1 + o.pointwise_bias as usize]);
    let pointwise = Conv2dOptions {
        input_layout: layout,
        filter_layout: o.pointwise_filter_layout,
        ..Conv2dOptions::new()
    };
    conv2d(&pw_args, out, &pointwise, ep)
}
