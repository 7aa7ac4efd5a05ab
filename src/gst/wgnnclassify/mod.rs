//! `wgnnclassify`: runs a classification model on each frame, or on each
//! region of interest upstream attached (`inference-region=roi-list`, e.g.
//! the faces `wgnndetect` found), and attaches its best classes to them as
//! `classification` params in DL Streamer's convention (see
//! [`crate::gst::roi`]). The frame passes through untouched.
//!
//! ```text
//! gst-launch-1.0 videotestsrc num-buffers=30 ! video/x-raw,width=320,height=240 ! \
//!     wgnnupload ! wgnnclassify model=tests/data/classify/mean_color.onnx top-k=2 \
//!     post-messages=true ! fakesink
//! ```
//!
//! Each region is cropped and fitted to the model input by the tensorize
//! shader (no CPU work on pixels); only the class scores come back (one small
//! counted read-back per frame). `model-proc` (default: `<model stem>.json`
//! beside the model) says how the input is filled and whether the scores are
//! logits (`"decoder": {"type": "classification", "softmax": true}`);
//! `labels` (a file, one name per line) overrides its labels. `device=cpu`
//! runs on system memory only. `results-location` and `post-messages` give
//! every frame's ROIs with their classes as JSON lines and bus messages.
//! `inference-interval=N` classifies every Nth frame only.
//!
//! The element is glue (properties, caps, metas, bus errors) around
//! [`Classifier`](crate::tasks::Classifier).

mod imp;

use gst::glib;

/// What the model looks at.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnClassifyRegion")]
pub enum InferenceRegion {
    /// The whole frame; the classes go on an ROI covering it.
    #[default]
    #[enum_value(name = "The whole frame", nick = "full-frame")]
    FullFrame,
    /// Each ROI upstream attached; the classes go on that ROI.
    #[enum_value(name = "Each region of interest upstream attached", nick = "roi-list")]
    RoiList,
}

glib::wrapper! {
    pub struct WgnnClassify(ObjectSubclass<imp::WgnnClassify>)
        @extends crate::gst::model_element::WgnnModelElement, gst_base::BaseTransform,
            gst::Element, gst::Object;
}
