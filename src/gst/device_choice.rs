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
    /// wgnn's CPU context) unless a neighbour takes texture memory only
    /// (`wgnnupload` before, `wgnndownload` after: the pipeline was built
    /// for the GPU). Logs under the element's category `cat`.
    pub fn open(
        self,
        slot: &crate::gst::device::DeviceSlot,
        element: &gst::Element,
        cat: gst::DebugCategory,
    ) -> Result<Option<crate::gpu::Gpu>, gst::ErrorMessage> {
        match self {
            DeviceChoice::Cpu => Ok(None),
            DeviceChoice::Gpu => slot.ensure(element, cat).map(Some),
            DeviceChoice::Auto => match slot.ensure(element, cat) {
                Ok(gpu) if gpu.is_software() => {
                    if let Some(pad) = texture_only_neighbour(element) {
                        gst::info!(
                            cat,
                            obj = element,
                            "only a software GPU ({}), but {} takes texture memory only: \
                             running on it",
                            gpu.info().name,
                            pad.parent_element()
                                .map_or_else(|| pad.name().to_string(), |e| e.name().to_string())
                        );
                        return Ok(Some(gpu));
                    }
                    gst::info!(
                        cat,
                        obj = element,
                        "software GPU {}: using the CPU",
                        gpu.describe()
                    );
                    gst::element_warning!(
                        element,
                        gst::ResourceError::NotFound,
                        (
                            "only a software GPU ({}): running on the CPU; device=gpu forces it",
                            gpu.info().name
                        )
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

/// The peer pad of `element` that takes or gives texture memory
/// (`memory:WgpuTexture`) and nothing else, if any: the element must then
/// run on the GPU for the pipeline to link.
fn texture_only_neighbour(element: &gst::Element) -> Option<gst::Pad> {
    let mut pads = element.sink_pads();
    pads.extend(element.src_pads());
    pads.into_iter().filter_map(|p| p.peer()).find(|peer| {
        let caps = peer.query_caps(None);
        !caps.is_any()
            && !caps.is_empty()
            && caps
                .iter_with_features()
                .all(|(_, f)| f.contains(crate::gst::frame_meta::CAPS_FEATURE_WGPU_TEXTURE))
    })
}
