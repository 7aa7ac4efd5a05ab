//! resample2d (nearest and linear). The source coordinates depend only on
//! the output row (or column), so they are computed once per row and column
//! by `ml::resample_taps` (the CPU reference's own code) and handed to the
//! shader as tables, in a storage buffer of their own (their length follows
//! the output size, which a uniform's fixed struct cannot).

use super::conv2d::{shape4, u32s};
use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::Resample2dOptions;
use crate::ml::resample_taps::{scales, taps};
use crate::ml::types::strides;

const WG: u32 = 64;

kernel_params! {
    /// `struct Params` of resample2d.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        out_shape: [u32; 4],
        x_strides: [u32; 4],
        total: u32,
        axis_y: u32,
        axis_x: u32,
        _pad: u32,
    }
}

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
    let params = Params {
        out_shape: u32s(shape4(&yd.shape)),
        x_strides: u32s(shape4(&strides(&xd.shape))),
        total: total as u32,
        axis_y: ay as u32,
        axis_x: ax as u32,
        _pad: 0,
    };
    let mut taps = table(ih, oh, scales[0], o);
    taps.extend(table(iw, ow, scales[1], o));
    l.kernel(Kernel {
        label: "resample2d".into(),
        source: include_str!("resample2d.wgsl"),
        spec: Specialization::new(),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: Some(taps),
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(total, WG),
        workgroup_size: WG,
    })
}
