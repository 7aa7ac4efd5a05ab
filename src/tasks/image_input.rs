//! How a video frame becomes a model's input: the one place that reads a
//! model's image input and works out the tensorize options that fill it.

use crate::error::{Error, Result};
use crate::ml::DataType;
use crate::models::Model;
use crate::video::{
    ChannelOrder, ColorSpec, Normalize, OutputDtype, Resize, Sampling, TensorLayout,
    TensorizeOptions,
};

/// A model's image input: its first input shaped as an RGB tensor
/// [1, H, W, 3] (NHWC) or [1, 3, H, W] (NCHW), of float32 or float16.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageInput {
    /// The input's name in the model (and in its graphs).
    pub name: String,
    /// (width, height) the model declares; `None`: it takes any size, and a
    /// frame goes in at its own size.
    pub size: Option<(u32, u32)>,
    pub layout: TensorLayout,
    /// The values the model expects for black and for full intensity: the
    /// model family's convention ([`TensorInfo::range`]), 0..1 where the
    /// model records none.
    ///
    /// [`TensorInfo::range`]: crate::models::TensorInfo::range
    pub range: [f32; 2],
    /// Models do not record their channel order; RGB unless a caller knows
    /// better ([`ImageInput::bgr`]).
    pub channels: ChannelOrder,
    pub data_type: DataType,
    /// Per-channel (mean, std) applied after `range`: `(v - mean) / std`.
    pub mean_std: Option<([f32; 3], [f32; 3])>,
    /// Where each input pixel samples the frame (half-pixel unless the
    /// model was trained on another resizer's output).
    pub sampling: Sampling,
    /// `size` was chosen for a model that takes any size
    /// ([`ImageInput::with_size`]), not declared by it.
    chosen_size: bool,
}

impl ImageInput {
    /// Finds `model`'s image input; an error names the model and says why it
    /// has none, or has other inputs a frame cannot fill.
    pub fn of(model: &Model) -> Result<ImageInput> {
        let bad = |what: String| {
            Error::invalid(format!(
                "{}: not an image model: {what}",
                model.path().display()
            ))
        };
        let inputs = model.inputs();
        if inputs.is_empty() {
            return Err(bad("it has no input".into()));
        }
        // The image is the first input shaped like one; a frame can fill
        // only that one, so a model with inputs besides it is refused.
        let found = inputs
            .iter()
            .find_map(|i| image_layout(&i.shape).map(|l| (i, l)));
        let Some((input, (layout, h, w))) = found else {
            let input = &inputs[0];
            return Err(bad(format!(
                "input '{}' has shape {}, not an RGB image [1, H, W, 3] or [1, 3, H, W]",
                input.name,
                shape_text(&input.shape)
            )));
        };
        if let Some(other) = inputs.iter().find(|i| i.name != input.name) {
            return Err(bad(format!(
                "besides the image input '{}' it has input '{}' {}, which a frame cannot fill",
                input.name,
                other.name,
                shape_text(&other.shape)
            )));
        }
        if !matches!(input.data_type, DataType::Float32 | DataType::Float16) {
            return Err(bad(format!(
                "input '{}' is {}; a frame becomes a float32 or float16 tensor",
                input.name, input.data_type
            )));
        }
        let size = match (w, h) {
            (Some(w), Some(h)) => {
                let dim = |d: usize| u32::try_from(d).ok().filter(|&d| d > 0);
                let (Some(w), Some(h)) = (dim(w), dim(h)) else {
                    return Err(bad(format!(
                        "input '{}' is {w}x{h}, not a usable image size",
                        input.name
                    )));
                };
                Some((w, h))
            }
            _ => None,
        };
        Ok(ImageInput {
            name: input.name.clone(),
            size,
            layout,
            range: input.range.unwrap_or([0.0, 1.0]),
            channels: ChannelOrder::Rgb,
            data_type: input.data_type,
            mean_std: None,
            sampling: Sampling::HalfPixel,
            chosen_size: false,
        })
    }

    /// The same input fed at `size` (width, height) where the model takes
    /// any size (`None`: at the frame's size); a model of a declared size
    /// must declare this one.
    pub fn with_size(mut self, size: Option<(u32, u32)>) -> Result<ImageInput> {
        match (size, self.size) {
            (None, _) => {}
            (Some(want), None) => {
                self.size = Some(want);
                self.chosen_size = true;
            }
            (Some(want), Some(declared)) if want != declared => {
                return Err(Error::invalid(format!(
                    "input size {}x{} was asked for, but input '{}' is {}x{}",
                    want.0, want.1, self.name, declared.0, declared.1
                )))
            }
            (Some(_), Some(_)) => {}
        }
        Ok(self)
    }

