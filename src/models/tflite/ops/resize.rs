//! RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (NHWC, constant output size).

use super::{Call, Writer};
use crate::error::Result;
use crate::ml::{
    CoordinateTransform, InterpolationMode, NearestRounding, Operand, Resample2dOptions,
};
use crate::models::tflite::fb;

impl<'a> Writer<'_, 'a> {
    /// LiteRT's coordinate mappings, per flag:
    /// - bilinear: neither flag `x * in / out`; align_corners
    ///   `x * (in - 1) / (out - 1)`; half_pixel_centers
    ///   `(x + 0.5) * in / out - 0.5` (clamped at 0);
    /// - nearest: neither `floor(x * in / out)`; align_corners
    ///   `round(x * (in - 1) / (out - 1))`; half_pixel_centers
    ///   `floor((x + 0.5) * in / out)`.
    pub(super) fn resize(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Operand> {
        let (x, _) = self.input_nhwc(call, 0)?;
        let size = self.const_ints(self.arg(call, 1)?, "the output size")?;
        let sizes = match size[..] {
            [h, w] if h > 0 && w > 0 => [h as usize, w as usize],
            _ => return Err(self.err(format!("output size {size:?} is not [h, w] > 0"))),
        };
        let nearest = builtin == fb::BuiltinOperator::RESIZE_NEAREST_NEIGHBOR;
        let (align, half) = if nearest {
            call.op
                .builtin_options_as_resize_nearest_neighbor_options()
                .map_or((false, false), |o| {
                    (o.align_corners(), o.half_pixel_centers())
                })
        } else {
            call.op
                .builtin_options_as_resize_bilinear_options()
                .map_or((false, false), |o| {
                    (o.align_corners(), o.half_pixel_centers())
                })
        };
        let (coordinate_transform, nearest_rounding) = match (align, half, nearest) {
            (true, true, _) => {
                return Err(self.err("align_corners and half_pixel_centers are both set"))
            }
            (true, false, _) => (
                CoordinateTransform::AlignCorners,
                NearestRounding::RoundPreferCeil,
            ),
            (false, true, false) => (CoordinateTransform::HalfPixel, NearestRounding::Floor),
            (false, true, true) => (
                CoordinateTransform::TfHalfPixelForNn,
                NearestRounding::Floor,
            ),
            (false, false, _) => (CoordinateTransform::Asymmetric, NearestRounding::Floor),
        };
        let options = Resample2dOptions {
            mode: if nearest {
                InterpolationMode::NearestNeighbor
            } else {
                InterpolationMode::Linear
            },
            sizes: Some(sizes),
            axes: [1, 2],
            coordinate_transform,
            nearest_rounding,
            ..Resample2dOptions::default()
        };
        self.ctx(self.b.resample2d(&x, options))
    }
}
