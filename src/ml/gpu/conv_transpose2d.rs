//! convTranspose2d in gather form (as the CPU reference): each output
//! element sums the input pixels that the scatter definition would add onto
//! it, so no two invocations write the same address. Layouts are passed as
//! element strides, as for conv2d.

use super::conv2d::{activation_strides, bias_and_output, shape4, u32s};
use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{ConvTranspose2dFilterLayout, ConvTranspose2dOptions, InputLayout};
use crate::ml::shape::{conv_transpose_filter_iohw, nchw};
use crate::ml::types::strides;

const WG: u32 = 64;

kernel_params! {
    /// `struct Params` of conv_transpose2d.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        x_strides: [u32; 4],
        f_strides: [u32; 4],
        stride: [u32; 2],
        dilation: [u32; 2],
        padding: [u32; 2],
        filter_size: [u32; 2],
        total: u32,
        oc: u32,
        ocg: u32,
        oh: u32,
        ow: u32,
        nhwc: u32,
        h: u32,
        w: u32,
        icg: u32,
        _pad: [u32; 3],
    }
}

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
    let params = Params {
        x_strides: activation_strides(o.input_layout, shape4(&xd.shape)),
        f_strides: filter_strides(o.filter_layout, shape4(&fd.shape)),
        stride: u32s(o.strides),
        dilation: u32s(o.dilations),
        padding: u32s([o.padding[0], o.padding[2]]),
        filter_size: u32s([kh, kw]),
        total: total as u32,
        oc: oc as u32,
        ocg: ocg as u32,
        oh: oh as u32,
        ow: ow as u32,
        nhwc: (o.input_layout == InputLayout::Nhwc) as u32,
        h: h as u32,
        w: w as u32,
        icg: (c / o.groups) as u32,
        _pad: [0; 3],
    };
    let has_bias = node.inputs.len() > 2;
    l.kernel(Kernel {
        label: "convTranspose2d".into(),
        source: include_str!("conv_transpose2d.wgsl"),
        spec: Specialization::new().code(&bias_and_output(has_bias, false, false)),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: node.inputs.clone(),
        outputs: vec![y],
        workgroups: grid(total, WG),
        workgroup_size: WG,
    })
}
