//! Model-proc files: the JSON sidecar that says how a model's input is
//! filled (value range, colour order, letterbox or stretch) and how its
//! outputs become objects or classes (the decoder and its options, labels,
//! thresholds), in the spirit of DL Streamer's model-proc files. The schema
//! is documented in docs/MODEL_PROC.md; every struct here refuses unknown
//! fields so that a typo is an error naming the field, not a silent default.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::video::{ChannelOrder, ColorSpec, Resize, Sampling};

use super::objects::Labels;
pub use super::torchvision::BoxesScoresLabels;
use super::InferOptions;

/// A parsed model-proc file.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelProc {
    /// Where it was read from (not a field of the file).
    #[serde(skip)]
    pub path: PathBuf,
    #[serde(default)]
    pub input: InputProc,
    /// How outputs become results; `None` for a plain classifier whose one
    /// output is class scores.
    #[serde(default)]
    pub decoder: Option<Decoder>,
    /// Class names: a list, or a labels file (one name per line) relative
    /// to the model-proc's folder.
    #[serde(default)]
    pub labels: Option<LabelsProc>,
    /// Minimum confidence of a result; element properties override it.
    #[serde(default)]
    pub threshold: Option<f32>,
    /// IoU above which non-maximum suppression merges or drops boxes.
    #[serde(default)]
    pub iou_threshold: Option<f32>,
}

/// How a frame fills the model's input.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InputProc {
    /// The values for black and full intensity, e.g. [-1, 1]; unset: the
    /// model family's convention.
    #[serde(default)]
    pub range: Option<[f32; 2]>,
    #[serde(default)]
    pub color: ColorOrder,
    #[serde(default)]
    pub resize: ResizeProc,
    /// Letterbox border colour, RGB 0..255.
    #[serde(default)]
    pub pad: [u8; 3],
    /// Per-channel mean and std (torchvision's `(v - mean) / std`, applied
    /// after `range`), in the fed channel order; both or neither.
    #[serde(default)]
    pub mean: Option<[f32; 3]>,
    #[serde(default)]
    pub std: Option<[f32; 3]>,
    /// Where each input pixel samples the frame, as ONNX's Resize names it:
    /// `half_pixel` (default) or `asymmetric` (OpenCV's warpAffine, which
    /// MediaPipe's CPU graphs use).
    #[serde(default)]
    pub coordinates: CoordinatesProc,
    /// [width, height] fed to a model that takes any input size; unset: the
    /// frame's own size. A model of a declared size must match it.
    #[serde(default)]
    pub size: Option<[u32; 2]>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CoordinatesProc {
    #[default]
    HalfPixel,
    Asymmetric,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ColorOrder {
    #[default]
    Rgb,
    Bgr,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResizeProc {
    #[default]
    Stretch,
    Letterbox,
    Crop,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum LabelsProc {
    List(Vec<String>),
    File(PathBuf),
}

/// The decoders, by `"type"`.
// A decoder is parsed once per element: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Decoder {
    SsdAnchors(SsdAnchors),
    Yolo(Yolo),
    Classification(ClassificationDecoder),
    BoxesScoresLabels(BoxesScoresLabels),
}

impl Decoder {
    /// The `"type"` as written in the file.
    pub fn kind(&self) -> &'static str {
        match self {
            Decoder::SsdAnchors(_) => "ssd-anchors",
            Decoder::Yolo(_) => "yolo",
            Decoder::Classification(_) => "classification",
            Decoder::BoxesScoresLabels(_) => "boxes-scores-labels",
        }
    }
}

/// MediaPipe-style SSD: anchors generated as MediaPipe's
/// `SsdAnchorsCalculator` does, boxes and keypoints decoded as its
/// `TensorsToDetectionsCalculator` does; option names are MediaPipe's.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SsdAnchors {
    /// Output holding [1, N, num_coords] box regressors.
    pub boxes: String,
    /// Output holding [1, N, classes] scores.
    pub scores: String,
    pub anchors: AnchorOptions,
    pub num_coords: usize,
    #[serde(default)]
    pub box_coord_offset: usize,
    #[serde(default)]
    pub keypoint_coord_offset: usize,
    #[serde(default)]
    pub num_keypoints: usize,
    #[serde(default = "two")]
    pub num_values_per_keypoint: usize,
    pub x_scale: f32,
    pub y_scale: f32,
    pub w_scale: f32,
    pub h_scale: f32,
    #[serde(default = "yes")]
    pub sigmoid_score: bool,
    #[serde(default)]
    pub score_clipping_thresh: Option<f32>,
    /// Boxes stored as (x, y, w, h) rather than (y, x, h, w).
    #[serde(default)]
    pub reverse_output_order: bool,
    #[serde(default)]
    pub nms: NmsKind,
}