    /// The same input with the values in `range` (`None`: as it was).
    pub fn with_range(mut self, range: Option<[f32; 2]>) -> ImageInput {
        if let Some(r) = range {
            self.range = r;
        }
        self
    }

    /// The same input fed in BGR order when `bgr`.
    pub fn bgr(mut self, bgr: bool) -> ImageInput {
        if bgr {
            self.channels = ChannelOrder::Bgr;
        }
        self
    }

    /// The same input with `(v - mean) / std` per channel after the range
    /// (`None`: as it was).
    pub fn with_mean_std(mut self, mean_std: Option<([f32; 3], [f32; 3])>) -> ImageInput {
        if mean_std.is_some() {
            self.mean_std = mean_std;
        }
        self
    }

    /// The same input sampled as `sampling` says.
    pub fn with_sampling(mut self, sampling: Sampling) -> ImageInput {
        self.sampling = sampling;
        self
    }

    /// 8-bit colour values (0..255) to the model's range, then mean and std.
    pub fn normalize(&self) -> Normalize {
        let [lo, hi] = self.range;
        let (mean, std) = self.mean_std.unwrap_or(([0.0; 3], [1.0; 3]));
        Normalize {
            scale: [0, 1, 2].map(|c| (hi - lo) / 255.0 / std[c]),
            offset: [0, 1, 2].map(|c| (lo - mean[c]) / std[c]),
        }
    }

    /// (width, height) of the tensor for a `frame` (width, height) frame: the
    /// declared size, or the frame's where the model takes any.
    pub fn size_for(&self, frame: (u32, u32)) -> (u32, u32) {
        self.size.unwrap_or(frame)
    }

    /// The (height, width) to build the model's graph with for a `frame`
    /// (width, height) frame: `None` (the declared size) unless the model
    /// takes any size (then the chosen size, else the frame's).
    pub fn build_size(&self, frame: (u32, u32)) -> Option<(usize, usize)> {
        match self.size {
            Some((w, h)) if self.chosen_size => Some((h as usize, w as usize)),
            Some(_) => None,
            None => Some((frame.1 as usize, frame.0 as usize)),
        }
    }

    /// The tensor's shape for a `frame` (width, height) frame.
    pub fn shape_for(&self, frame: (u32, u32)) -> [usize; 4] {
        let (w, h) = self.size_for(frame);
        let (w, h) = (w as usize, h as usize);
        match self.layout {
            TensorLayout::Nhwc => [1, h, w, 3],
            TensorLayout::Nchw => [1, 3, h, w],
        }
    }

    /// What the tensorizer (GPU or `video::cpu`) is configured with to fill
    /// this input from a `frame` (width, height) frame whose YUV colours
    /// follow `color`, fitted as `resize` says.
    pub fn tensorize_options(
        &self,
        frame: (u32, u32),
        color: ColorSpec,
        resize: Resize,
    ) -> TensorizeOptions {
        let (w, h) = self.size_for(frame);
        let mut options = TensorizeOptions::new(w, h);
        options.layout = self.layout;
        options.dtype = match self.data_type {
            DataType::Float16 => OutputDtype::F16,
            _ => OutputDtype::F32,
        };
        options.resize = resize;
        options.normalize = self.normalize();
        options.color = color;
        options.channels = self.channels;
        options.sampling = self.sampling;
        options
    }
}

/// (layout, height, width) of an RGB image input shape; batch 1 or any.
fn image_layout(shape: &[Option<usize>]) -> Option<(TensorLayout, Option<usize>, Option<usize>)> {
    match *shape {
        [None | Some(1), h, w, Some(3)] => Some((TensorLayout::Nhwc, h, w)),
        [None | Some(1), Some(3), h, w] => Some((TensorLayout::Nchw, h, w)),
        _ => None,
    }
}

