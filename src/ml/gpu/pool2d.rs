//! averagePool2d / maxPool2d: one invocation per output element, except
//! global pooling (one window over the whole unpadded input), which is a
//! parallel reduction. Averages count only the window positions inside the
//! input (padding excluded), as TFLite and the CPU reference do, or with
//! `count_include_pad` those inside input + padding.

use super::conv2d::{activation_strides, shape4, u32s};
use super::lower::{grid, kernel_params, Kernel, Lowering};
use super::reduce::{reduce, reduction};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{InputLayout, Pool2dOptions, PoolKind};
use crate::ml::shape::nchw;

const WG: u32 = 64;

kernel_params! {
    /// `struct Params` of pool2d.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        x_strides: [u32; 4],
        stride: [u32; 2],
        dilation: [u32; 2],
        padding: [u32; 2],
        window: [u32; 2],
        total: u32,
        c: u32,
        oh: u32,
        ow: u32,
        nhwc: u32,
        h: u32,
        w: u32,
        include_pad: u32,
        padded: [u32; 2],
        _pad: [u32; 2],
    }
}

pub(super) fn pool2d(
    l: &mut Lowering,
    node: &Node,
    kind: PoolKind,
    o: &Pool2dOptions,
) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(y).clone();
    let [_, c, h, w] = nchw(o.layout, shape4(&xd.shape));
    let [_, _, oh, ow] = nchw(o.layout, shape4(&yd.shape));
    let [kh, kw] = o.window_dimensions.unwrap_or([h, w]);
    if [oh, ow] == [1, 1] && [kh, kw] == [h, w] && o.padding == [0; 4] && o.dilations == [1, 1] {
        let spatial = match o.layout {
            InputLayout::Nchw => [2, 3],
            InputLayout::Nhwc => [1, 2],
        };
        return reduce(l, node, &spatial, kind);
    }
    let total = yd.element_count();
    let params = Params {
        x_strides: activation_strides(o.layout, shape4(&xd.shape)),
        stride: u32s(o.strides),
        dilation: u32s(o.dilations),
        padding: u32s([o.padding[0], o.padding[2]]),
        window: u32s([kh, kw]),
        total: total as u32,
        c: c as u32,
        oh: oh as u32,
        ow: ow as u32,
        nhwc: (o.layout == InputLayout::Nhwc) as u32,
        h: h as u32,
        w: w as u32,
        include_pad: o.count_include_pad as u32,
        padded: u32s([
            h + o.padding[0] + o.padding[1],
            w + o.padding[2] + o.padding[3],
        ]),
        _pad: [0; 2],
    };
    l.kernel(Kernel {
        label: node.op.name().into(),
        source: include_str!("pool2d.wgsl"),
        spec: reduction(kind),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(total, WG),
        workgroup_size: WG,
    })
}
