//! resample2d (nearest and linear). The source coordinates depend only on
//! the output row (or column), so they are computed here once per row and
//! column, with the same f32 arithmetic as the CPU reference, and handed to
//! the shader as tables: the GPU then cannot round a coordinate differently
//! (its division and `round` differ from Rust's at exact halves).

use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{CoordinateTransform, InterpolationMode, Resample2dOptions};
use crate::ml::types::strides;

const WG: u32 = 64;

/// Source coordinate of output coordinate `dst` (mirrors `cpu::resample::source`).
fn source(
    dst: usize,
    in_len: usize,
    out_len: usize,
    scale: f32,
    t: CoordinateTransform,
    mode: InterpolationMode,
) -> f32 {
    let d = dst as f32;
    match (t, mode) {
        (CoordinateTransform::AlignCorners, _) => {
            if out_len > 1 {
                d * (in_len - 1) as f32 / (out_len - 1) as f32
            } else {
                0.0
            }
        }
        (CoordinateTransform::HalfPixel, InterpolationMode::Linear) => (d + 0.5) / scale - 0.5,
        (CoordinateTransform::HalfPixel, InterpolationMode::NearestNeighbor) => (d + 0.5) / scale,
        (CoordinateTransform::Asymmetric, _) => d / scale,
    }
}

/// Per output coordinate along one axis: [i0, i1, weight of i1 as f32 bits].
fn table(in_len: usize, out_len: usize, scale: f32, o: &Resample2dOptions) -> Vec<u32> {
    let mut t = Vec::with_capacity(3 * out_len);
    for d in 0..out_len {
        let s = source(d, in_len, out_len, scale, o.coordinate_transform, o.mode);
        let (i0, i1, f) = match o.mode {
            InterpolationMode::NearestNeighbor => {
                let v = if o.coordinate_transform == CoordinateTransform::AlignCorners {
                    s.round()
                } else {
                    s.floor()
                };
                let i = (v.max(0.0) as usize).min(in_len - 1);
                (i, i, 0.0f32)
            }
            InterpolationMode::Linear => {
                let s = s.clamp(0.0, (in_len - 1) as f32);
                let i0 = s.floor() as usize;
                (i0, (i0 + 1).min(in_len - 1), s - i0 as f32)
            }
        };
        t.extend([i0 as u32, i1 as u32, f.to_bits()]);
    }
    t
}

pub(super) fn resample2d(l: &mut Lowering, node: &Node, o: &Resample2dOptions) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(y).clone();
    let [ay, ax] = o.axes;
    let (ih, iw, oh, ow) = (xd.shape[ay], xd.shape[ax], yd.shape[ay], yd.shape[ax]);
    let scales = match o.sizes {
        Some(_) => [0, 1].map(|i| yd.shape[o.axes[i]] as f32 / xd.shape[o.axes[i]] as f32),
        None => o.scales,
    };
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
