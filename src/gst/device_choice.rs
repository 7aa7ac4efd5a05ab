//! The `device` property of the processing elements.

use gst::glib;

/// Where an element runs its model and its frame processing.
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstWgnnDevice")]
pub enum DeviceChoice {
    /// The pipeline's wgpu device; the CPU, with a warning, when there is none.
    #[default]
    #[enum_value(name = "Auto: the GPU, or the CPU when there is no GPU", nick = "auto")]
    Auto,
    #[enum_value(name = "GPU: fail when there is no GPU adapter", nick = "gpu")]
    Gpu,
    #[enum_value(name = "CPU: system memory only", nick = "cpu")]
    Cpu,
}

impl DeviceChoice {
    /// The device this choice settles on when the element starts: the
    /// pipeline's GPU, or `None` for the CPU. `Auto` without a GPU warns on
    /// the bus, so the user learns why the element runs slowly. Logs under
    /// the element's category `cat`.
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
                Ok(gpu) => Ok(Some(gpu)),
                Err(e) => {
                    gst::warning!(cat, obj = element, "no GPU ({e:?}); using the CPU");
                    gst::element_warning!(
                        element,
                        gst::ResourceError::NotFound,
                        ["no GPU adapter: running on the CPU (system memory only)"]
                    );
                    Ok(None)
                }
            },
        }
    }
}
