//! From a model's first input to the tensorize options that fill it from a
//! frame.

use crate::error::{Error, Result};
use crate::ml::DataType;
use crate::models::Model;
use crate::video::{ChannelOrder, ColorSpec, Normalize, Resize, TensorLayout, TensorizeOptions};

use super::InferResize;

/// Parses "lo,hi" (e.g. "0,1", "-1,1", "0,255").
pub fn parse_range(s: &str) -> Result<[f32; 2]> {
    let bad = || {
        Error::invalid(format!(
            "input-range '{s}': give two numbers 'min,max' with min < max, e.g. 0,1 or -1,1"
        ))
    };
    let (lo, hi) = s.split_once(',').ok_or_else(bad)?;
    let lo: f32 = lo.trim().parse().map_err(|_| bad())?;
    let hi: f32 = hi.trim().parse().map_err(|_| bad())?;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(bad());
    }
    Ok([lo, hi])
}

/// The input's layout and size: NHWC [1, H, W, 3] or NCHW [1, 3, H, W];
/// `None` sizes are the frame's.
pub fn options_for(
    model: &Model,
    frame: (u32, u32),
    range: Option<[f32; 2]>,
    resize: InferResize,
    bgr: bool,
    color: ColorSpec,
) -> Result<(TensorizeOptions, Option<(usize, usize)>)> {
    let input = model.inputs().first().ok_or_else(|| {
        Error::invalid(format!(
            "{}: the model has no input",
            model.path().display()
        ))
    })?;
    if input.data_type != DataType::Float32 {
        return Err(Error::invalid(format!(
            "{}: input '{}' is {}; wgnninfer fills float32 image inputs",
            model.path().display(),
            input.name,
            input.data_type
        )));
    }
    let (layout, h, w) = match input.shape.as_slice() {
        [_, h, w, Some(3)] => (TensorLayout::Nhwc, *h, *w),
        [_, Some(3), h, w] => (TensorLayout::Nchw, *h, *w),
        other => {
            return Err(Error::invalid(format!(
                "{}: input '{}' has shape {other:?}, not an RGB image [1, H, W, 3] or [1, 3, H, W]",
                model.path().display(),
                input.name
            )))
        }
    };
    let declared = h.zip(w);
    let (iw, ih) = match declared {
        Some((h, w)) => (w as u32, h as u32),
        None => frame,
    };
    let [lo, hi] = range.or(input.range).unwrap_or([0.0, 1.0]);
    let mut options = TensorizeOptions::new(iw, ih);
    options.layout = layout;
    options.normalize = Normalize {
        scale: [(hi - lo) / 255.0; 3],
        offset: [lo; 3],
    };
    options.resize = match resize {
        InferResize::Stretch => Resize::Stretch,
        InferResize::Letterbox => Resize::Letterbox { pad: [0; 3] },
        InferResize::Crop => Resize::CenterCrop,
    };
    options.channels = if bgr {
        ChannelOrder::Bgr
    } else {
        ChannelOrder::Rgb
    };
    options.color = color;
    // A model that takes any size is built for the frame's.
    let build_hw = match declared {
        Some(_) => None,
        None => Some((ih as usize, iw as usize)),
    };
    Ok((options, build_hw))
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn ranges() {
        assert_eq!(parse_range("0,1").unwrap(), [0.0, 1.0]);
        assert_eq!(parse_range(" -1 , 1 ").unwrap(), [-1.0, 1.0]);
        for bad in ["", "1", "1,0", "a,b", "0,inf", "0,1,2"] {
            assert!(parse_range(bad).is_err(), "{bad}");
        }
    }
}
