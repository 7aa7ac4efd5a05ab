//! The `device` property of the processing elements.

use gst::glib;
use gst::prelude::*;

/// Where an element runs its model and its frame processing.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnDevice")]
pub enum DeviceChoice {
    /// The pipeline's wgpu device; the CPU, with a warning, when there is
    /// none or only a software one (see [`DeviceChoice::open`]).
    #[default]
    #[enum_value(
        name = "Auto: the GPU; the CPU when there is none or only a software one (llvmpipe)",
        nick = "auto"
    )]
    Auto,
    #[enum_value(
        name = "GPU: any GPU adapter, software ones included; fail when there is none",
        nick = "gpu"
    )]
    Gpu,
    #[enum_value(name = "CPU: system memory only", nick = "cpu")]
    Cpu,
}

impl DeviceChoice {
    /// The device this choice settles on when the element starts: the
    /// pipeline's GPU, or `None` for the CPU. `Auto` runs on the CPU, with
    /// a warning on the bus, when there is no GPU, and when the only GPU is
    /// a software rasteriser (lavapipe, llvmpipe: several times slower than
    /// wgnn's CPU context), unless the pipeline was built for texture memory
    /// (see [`built_for_textures`]); it runs on the GPU the element's `gpu`
    /// property names, if it names one. Logs under the element's category
    /// `cat`.
    pub fn open(
        self,
        slot: &crate::gst::device::DeviceSlot,
        element: &gst::Element,
        cat: gst::DebugCategory,
    ) -> Result<Option<crate::gpu::Gpu>, gst::ErrorMessage> {
        // A GPU named with `gpu` is wanted: run there, or fail saying why.
        let choice = match self {
            DeviceChoice::Auto if slot.selected() => DeviceChoice::Gpu,
            other => other,
        };
        match choice {
            DeviceChoice::Cpu => Ok(None),
            DeviceChoice::Gpu => slot.ensure(element, cat).map(Some),
            DeviceChoice::Auto => match slot.ensure(element, cat) {
                Ok(gpu) if gpu.is_software() => {
                    if let Some(why) = built_for_textures(element) {
                        gst::info!(
                            cat,
                            obj = element,
                            "only a software GPU ({}), but {why}: running on it",
                            gpu.info().name,
                        );
                        return Ok(Some(gpu));
                    }
                    gst::info!(
                        cat,
                        obj = element,
                        "software GPU {}: using the CPU",
                        gpu.describe()
                    );
                    // "llvmpipe", not "llvmpipe (LLVM 19.1.7, 256 bits)".
                    let name = &gpu.info().name;
                    let short = name.split(" (").next().unwrap_or(name);
                    gst::element_warning!(
                        element,
                        gst::ResourceError::NotFound,
                        ("only a software GPU ({short}): running on the CPU; device=gpu forces it")
                    );
                    Ok(None)
                }
                Ok(gpu) => Ok(Some(gpu)),
                Err(e) => {
                    gst::info!(cat, obj = element, "no GPU ({e}); using the CPU");
                    gst::element_warning!(
                        element,
                        gst::ResourceError::NotFound,
                        ("no GPU adapter: running on the CPU (system memory only)")
                    );
                    Ok(None)
                }
            },
        }
    }
}

/// Why `element` must run on the GPU although it is a software one, if it
/// must: the pipeline was built for texture memory. Either a neighbour takes
/// or gives texture memory (`memory:WgpuTexture`) and nothing else (an
/// application's appsrc, or `wgnnupload` right before), or the pipeline has
/// a `wgnnupload` or `wgnndownload` somewhere (in a chain
/// `wgnnupload ! wgnnsegment ! wgnnsuperres ! ...` the last element
/// starts first and sees no texture-only neighbour, yet on the CPU it would
/// make the first one download every frame).
fn built_for_textures(element: &gst::Element) -> Option<String> {
    let mut pads = element.sink_pads();
    pads.extend(element.src_pads());
    for peer in pads.into_iter().filter_map(|p| p.peer()) {
        let caps = peer.query_caps(None);
        let texture_only = !caps.is_any()
            && !caps.is_empty()
            && caps
                .iter_with_features()
                .all(|(_, f)| f.contains(crate::gst::frame_meta::CAPS_FEATURE_WGPU_TEXTURE));
        if texture_only {
            let by = peer
                .parent_element()
                .map_or_else(|| peer.name().to_string(), |e| e.name().to_string());
            return Some(format!("{by} takes texture memory only"));
        }
    }
    let mut top = element.clone();
    while let Some(parent) = top.parent().and_then(|p| p.downcast::<gst::Element>().ok()) {
        top = parent;
    }
    let bin = top.downcast::<gst::Bin>().ok()?;
    bin.iterate_recurse()
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| {
            e.factory()
                .is_some_and(|f| matches!(f.name().as_str(), "wgnnupload" | "wgnndownload"))
        })
        .map(|e| format!("the pipeline has {}", e.name()))
}