/// A model's shape as users read it: `?` where any size goes.
pub(crate) fn shape_text(shape: &[Option<usize>]) -> String {
    let dims: Vec<String> = shape
        .iter()
        .map(|d| d.map_or("?".into(), |d| d.to_string()))
        .collect();
    format!("[{}]", dims.join(", "))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::models;

    #[test]
    fn the_bundled_models_are_image_inputs() {
        let selfie = models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap();
        let input = ImageInput::of(&selfie).unwrap();
        assert_eq!(input.size, Some((256, 256)));
        assert_eq!(input.layout, TensorLayout::Nhwc);
        assert_eq!(input.range, [0.0, 1.0]);
        assert_eq!(input.channels, ChannelOrder::Rgb);
        assert_eq!(input.data_type, DataType::Float32);
        assert_eq!(input.name, selfie.inputs()[0].name);
        assert_eq!(input.shape_for((640, 480)), [1, 256, 256, 3]);
        assert_eq!(input.build_size((640, 480)), None);
        let o = input.tensorize_options((640, 480), ColorSpec::default(), Resize::Stretch);
        assert_eq!((o.width, o.height), (256, 256));
        assert_eq!(o.normalize, Normalize::ZERO_ONE);

        let esrgan = models::load(models::bundled("esrgan-slim/x2/model.json")).unwrap();
        let input = ImageInput::of(&esrgan).unwrap();
        assert_eq!(input.size, None, "TF.js ESRGAN takes any size");
        assert_eq!(input.layout, TensorLayout::Nhwc);
        assert_eq!(input.range, [0.0, 255.0]);
        assert_eq!(input.normalize(), Normalize::RAW);
        assert_eq!(input.shape_for((12, 10)), [1, 10, 12, 3]);
        assert_eq!(input.build_size((12, 10)), Some((10, 12)));
        let o = input.tensorize_options((12, 10), ColorSpec::default(), Resize::CenterCrop);
        assert_eq!((o.width, o.height, o.resize), (12, 10, Resize::CenterCrop));
    }

    #[test]
    fn overrides_change_range_and_channel_order() {
        let selfie = models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap();
        let input = ImageInput::of(&selfie)
            .unwrap()
            .with_range(Some([-1.0, 1.0]))
            .bgr(true);
        assert_eq!(input.normalize(), Normalize::MINUS_ONE_ONE);
        let o = input.tensorize_options((8, 8), ColorSpec::default(), Resize::Stretch);
        assert_eq!(o.channels, ChannelOrder::Bgr);
        assert_eq!(input.clone().with_range(None).range, [-1.0, 1.0]);
    }

    /// A real model file whose input is no RGB image: 8 channels.
    pub(crate) fn eight_channel_model() -> Model {
        let dir = std::env::temp_dir().join(format!("wgnn-tasks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("eight_channels.json");
        let json = r#"{
          "format": "layers-model",
          "modelTopology": {"model_config": {"class_name": "Functional", "config": {
            "name": "m",
            "layers": [
              {"class_name": "InputLayer", "name": "in", "inbound_nodes": [],
               "config": {"batch_input_shape": [null, null, null, 8], "name": "in"}},
              {"class_name": "PixelShuffle", "name": "ps", "inbound_nodes": [[["in", 0, 0, {}]]],
               "config": {"name": "ps", "scale": 2}}
            ],
            "input_layers": [["in", 0, 0]], "output_layers": [["ps", 0, 0]]}}},
          "weightsManifest": []
        }"#;
        std::fs::write(&path, json).unwrap();
        models::load(&path).unwrap()
    }

    #[test]
    fn a_model_without_an_image_input_is_refused_naming_the_cause() {
        let model = eight_channel_model();
        let err = ImageInput::of(&model).unwrap_err().to_string();
        assert!(
            err.contains("eight_channels.json: not an image model"),
            "{err}"
        );
        assert!(
            err.contains("has shape [?, ?, ?, 8], not an RGB image [1, H, W, 3] or [1, 3, H, W]"),
            "{err}"
        );

        let mut selfie =
            models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap();
        selfie.set_input_range(0, None).unwrap();
        assert_eq!(ImageInput::of(&selfie).unwrap().range, [0.0, 1.0]);
    }

    #[test]
    fn mean_and_std_follow_the_range_as_torchvision_applies_them() {
        let selfie = models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap();
        let (mean, std) = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]);
        let input = ImageInput::of(&selfie)
            .unwrap()
            .with_mean_std(Some((mean, std)));
        let n = input.normalize();
        let torchvision = Normalize::mean_std(mean, std);
        for c in 0..3 {
            for x in [0.0f32, 17.0, 255.0] {
                let ours = x * n.scale[c] + n.offset[c];
                let theirs = x * torchvision.scale[c] + torchvision.offset[c];
                assert!(
                    (ours - theirs).abs() < 1e-5,
                    "channel {c}, {x}: {ours} vs {theirs}"
                );
            }
        }
        // With range -1..1 the mean and std apply to the ranged value.
        let n = input.with_range(Some([-1.0, 1.0])).normalize();
        assert!((255.0 * n.scale[0] + n.offset[0] - (1.0 - 0.485) / 0.229).abs() < 1e-5);
    }
}
