//! Where each output coordinate of `resample2d` reads from, along one axis.
//! Both back ends take their taps from here, so they cannot round a source
//! coordinate differently (WGSL's `round` and division differ from Rust's at
//! exact halves).

use super::ops::{CoordinateTransform, InterpolationMode, Resample2dOptions};
use super::types::OperandDescriptor;

/// One output coordinate's inputs: `value = in[i0] * (1 - w) + in[i1] * w`
/// (nearest neighbour has `i0 == i1`, `w == 0`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tap {
    pub i0: usize,
    pub i1: usize,
    pub w: f32,
}

/// Source coordinate of output coordinate `dst` along one axis.
fn source(dst: usize, in_len: usize, out_len: usize, scale: f32, o: &Resample2dOptions) -> f32 {
    let d = dst as f32;
    match (o.coordinate_transform, o.mode) {
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

/// The scale along each resampled axis: the given one, or out/in when sizes were given.
pub(crate) fn scales(
    input: &OperandDescriptor,
    output: &OperandDescriptor,
    o: &Resample2dOptions,
) -> [f32; 2] {
    match o.sizes {
        Some(_) => [0, 1].map(|i| output.shape[o.axes[i]] as f32 / input.shape[o.axes[i]] as f32),
        None => o.scales,
    }
}

/// The taps of every output coordinate along one axis.
pub(crate) fn taps(in_len: usize, out_len: usize, scale: f32, o: &Resample2dOptions) -> Vec<Tap> {
    (0..out_len)
        .map(|d| {
            let s = source(d, in_len, out_len, scale, o);
            match o.mode {
                InterpolationMode::NearestNeighbor => {
                    let v = if o.coordinate_transform == CoordinateTransform::AlignCorners {
                        s.round()
                    } else {
                        s.floor()
                    };
                    let i = (v.max(0.0) as usize).min(in_len - 1);
                    Tap {
                        i0: i,
                        i1: i,
                        w: 0.0,
                    }
                }
                InterpolationMode::Linear => {
                    let s = s.clamp(0.0, (in_len - 1) as f32);
                    let i0 = s.floor() as usize;
                    Tap {
                        i0,
                        i1: (i0 + 1).min(in_len - 1),
                        w: s - i0 as f32,
                    }
                }
            }
        })
        .collect()
}
