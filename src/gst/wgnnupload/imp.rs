use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};
use gst_base::subclass::prelude::*;

use crate::gst::device::DeviceSlot;
use crate::gst::frame_meta::buffer_for;
use crate::gst::frames::Intake;
use crate::gst::stats::Stats;
use crate::gst::{caps, frames};
use crate::video::TexturePool;

crate::gst::element_category!("wgnnupload", "wgnn upload element");

struct State {
    input: Intake,
    pool: TexturePool,
}

#[derive(Default)]
pub struct WgnnUpload {
    device: DeviceSlot,
    state: Mutex<Option<State>>,
    stats: Stats,
}

#[glib::object_subclass]
impl ObjectSubclass for WgnnUpload {
    const NAME: &'static str = "GstWgnnUpload";
    type Type = super::WgnnUpload;
    type ParentType = gst_base::BaseTransform;
}

impl ObjectImpl for WgnnUpload {
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

impl GstObjectImpl for WgnnUpload {}

impl ElementImpl for WgnnUpload {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "wgnn upload",
                "Filter/Video",
                "Uploads system-memory video frames into wgpu textures (memory:WgpuTexture)",
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
                    &caps::upload_sink_caps(),
                )
                .unwrap(),
                gst::PadTemplate::new(
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    &caps::texture_caps(),
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

impl BaseTransformImpl for WgnnUpload {
    const MODE: gst_base::subclass::BaseTransformMode =
        gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.stats.reset();
        self.device.ensure(self.obj().upcast_ref(), *CAT)?;
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.state.lock().unwrap().take();
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        Some(caps::upload_transform(direction, caps, filter))
    }

    fn set_caps(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), gst::LoggableError> {
        let input = caps::input(incaps).map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        let format =
            caps::video_format(&input.info).map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        let out = caps::input(outcaps).map_err(|e| gst::loggable_error!(CAT, "{e}"))?;
        if caps::video_format(&out.info).ok() != Some(format) {
            return Err(gst::loggable_error!(
                CAT,
                "input is {format} but the output caps ask for {}: wgnnupload does not convert",
                out.info.format().to_str()
            ));
        }
        gst::debug!(CAT, imp = self, "uploading {incaps} as {outcaps}");
        *self.state.lock().unwrap() = Some(State {
            input: Intake::new(*CAT, input),
            pool: TexturePool::new(),
        });
        Ok(())
    }

    fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
        self.device.answer(query) || BaseTransformImplExt::parent_query(self, direction, query)
    }

    fn propose_allocation(
        &self,
        decide_query: Option<&gst::query::Allocation>,
        query: &mut gst::query::Allocation,
    ) -> Result<(), gst::LoggableError> {
        // Strided and offset planes upload as they are: no repacking needed.
        query.add_allocation_meta::<gst_video::VideoMeta>(None);
        self.parent_propose_allocation(decide_query, query)
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
        let state = self.state.lock().unwrap();
        let state = state.as_ref().ok_or(gst::FlowError::NotNegotiated)?;
        let (frame, moved) = frames::frame_in(
            self.obj().upcast_ref(),
            &gpu,
            &state.pool,
            &state.input,
            inbuf,
        )
        .map_err(|e| {
            let e = e.to_string();
            gst::element_imp_error!(
                self,
                gst::StreamError::Failed,
                (
                    "cannot take the input frame: {}",
                    crate::gst::element::first_line(&e)
                ),
                ["{}", e]
            );
            gst::FlowError::Error
        })?;
        let mut out = buffer_for(frame);
        inbuf
            .copy_into(
                out.get_mut().unwrap(),
                gst::BufferCopyFlags::FLAGS | gst::BufferCopyFlags::TIMESTAMPS,
                ..,
            )
            .map_err(|_| gst::FlowError::Error)?;
        crate::gst::roi::copy(inbuf, out.get_mut().unwrap(), (1.0, 1.0));
        frames::hold_imported(inbuf, &mut out, &moved);
        let n = self.stats.frame(&moved);
        gst::debug!(
            CAT,
            imp = self,
            "frame {n}: uploaded {} bytes, downloaded 0 bytes, imported {} bytes",
            moved.upload_bytes,
            moved.bytes_imported
        );
        Ok(PrepareOutputBufferSuccess::Buffer(out))
    }

    fn transform(
        &self,
        _inbuf: &gst::Buffer,
        _outbuf: &mut gst::BufferRef,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        // The upload happened while preparing the output buffer.
        Ok(gst::FlowSuccess::Ok)
    }
}
