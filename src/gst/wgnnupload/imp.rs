use std::sync::Mutex;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::gpu::{Gpu, TransferStats};
use crate::gst::element::fail;
use crate::gst::frame_meta::buffer_for;
use crate::gst::frames::Intake;
use crate::gst::transfer::{transfer_element, Mover, Transfer};
use crate::gst::{caps, frames};
use crate::video::TexturePool;

crate::gst::element_category!("wgnnupload", "wgnn upload element");

struct State {
    input: Intake,
    pool: TexturePool,
}

#[derive(Default)]
pub struct WgnnUpload {
    transfer: Transfer,
    state: Mutex<Option<State>>,
}

transfer_element!(
    WgnnUpload,
    super::WgnnUpload,
    "GstWgnnUpload",
    "wgnn upload",
    "Uploads system-memory video frames into wgpu textures (memory:WgpuTexture)",
    sink: caps::upload_sink_caps(),
    src: caps::texture_caps(),
);

impl Mover for WgnnUpload {
    fn caps_across(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> gst::Caps {
        caps::upload_transform(direction, caps, filter)
    }

    fn configure(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), String> {
        let input = caps::input(incaps)?;
        let format = caps::video_format(&input.info).map_err(|e| e.to_string())?;
        let out = caps::input(outcaps)?;
        if caps::video_format(&out.info).ok() != Some(format) {
            return Err(format!(
                "input is {format} but the output caps ask for {}: wgnnupload does not convert",
                out.info.format().to_str()
            ));
        }
        let src = self
            .obj()
            .static_pad("src")
            .expect("wgnnupload has a src pad");
        if let Some(reason) = caps::texture_refused_by_peer(&src) {
            return Err(reason);
        }
        gst::debug!(CAT, imp = self, "uploading {incaps} as {outcaps}");
        *self.state.lock().unwrap() = Some(State {
            input: Intake::new(*CAT, input),
            pool: TexturePool::new(),
        });
        Ok(())
    }

    fn move_frame(
        &self,
        gpu: &Gpu,
        inbuf: &gst::BufferRef,
    ) -> Result<(gst::Buffer, TransferStats), gst::FlowError> {
        let element = self.obj();
        let element: &gst::Element = element.upcast_ref();
        let state = self.state.lock().unwrap();
        let state = state.as_ref().ok_or(gst::FlowError::NotNegotiated)?;
        let (frame, moved) = frames::frame_in(element, gpu, &state.pool, &state.input, inbuf)
            .map_err(|e| fail(element, "cannot take the input frame", e))?;
        let mut out = buffer_for(frame);
        frames::hold_imported(inbuf, &mut out, &moved);
        Ok((out, moved))
    }

    fn stopped(&self) {
        self.state.lock().unwrap().take();
    }

    fn propose(&self, query: &mut gst::query::Allocation) {
        // Strided and offset planes upload as they are: no repacking needed.
        query.add_allocation_meta::<gst_video::VideoMeta>(None);
    }
}