/// MediaPipe's `SsdAnchorsCalculatorOptions`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AnchorOptions {
    pub num_layers: usize,
    pub min_scale: f32,
    pub max_scale: f32,
    pub input_size_width: u32,
    pub input_size_height: u32,
    #[serde(default = "half")]
    pub anchor_offset_x: f32,
    #[serde(default = "half")]
    pub anchor_offset_y: f32,
    pub strides: Vec<u32>,
    #[serde(default = "one_ratio")]
    pub aspect_ratios: Vec<f32>,
    #[serde(default)]
    pub fixed_anchor_size: bool,
    #[serde(default = "one")]
    pub interpolated_scale_aspect_ratio: f32,
    #[serde(default)]
    pub reduce_boxes_in_lowest_layer: bool,
    /// Grid sizes per layer, replacing input size / stride where given
    /// (MediaPipe's `feature_map_width` / `feature_map_height`).
    #[serde(default)]
    pub feature_map_width: Vec<u32>,
    #[serde(default)]
    pub feature_map_height: Vec<u32>,
}

/// How overlapping boxes are resolved.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NmsKind {
    /// MediaPipe's weighted NMS: overlapping boxes are averaged, weighted by
    /// score.
    #[default]
    Weighted,
    /// Keep the best box, drop those overlapping it (per class).
    Hard,
}

/// YOLO outputs: v5 `[1, N, 5 + C]` (cx, cy, w, h, objectness, class
/// scores) or v8/v11 `[1, 4 + C, N]` (cx, cy, w, h, class scores).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Yolo {
    pub layout: YoloLayout,
    /// The output to decode; unset: the model's first.
    #[serde(default)]
    pub output: Option<String>,
    /// Box coordinates are 0..1 of the input rather than input pixels.
    #[serde(default)]
    pub normalized: bool,
    /// Most objects kept per frame after NMS.
    #[serde(default = "max_detections")]
    pub max_detections: usize,
    /// What the head predicts besides boxes and classes.
    #[serde(default)]
    pub task: YoloTask,
    /// Segment: the output holding the mask prototypes `[1, 32, H/4, W/4]`;
    /// unset: the model's 4-D output.
    #[serde(default)]
    pub protos: Option<String>,
    /// Pose: keypoints per object and values per keypoint (2: x, y; 3: x,
    /// y, score), as Ultralytics' `kpt_shape`; unset: [17, 3].
    #[serde(default)]
    pub kpt_shape: Option<[usize; 2]>,
}

/// The head of an Ultralytics model, as its `task` metadata names it.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum YoloTask {
    #[default]
    Detect,
    /// Boxes, classes and 32 mask coefficients per box, with prototypes.
    Segment,
    /// Boxes, one class and keypoints per box.
    Pose,
    /// Boxes rotated by an angle in radians (cx, cy, w, h, classes, angle).
    Obb,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum YoloLayout {
    Yolov5,
    Yolov8,
    /// `[1, N, 6 + extra]` rows of x1, y1, x2, y2, score, class from a graph
    /// that ends in its own NMS or top-k (Ultralytics `nms=True`, YOLOv10,
    /// YOLO26): read as they are, no NMS.
    End2end,
}

impl YoloLayout {
    /// The name as written in a model-proc.
    pub fn name(self) -> &'static str {
        match self {
            YoloLayout::Yolov5 => "yolov5",
            YoloLayout::Yolov8 => "yolov8",
            YoloLayout::End2end => "end2end",
        }
    }
}

/// A classifier's scores.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClassificationDecoder {
    /// The output holding [1, C] (or [C]) scores; unset: the model's first.
    #[serde(default)]
    pub output: Option<String>,
    /// Apply softmax: the output is logits.
    #[serde(default)]
    pub softmax: bool,
}

fn two() -> usize {
    2
}
fn yes() -> bool {
    true
}
fn half() -> f32 {
    0.5
}
fn one() -> f32 {
    1.0
}
fn one_ratio() -> Vec<f32> {
    vec![1.0]
}
fn max_detections() -> usize {
    300
}

impl ModelProc {
    /// Reads and checks a model-proc file; errors name the file and the bad
    /// field.
    pub fn load(path: &Path) -> Result<ModelProc> {
        let bad = |message: String| Error::File {
            path: path.to_path_buf(),
            message,
        };
        let text = crate::files::read_regular(path)
            .map_err(|e| bad(format!("cannot read the model-proc: {e}")))?;
        let proc: ModelProc = serde_json::from_slice(&text)
            .map_err(|e| bad(format!("not a valid model-proc: {e}")))?;
        proc.checked(path)
    }

