//! resample2d (nearest and linear). The source coordinates depend only on
//! the output row (or column), so they are computed once per row and column
//! by `ml::resample_taps` (the CPU reference's own code) and handed to the
//! shader as tables.

use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::ops::Resample2dOptions;
use crate::ml::resample_taps::{scales, taps};
use crate::ml::types::strides;

const WG: u32 = 64;

/// Per output coordinate along one axis: [i0, i1, weight of i1 as f32 bits].
fn table(in_len: usize, out_len: usize, scale: f32, o: &Resample2dOptions) -> Vec<u32> {
    taps(in_len, out_len, scale, o)
        .into_iter()
        .flat_map(|t| [t.i0 as u32, t.i1 as u32, t.w.to_bits()])
        .collect()
}

pub(super) fn resample2d(l: &mut Lowering, node: &Node, o: &Resample2dOptions) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(y).clone();
    let [ay, ax] = o.axes;
    let (ih, iw, oh, ow) = (xd.shape[ay], xd.shape[ax], yd.shape[ay], yd.shape[ax]);
    let scales = scales(&xd, &yd, o);
    let total = yd.element_count();
    let xs = strides(&xd.shape);
    let mut params: Vec<u32> = vec![total as u32, ay as u32, ax as u32];
    params.extend(yd.shape.iter().map(|&v| v as u32));
    params.extend(xs.iter().map(|&v| v as u32));
    params.extend(table(ih, oh, scales[0], o));
    params.extend(table(iw, ow, scales[1], o));
    l.kernel(Kernel {
        label: "resample2d".into(),
        source: include_str!("resample2d.wgsl"),
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
