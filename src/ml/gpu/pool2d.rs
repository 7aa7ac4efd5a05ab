//! averagePool2d / maxPool2d: one invocation per output element, except
//! global pooling (one window over the whole unpadded input), which is a
//! parallel reduction. Averages count only the window positions inside the
//! input (padding excluded), as TFLite and the CPU reference do.

use super::conv2d::{activation_strides, shape4};
use super::lower::{grid, Kernel, Lowering};
use super::reduce::{reduce, reduction_source};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{InputLayout, Pool2dOptions, PoolKind};
use crate::ml::shape::nchw;

const WG: u32 = 64;

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
    let mut params: Vec<u32> = [
        total,
        c,
        oh,
        ow,
        (o.layout == InputLayout::Nhwc) as usize,
        h,
        w,
        kh,
        kw,
        o.strides[0],
        o.strides[1],
        o.dilations[0],
        o.dilations[1],
        o.padding[0],
        o.padding[2],
    ]
    .iter()
    .map(|&v| v as u32)
    .collect();
    params.extend(activation_strides(o.layout, shape4(&xd.shape)));
    let source = format!("{}{}", reduction_source(kind), include_str!("pool2d.wgsl"));
    l.kernel(Kernel {
        label: node.op.name().into(),
        source: &source,
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(total, WG),
        workgroup_size: WG,
    })
}
