//! The one table of wgnn's elements. [`super::register`] registers from it;
//! the tests (gst-inspect, soak cycles, property refusals), the fuzz target
//! and the package check iterate it, so adding an element is one row here.

use std::path::Path;

use gst::glib;
use gst::prelude::*;

use super::{
    wgnnanalytics, wgnnclassify, wgnndetect, wgnndownload, wgnninfer, wgnnoverlay, wgnnpublish,
    wgnnsegment, wgnnsink, wgnnsuperres, wgnntrack, wgnnupload,
};

/// One element of the plugin.
pub struct ElementSpec {
    /// The factory name (`gst-inspect-1.0 <name>`).
    pub name: &'static str,
    /// Its GType (the subclass registered on first call).
    pub type_: fn() -> glib::Type,
    pub rank: gst::Rank,
    /// What it does, in one line.
    pub description: &'static str,
    /// A working instance as a gst-launch fragment that takes small frames
    /// in system memory and gives system-memory frames downstream (or, for
    /// a sink, shows them without a display): the element with the
    /// elements it needs beside it and the properties it cannot run
    /// without (models are the smallest in the source tree; `{root}`
    /// stands for the source tree). For tests; see
    /// [`ElementSpec::minimal_launch`].
    pub minimal: &'static str,
}

impl ElementSpec {
    /// [`Self::minimal`] with `{root}` replaced by `root`.
    pub fn minimal_launch(&self, root: &Path) -> String {
        self.minimal.replace("{root}", &root.display().to_string())
    }

    /// Whether it ends a pipeline (a `GstBaseSink`).
    pub fn is_sink(&self) -> bool {
        (self.type_)().is_a(gst_base::BaseSink::static_type())
    }

    /// Whether it has a property named `property`.
    pub fn has_property(&self, property: &str) -> bool {
        glib::object::ObjectClass::from_type((self.type_)())
            .is_some_and(|class| class.has_property(property))
    }
}

/// Every element, in the order `gst-inspect-1.0 wgnn` documents them.
pub const ELEMENTS: &[ElementSpec] = &[
    ElementSpec {
        name: "wgnnupload",
        type_: wgnnupload::WgnnUpload::static_type,
        rank: gst::Rank::NONE,
        description: "system-memory or DMA-BUF frames into wgpu textures",
        minimal: "wgnnupload ! wgnndownload",
    },
    ElementSpec {
        name: "wgnndownload",
        type_: wgnndownload::WgnnDownload::static_type,
        rank: gst::Rank::NONE,
        description: "wgpu-texture frames back into system memory",
        minimal: "wgnnupload ! wgnndownload",
    },
    ElementSpec {
        name: "wgnnsegment",
        type_: wgnnsegment::WgnnSegment::static_type,
        rank: gst::Rank::NONE,
        description: "person segmentation: blur or replace the background",
        minimal: "wgnnsegment model={root}/tests/data/soak/tiny_mask.onnx",
    },
    ElementSpec {
        name: "wgnnsuperres",
        type_: wgnnsuperres::WgnnSuperres::static_type,
        rank: gst::Rank::NONE,
        description: "super-resolution (x2, x3, x4)",
        minimal: "wgnnsuperres scale=2 model={root}/tests/data/soak/tiny_sr.onnx",
    },
    ElementSpec {
        name: "wgnninfer",
        type_: wgnninfer::WgnnInfer::static_type,
        rank: gst::Rank::NONE,
        description: "any model on each frame, its outputs attached as tensors",
        minimal: "wgnninfer model={root}/tests/data/classify/mean_color.onnx",
    },
    ElementSpec {
        name: "wgnndetect",
        type_: wgnndetect::WgnnDetect::static_type,
        rank: gst::Rank::NONE,
        description: "object detection, the objects attached as regions of interest",
        minimal: "wgnndetect model={root}/tests/data/detect/yolo/yolov8.onnx \
                  model-proc={root}/tests/data/soak/yolov8.json",
    },
    ElementSpec {
        name: "wgnnclassify",
        type_: wgnnclassify::WgnnClassify::static_type,
        rank: gst::Rank::NONE,
        description: "classification of the frame or of each region of interest",
        minimal: "wgnnclassify model={root}/tests/data/classify/mean_color.onnx",
    },
    ElementSpec {
        name: "wgnntrack",
        type_: wgnntrack::WgnnTrack::static_type,
        rank: gst::Rank::NONE,
        description: "ids that persist across frames for the regions of interest (IoU, ByteTrack)",
        minimal: "wgnnupload ! wgnntrack ! wgnndownload",
    },
    ElementSpec {
        name: "wgnnanalytics",
        type_: wgnnanalytics::WgnnAnalytics::static_type,
        rank: gst::Rank::NONE,
        description: "counts tracked objects crossing lines and inside zones, with events",
        minimal: "wgnnupload ! wgnnanalytics config={root}/tests/data/analytics/door.json ! \
                  wgnndownload",
    },
    ElementSpec {
        name: "wgnnpublish",
        type_: wgnnpublish::WgnnPublish::static_type,
        rank: gst::Rank::NONE,
        description: "sends each frame's results as JSON to an MQTT broker or a file",
        minimal: "wgnnupload ! wgnnpublish method=file file-location=/dev/null ! wgnndownload",
    },
    ElementSpec {
        name: "wgnnoverlay",
        type_: wgnnoverlay::WgnnOverlay::static_type,
        rank: gst::Rank::NONE,
        description: "draws the regions of interest on the frame",
        minimal: "wgnnoverlay",
    },
    ElementSpec {
        name: "wgnnsink",
        type_: wgnnsink::WgnnSink::static_type,
        rank: gst::Rank::NONE,
        description: "shows frames in a window through a wgpu surface",
        minimal: "wgnnsink offscreen=true sync=false",
    },
];

