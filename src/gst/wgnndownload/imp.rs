use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};
use gst_base::subclass::prelude::*;

use crate::gst::device::DeviceSlot;
use crate::gst::frame_meta::{frame_of, CAPS_FEATURE_WGPU_TEXTURE};
use crate::gst::stats::Stats;
use crate::gst::{caps, frames};

crate::gst::element_category!("wgnndownload", "wgnn download element");

#[derive(Default)]
pub struct WgnnDownload {
    device: DeviceSlot,
    info: Mutex<Option<gst_video::VideoInfo>>,
    stats: Stats,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnDownload {
    const NAME: &'static str = "GstWgnnDownload";
    type Type = super::WgnnDownload;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for WgnnDownload {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(Stats::properties);
        PROPS.as_ref()
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        self.stats
            .property(pspec.name())
            .expect("only counters are registered")
    }
}

impl GstObjectImpl for WgnnDownload {}

impl ElementImpl for WgnnDownload {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn download",
                "Filter/Video",
                "Reads wgpu-texture video frames (memory:WgpuTexture) back into system memory",
                "wgnn developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            vec![
                gst::PadTemplate::new(
                    "sink",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    &caps::texture_caps(),
                )
                .unwrap(),
                gst::PadTemplate::new(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &caps::system_caps(),
                )
                .unwrap(),
            ]
        });
        TEMPLATES.as_ref()
    }

    fn set_context(&self, context: &gst::Context) {
        self.device.set_context(context);
        self.parent_set_context(context)
    }
}

impl BaseTransformImpl for WgnnDownload {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.stats.reset();
        self.device.ensure(self.obj().upcast_ref(), *CAT)?;
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        Some(caps::between_memories(
            direction,
            caps,
            filter,
            Some(CAPS_FEATURE_WGPU_TEXTURE),
            None,
        ))
    }

    fn set_caps(&self, _incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let info = gst_video::VideoInfo::from_caps(outcaps)
            .map_err(|_| gst::loggable_error!(CAT, "cannot parse output caps {outcaps}"))?;
        *self.info.lock().unwrap() = Some(info);
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.device.answer(query) || BaseTransformImplExt::parent_query(self, direction, query)
    }

    fn prepare_output_buffer(
        &self,
        inbuf: InputBuffer,
    ) -> Result<PrepareOutputBufferSuccess, gst::FlowError> {
        let inbuf: &gst::BufferRef = match &inbuf {
            InputBuffer::Writable(b) => b,
            InputBuffer::Readable(b) => b,
        };
        let gpu = self.device.get().ok_or(gst::FlowError::NotNegotiated)?;
        let info = self
            .info
            .lock()
            .unwrap()
            .clone()
            .ok_or(gst::FlowError::NotNegotiated)?;
        let Some(frame) = frame_of(inbuf) else {
            gst::element_imp_error!(
                self,
                gst::StreamError::Format,
                ("input buffer carries no wgpu frame (memory:WgpuTexture without WgpuFrameMeta)")
            );
            return Err(gst::FlowError::Error);
        };
        let (mut out, moved) = frames::download(&gpu, &frame, &info).map_err(|e| {
            let e = e.to_string();
            gst::element_imp_error!(
                self,
                gst::StreamError::Failed,
                ("download failed: {}", crate::gst::element::first_line(&e)),
                ["{}", e]
            );
            gst::FlowError::Error
        })?;
        inbuf
            .copy_into(
                out.get_mut().unwrap(),
                gst::BufferCopyFlags::FLAGS | gst::BufferCopyFlags::TIMESTAMPS,
                ..,
            )
            .map_err(|_| gst::FlowError::Error)?;
        crate::gst::roi::copy(inbuf, out.make_mut(), (1.0, 1.0));
        let n = self.stats.frame(&moved);
        gst::debug!(
            CAT,
            imp = self,
            "frame {n}: uploaded 0 bytes, downloaded {} bytes",
            moved.download_bytes
        );
        Ok(PrepareOutputBufferSuccess::Buffer(out))
    }

    fn transform(
        &self,
        _inbuf: &gst::Buffer,
        _outbuf: &mut gst::BufferRef,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        Ok(gst::FlowSuccess::Ok)
    }
}
