//! convTranspose2d in gather form (as the CPU reference): each output
//! element sums the input pixels that the scatter definition would add onto
//! it, so no two invocations write the same address. Layouts are passed as
//! element strides, as for conv2d.

use super::conv2d::{activation_strides, bias_and_output, shape4};
use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{ConvTranspose2dFilterLayout, ConvTranspose2dOptions, InputLayout};
use crate::ml::shape::{conv_transpose_filter_iohw, nchw};
use crate::ml::types::strides;

const WG: u32 = 64;

/// Filter element strides in (i, o, h, w) order.
fn filter_strides(layout: ConvTranspose2dFilterLayout, shape: [usize; 4]) -> [u32; 4] {
    let s = strides(&shape)
        .into_iter()
        .map(|v| v as u32)
        .collect::<Vec<_>>();
    match layout {
        ConvTranspose2dFilterLayout::Iohw => [s[0], s[1], s[2], s[3]],
        ConvTranspose2dFilterLayout::Hwoi => [s[3], s[2], s[0], s[1]],
        ConvTranspose2dFilterLayout::Ohwi => [s[3], s[0], s[1], s[2]],
    }
}

pub(super) fn conv_transpose2d(
    l: &mut Lowering,
    node: &Node,
    o: &ConvTranspose2dOptions,
) -> Result<()> {
    let (x, f, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let fd = l.ir.desc(f).clone();
    let yd = l.ir.desc(y).clone();
    let [_, c, h, w] = nchw(o.input_layout, shape4(&xd.shape));
    let [_, ocg, kh, kw] = conv_transpose_filter_iohw(o.filter_layout, shape4(&fd.shape));
    let [_, oc, oh, ow] = nchw(o.input_layout, shape4(&yd.shape));
    let total = yd.element_count();
    let mut params: Vec<u32> = [
        total,
        oc,
        oh,
        ow,
        (o.input_layout == InputLayout::Nhwc) as usize,
        h,
        w,
        c / o.groups,
        kh,
        kw,
        o.strides[0],
        o.strides[1],
        o.dilations[0],
        o.dilations[1],
        o.padding[0],
        o.padding[2],
        ocg,
    ]
    .iter()
    .map(|&v| v as u32)
    .collect();
    params.extend(activation_strides(o.input_layout, shape4(&xd.shape)));
    params.extend(filter_strides(o.filter_layout, shape4(&fd.shape)));
    let has_bias = node.inputs.len() > 2;
    let source = bias_and_output(has_bias, false, false) + include_str!("conv_transpose2d.wgsl");
    l.kernel(Kernel {
        label: "convTranspose2d".into(),
        source: &source,
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params,
        inputs: node.inputs.clone(),
        outputs: vec![y],
        workgroups: grid(total, WG),
        workgroup_size: WG,
    })
}