/// The row of the element named `name`.
pub fn spec(name: &str) -> Option<&'static ElementSpec> {
    ELEMENTS.iter().find(|e| e.name == name)
}

/// Registers every element of [`ELEMENTS`].
pub(super) fn register(plugin: Option<&gst::Plugin>) -> Result<(), glib::BoolError> {
    for e in ELEMENTS {
        gst::Element::register(plugin, e.name, e.rank, (e.type_)())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The element names `text` lists between `from` and the next `to`,
    /// in order (each `wgnn...` word once).
    fn listed(text: &str, from: &str, to: char) -> Vec<String> {
        let start = text.find(from).unwrap_or_else(|| panic!("no '{from}'")) + from.len();
        let end = start + text[start..].find(to).expect("the list's end");
        let mut names: Vec<String> = Vec::new();
        for word in text[start..end].split(|c: char| !c.is_ascii_alphanumeric()) {
            if word.starts_with("wgnn") && word.len() > 4 && !names.iter().any(|n| n == word) {
                names.push(word.to_string());
            }
        }
        names
    }

    fn table() -> Vec<String> {
        ELEMENTS.iter().map(|e| e.name.to_string()).collect()
    }

    /// The Debian package's description and the README name exactly the
    /// table's elements.
    #[test]
    fn the_package_description_and_readme_list_the_table() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        assert_eq!(
            listed(&cargo, "A GStreamer plugin (", ')'),
            table(),
            "Cargo.toml's extended-description"
        );
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        assert_eq!(
            listed(&readme, "(`gst-inspect-1.0 wgnn`) has", ';'),
            table(),
            "README.md's plugin sentence"
        );
    }

    #[test]
    fn names_types_and_launch_fragments_are_consistent() {
        gst::init().unwrap();
        let mut types = std::collections::HashSet::new();
        for e in ELEMENTS {
            assert!(types.insert((e.type_)()), "{}: its type twice", e.name);
            assert_eq!(spec(e.name).map(|s| s.name), Some(e.name));
            assert!(
                e.minimal
                    .split('!')
                    .any(|part| part.split_whitespace().next() == Some(e.name)),
                "{}: the fragment '{}' does not hold it",
                e.name,
                e.minimal
            );
            assert!(!e.description.contains('\n'), "{}", e.name);
        }
        assert_eq!(types.len(), ELEMENTS.len());
        assert!(spec("wgnnsink").unwrap().is_sink());
        assert!(!spec("wgnnupload").unwrap().is_sink());
        assert!(spec("wgnnsegment").unwrap().has_property("model"));
        assert!(!spec("wgnnoverlay").unwrap().has_property("model"));
    }
}
