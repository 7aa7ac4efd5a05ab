//! Where each output coordinate of `resample2d` reads from, along one axis.
//! Both back ends take their taps from here, so they cannot round a source
//! coordinate differently (WGSL's `round` and division differ from Rust's at
//! exact halves).

use super::ops::{CoordinateTransform, InterpolationMode, NearestRounding, Resample2dOptions};
use super::types::OperandDescriptor;

/// One output coordinate's inputs: `value = in[i0] * (1 - w) + in[i1] * w`
/// (nearest neighbour has `i0 == i1`, `w == 0`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tap {
    pub i0: usize,
    pub i1: usize,
    pub w: f32,
}

/// Source coordinate of output coordinate `dst` along one axis (ONNX
/// Resize's coordinate transformations, the same for both modes).
fn source(dst: usize, in_len: usize, out_len: usize, scale: f32, o: &Resample2dOptions) -> f32 {
    let d = dst as f32;
    match o.coordinate_transform {
        CoordinateTransform::AlignCorners => {
            // ONNX divides by the unrounded resized length when scales are
            // given (in * scale, e.g. 2.4 for 4 x 0.6), and by out - 1 when
            // sizes are: exactly out - 1 then, with no rounding in between.
            let resized = match o.sizes {
                Some(_) => out_len as f32,
                None => in_len as f32 * scale,
            };
            if out_len > 1 && resized > 1.0 {
                d * (in_len - 1) as f32 / (resized - 1.0)
            } else {
                0.0
            }
        }
        CoordinateTransform::HalfPixel => (d + 0.5) / scale - 0.5,
        CoordinateTransform::PytorchHalfPixel => {
            if out_len > 1 {
                (d + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        CoordinateTransform::TfHalfPixelForNn => (d + 0.5) / scale,
        CoordinateTransform::Asymmetric => d / scale,
    }
}

/// The input index nearest to source coordinate `s`, before clamping
/// (onnxruntime's `GetNearestPixelFromOriginal`). `s - s.floor()` is exact,
/// so halves are seen exactly.
fn nearest(s: f32, rounding: NearestRounding) -> f32 {
    match rounding {
        NearestRounding::RoundPreferFloor if s - s.floor() == 0.5 => s.floor(),
        // Halves away from zero, which is up for every coordinate that is
        // not clamped to 0 anyway.
        NearestRounding::RoundPreferFloor | NearestRounding::RoundPreferCeil => s.round(),
        NearestRounding::Floor => s.floor(),
        NearestRounding::Ceil => s.ceil(),
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
                    let v = nearest(s, o.nearest_rounding);
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

#[cfg(test)]
mod tests {
    //! The default nearest rounding against the formulas resample2d had
    //! before rounding modes existed (the golden models depend on them), and
    //! each rounding at its halves.

    use super::*;

    fn nearest_taps(
        t: CoordinateTransform,
        r: NearestRounding,
        in_len: usize,
        out_len: usize,
        scale: f32,
    ) -> Vec<usize> {
        let o = Resample2dOptions {
            coordinate_transform: t,
            nearest_rounding: r,
            ..Default::default()
        };
        taps(in_len, out_len, scale, &o)
            .iter()
            .map(|t| t.i0)
            .collect()
    }

    #[test]
    fn default_rounding_keeps_the_old_half_pixel_taps() {
        let clamp = |v: f32, in_len: usize| (v.max(0.0) as usize).min(in_len - 1);
        for in_len in 1..40 {
            for out_len in 1..90 {
                let scale = out_len as f32 / in_len as f32;
                for scale in [scale, 2.0, 0.5, 1.7, 3.0] {
                    let old: Vec<usize> = (0..out_len)
                        .map(|d| clamp(((d as f32 + 0.5) / scale).floor(), in_len))
                        .collect();
                    let new = nearest_taps(
                        CoordinateTransform::HalfPixel,
                        NearestRounding::default(),
                        in_len,
                        out_len,
                        scale,
                    );
                    assert_eq!(new, old, "half-pixel {in_len} -> {out_len} at {scale}");
                    // TF's half_pixel_centers for nearest is the same old mapping.
                    let tf = nearest_taps(
                        CoordinateTransform::TfHalfPixelForNn,
                        NearestRounding::Floor,
                        in_len,
                        out_len,
                        scale,
                    );
                    assert_eq!(tf, old, "tf half-pixel {in_len} -> {out_len} at {scale}");
                    let old: Vec<usize> = (0..out_len)
                        .map(|d| clamp((d as f32 / scale).floor(), in_len))
                        .collect();
                    let asymmetric = nearest_taps(
                        CoordinateTransform::Asymmetric,
                        NearestRounding::Floor,
                        in_len,
                        out_len,
                        scale,
                    );
                    assert_eq!(asymmetric, old, "asymmetric {in_len} -> {out_len}");
                }
            }
        }
    }

    #[test]
    fn roundings_differ_only_at_halves_and_between_integers() {
        use NearestRounding::*;
        // Asymmetric x2 of 3: sources 0, 0.5, 1, 1.5, 2, 2.5.
        let at = |r| nearest_taps(CoordinateTransform::Asymmetric, r, 3, 6, 2.0);
        assert_eq!(at(RoundPreferFloor), [0, 0, 1, 1, 2, 2]);
        assert_eq!(at(RoundPreferCeil), [0, 1, 1, 2, 2, 2]);
        assert_eq!(at(Floor), [0, 0, 1, 1, 2, 2]);
        assert_eq!(at(Ceil), [0, 1, 1, 2, 2, 2]);
        // x3 of 2: sources 0, 1/3, 2/3, 1, 4/3, 5/3.
        let at = |r| nearest_taps(CoordinateTransform::Asymmetric, r, 2, 6, 3.0);
        assert_eq!(at(RoundPreferFloor), [0, 0, 1, 1, 1, 1]);
        assert_eq!(at(Floor), [0, 0, 0, 1, 1, 1]);
        assert_eq!(at(Ceil), [0, 1, 1, 1, 1, 1]);
        // pytorch_half_pixel maps a 1-wide output to 0, half_pixel to the
        // middle.
        let one = |t| nearest_taps(t, Floor, 5, 1, 0.2);
        assert_eq!(one(CoordinateTransform::PytorchHalfPixel), [0]);
        assert_eq!(one(CoordinateTransform::HalfPixel), [2]);
    }

    #[test]
    fn align_corners_divides_by_the_unrounded_length_when_scales_are_given() {
        // ONNX test_resize_downsample_scales_linear_align_corners: a row of
        // 4 scaled by 0.6 is 2 long, and its second sample sits at
        // 1 * 3 / (2.4 - 1) = 2.142857 (linear: 2 x 0.857 + 3 x 0.143).
        let mut o = Resample2dOptions {
            mode: InterpolationMode::Linear,
            coordinate_transform: CoordinateTransform::AlignCorners,
            ..Default::default()
        };
        let at = |t: &Tap| t.i0 as f32 * (1.0 - t.w) + t.i1 as f32 * t.w;
        let t = taps(4, 2, 0.6, &o);
        assert!((at(&t[1]) - 15.0 / 7.0).abs() < 1e-5, "{t:?}");
        // Given sizes, the same 4 -> 2 spans the row: the second sample is 3.
        o.sizes = Some([1, 2]);
        let t = taps(4, 2, 0.5, &o);
        assert!((at(&t[1]) - 3.0).abs() < 1e-6, "{t:?}");
    }
}