    /// A model-proc from its JSON form, read from (or made for) `path`.
    pub(crate) fn from_json(path: &Path, value: serde_json::Value) -> Result<ModelProc> {
        let proc: ModelProc = serde_json::from_value(value).map_err(|e| Error::File {
            path: path.to_path_buf(),
            message: format!("not a valid model-proc: {e}"),
        })?;
        proc.checked(path)
    }

    fn checked(mut self, path: &Path) -> Result<ModelProc> {
        self.path = path.to_path_buf();
        self.check().map_err(|message| Error::File {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(self)
    }

    /// The model-proc for the model at `model`: `explicit` when given (it
    /// must exist), else `<model file stem>.json` beside the model when
    /// there is one.
    pub fn for_model(model: &Path, explicit: Option<&Path>) -> Result<Option<ModelProc>> {
        ModelProc::file_for(model, explicit)
            .map(|path| ModelProc::load(&path))
            .transpose()
    }

    /// The model-proc file [`ModelProc::for_model`] reads, if any.
    pub(crate) fn file_for(model: &Path, explicit: Option<&Path>) -> Option<PathBuf> {
        if let Some(path) = explicit {
            return Some(path.to_path_buf());
        }
        let beside = model.with_extension("json");
        // A TF.js model is itself a .json file: it is no model-proc.
        (beside != model && beside.is_file()).then_some(beside)
    }

    fn check(&self) -> std::result::Result<(), String> {
        let unit = |name: &str, v: Option<f32>| match v {
            Some(v) if !(0.0..=1.0).contains(&v) => {
                Err(format!("{name} is {v}; it must be between 0 and 1"))
            }
            _ => Ok(()),
        };
        unit("threshold", self.threshold)?;
        unit("iou_threshold", self.iou_threshold)?;
        if let Some([lo, hi]) = self.input.range {
            if !lo.is_finite() || !hi.is_finite() || lo == hi {
                return Err(format!(
                    "input.range is [{lo}, {hi}]; it needs two different finite values"
                ));
            }
        }
        match (self.input.mean, self.input.std) {
            (Some(_), None) | (None, Some(_)) => {
                return Err("input.mean and input.std go together: give both or neither".into())
            }
            (_, Some(std)) if std.iter().any(|s| !s.is_finite() || *s == 0.0) => {
                return Err(format!(
                    "input.std is {std:?}; every value must be non-zero"
                ))
            }
            _ => {}
        }
        if self.input.size.is_some_and(|[w, h]| w == 0 || h == 0) {
            return Err("input.size has a zero; it is [width, height] in pixels".into());
        }
        if let Some(LabelsProc::List(names)) = &self.labels {
            if names.is_empty() {
                return Err("labels is an empty list".into());
            }
        }
        match &self.decoder {
            Some(Decoder::SsdAnchors(s)) => s.check(),
            Some(Decoder::Yolo(Yolo { max_detections, .. }))
            | Some(Decoder::BoxesScoresLabels(BoxesScoresLabels { max_detections, .. }))
                if *max_detections == 0 =>
            {
                Err("decoder.max_detections is 0; it must be at least 1".into())
            }
            _ => Ok(()),
        }
    }

    /// The class names: the list, the labels file (relative to this file's
    /// folder), or none.
    pub fn labels(&self) -> Result<Labels> {
        match &self.labels {
            None => Ok(Labels::none()),
            Some(LabelsProc::List(names)) => Ok(Labels::from_names(
                names.clone(),
                format!("model-proc {}", self.path.display()),
            )),
            Some(LabelsProc::File(file)) => {
                let dir = self.path.parent().unwrap_or(Path::new("."));
                let path = crate::files::inside(dir, file).map_err(|e| Error::File {
                    path: self.path.clone(),
                    message: format!("labels file '{}': {e}", file.display()),
                })?;
                Labels::from_file(&path)
            }
        }
    }

    /// How frames whose YUV colours follow `color` fill the model's input.
    pub fn infer_options(&self, color: ColorSpec) -> InferOptions {
        InferOptions {
            range: self.input.range,
            resize: match self.input.resize {
                ResizeProc::Stretch => Resize::Stretch,
                ResizeProc::Letterbox => Resize::Letterbox {
                    pad: self.input.pad,
                },
                ResizeProc::Crop => Resize::CenterCrop,
            },
            bgr: self.input.color == ColorOrder::Bgr,
            color,
            mean_std: self.input.mean.zip(self.input.std),
            sampling: match self.input.coordinates {
                CoordinatesProc::HalfPixel => Sampling::HalfPixel,
                CoordinatesProc::Asymmetric => Sampling::Asymmetric,
            },
            precision: crate::ml::Precision::F32,
            size: self.input.size.map(|[w, h]| (w, h)),
        }
    }

    /// The channel order the input is fed in.
    pub fn channels(&self) -> ChannelOrder {
        match self.input.color {
            ColorOrder::Rgb => ChannelOrder::Rgb,
            ColorOrder::Bgr => ChannelOrder::Bgr,
        }
    }
}

impl SsdAnchors {
    fn check(&self) -> std::result::Result<(), String> {
        let a = &self.anchors;
        if a.num_layers == 0 || a.strides.len() != a.num_layers {
            return Err(format!(
                "decoder.anchors has num_layers {} but {} strides; they must match and be at \
                 least 1",
                a.num_layers,
                a.strides.len()
            ));
        }
        if a.strides.contains(&0) || a.input_size_width == 0 || a.input_size_height == 0 {
            return Err("decoder.anchors: strides and input sizes must be at least 1".into());
        }
        if a.aspect_ratios.is_empty() {
            return Err("decoder.anchors.aspect_ratios is empty".into());
        }
        let ratios = a
            .aspect_ratios
            .iter()
            .chain([&a.interpolated_scale_aspect_ratio]);
        if ratios.clone().any(|r| !r.is_finite() || *r < 0.0) || a.aspect_ratios.contains(&0.0) {
            return Err(
                "decoder.anchors: aspect ratios must be positive (interpolated_scale_aspect_ratio \
                 0 leaves that anchor out)"
                    .into(),
            );
        }
        let scales = [
            a.min_scale,
            a.max_scale,
            a.anchor_offset_x,
            a.anchor_offset_y,
        ];
        if scales.iter().any(|s| !s.is_finite()) {
            return Err("decoder.anchors: scales and offsets must be finite".into());
        }
        let maps = (a.feature_map_width.len(), a.feature_map_height.len());
        if maps != (0, 0)
            && (maps != (a.num_layers, a.num_layers)
                || a.feature_map_width.contains(&0)
                || a.feature_map_height.contains(&0))
        {
            return Err(format!(
                "decoder.anchors has {} feature_map_width and {} feature_map_height values for \
                 {} layers; give none, or one non-zero value per layer in each",
                maps.0, maps.1, a.num_layers
            ));
        }
        let needed = self
            .keypoint_coord_offset
            .max(self.box_coord_offset + 4)
            .max(self.keypoint_coord_offset + self.num_keypoints * self.num_values_per_keypoint);
        if self.num_coords < needed || self.num_values_per_keypoint < 2 && self.num_keypoints > 0 {
            return Err(format!(
                "decoder.num_coords is {}, but the box and keypoint offsets need {needed} values \
                 per anchor (and each keypoint at least 2)",
                self.num_coords
            ));
        }
        let scales = [self.x_scale, self.y_scale, self.w_scale, self.h_scale];
        if scales.iter().any(|s| !s.is_finite() || *s == 0.0) {
            return Err("decoder: x_scale, y_scale, w_scale and h_scale must be non-zero".into());
        }
        if let Some(c) = self.score_clipping_thresh {
            if !c.is_finite() || c < 0.0 {
                return Err(format!(
                    "decoder.score_clipping_thresh is {c}; it must be a finite value >= 0"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wgnn-model-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Labels files outside the model-proc's folder (by `..`, an absolute
    /// path, a symbolic link) are refused; a FIFO as the model-proc or the
    /// labels file is refused without being opened.
    #[cfg(unix)]
    #[test]
    fn labels_stay_in_the_folder_and_fifos_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("procs");
        std::fs::create_dir(&dir).unwrap();
        let secret = root.path().join("secret.txt");
        std::fs::write(&secret, "root\n").unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("link.txt")).unwrap();
        let fifo = dir.join("fifo.txt");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let cases = [
            (
                "../secret.txt".to_string(),
                "it leaves the folder with '..'",
            ),
            (secret.display().to_string(), "it is an absolute path"),
            ("link.txt".to_string(), "it is a symbolic link to "),
            (
                "fifo.txt".to_string(),
                "it is a FIFO (named pipe), not a regular file",
            ),
        ];
        for (labels, says) in &cases {
            let path = dir.join("p.json");
            let json = serde_json::json!({"labels": labels}).to_string();
            std::fs::write(&path, json).unwrap();
            let e = ModelProc::load(&path)
                .unwrap()
                .labels()
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{labels}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = ModelProc::load(&fifo).unwrap_err().to_string();
        assert!(
            e.contains("cannot read the model-proc: it is a FIFO"),
            "{e}"
        );
    }

    #[test]
    fn a_yolo_model_proc_with_a_labels_file() {
        write("coco.txt", "person\nbicycle\n");
        let path = write(
            "yolo.json",
            r#"{"input": {"range": [0, 1], "resize": "letterbox", "pad": [114, 114, 114]},
                "decoder": {"type": "yolo", "layout": "yolov8"},
                "labels": "coco.txt", "threshold": 0.25, "iou_threshold": 0.45}"#,
        );
        let proc = ModelProc::load(&path).unwrap();
        let Some(Decoder::Yolo(y)) = &proc.decoder else {
            panic!("{proc:?}")
        };
        assert_eq!(y.layout, YoloLayout::Yolov8);
        assert_eq!(y.max_detections, 300);
        assert_eq!(proc.labels().unwrap().name(1), "bicycle");
        let o = proc.infer_options(ColorSpec::default());
        assert_eq!(o.resize, Resize::Letterbox { pad: [114; 3] });
        assert_eq!(o.range, Some([0.0, 1.0]));
        assert!(!o.bgr);
    }

    #[test]
    fn errors_name_the_bad_field() {
        let cases = [
            (
                r#"{"decoder": {"type": "yolo", "layout": "yolov8", "colour": 1}}"#,
                "colour",
            ),
            (r#"{"decoder": {"type": "yolo"}}"#, "layout"),
            (r#"{"decoder": {"type": "centernet"}}"#, "centernet"),
            (r#"{"input": {"color": "rgba"}}"#, "rgba"),
            (r#"{"threshold": 1.5}"#, "threshold is 1.5"),
            (r#"{"input": {"range": [1, 1]}}"#, "input.range"),
            (r#"{"labels": []}"#, "labels is an empty list"),
            (r#"{"input": {"mean": [0.5, 0.5, 0.5]}}"#, "go together"),
            (
                r#"{"input": {"mean": [0, 0, 0], "std": [1, 0, 1]}}"#,
                "input.std",
            ),
            (r#"{"bogus": true}"#, "bogus"),
            ("{", "not a valid model-proc"),
        ];
        for (text, needle) in cases {
            let path = write("bad.json", text);
            let err = ModelProc::load(&path).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(err.contains("bad.json"), "{text}: {err}");
        }
    }

    #[test]
    fn ssd_anchor_options_are_checked() {
        let ssd = |anchors: &str, extra: &str| {
            format!(
                r#"{{"decoder": {{"type": "ssd-anchors", "boxes": "b", "scores": "s",
                    "anchors": {{"num_layers": 2, "min_scale": 0.1, "max_scale": 0.7,
                                "input_size_width": 64, "input_size_height": 64,
                                "strides": [8, 16]{anchors}}},
                    "num_coords": 4, "x_scale": 64, "y_scale": 64, "w_scale": 64,
                    "h_scale": 64{extra}}}}}"#
            )
        };
        let path = write("ssd.json", &ssd("", ""));
        let proc = ModelProc::load(&path).unwrap();
        let Some(Decoder::SsdAnchors(s)) = &proc.decoder else {
            panic!("{proc:?}")
        };
        assert!(s.anchors.feature_map_width.is_empty() && s.sigmoid_score);
        let cases = [
            (
                ssd(r#", "feature_map_width": [4]"#, ""),
                "1 feature_map_width and 0",
            ),
            (
                ssd(r#", "aspect_ratios": [1.0, 0.0]"#, ""),
                "aspect ratios must be positive",
            ),
            (
                ssd("", r#", "score_clipping_thresh": -1"#),
                "score_clipping_thresh is -1",
            ),
        ];
        for (text, needle) in cases {
            let path = write("bad_ssd.json", &text);
            let err = ModelProc::load(&path).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn the_default_model_proc_sits_beside_the_model() {
        let model = write("beside.tflite", "");
        assert_eq!(ModelProc::for_model(&model, None).unwrap(), None);
        write("beside.json", r#"{"input": {"color": "bgr"}}"#);
        let proc = ModelProc::for_model(&model, None).unwrap().unwrap();
        assert_eq!(proc.channels(), ChannelOrder::Bgr);
        let tfjs = write("model.json", "{}");
        assert_eq!(ModelProc::for_model(&tfjs, None).unwrap(), None);
        let err = ModelProc::for_model(&model, Some(Path::new("/nonexistent/x.json")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot read the model-proc"), "{err}");
    }
}
