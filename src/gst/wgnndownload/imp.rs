use std::sync::Mutex;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;

use crate::gpu::{Gpu, TransferStats};
use crate::gst::element::fail;
use crate::gst::frame_meta::{frame_of, CAPS_FEATURE_WGPU_TEXTURE};
use crate::gst::transfer::{transfer_element, Mover, Transfer};
use crate::gst::{caps, frames};

crate::gst::element_category!("wgnndownload", "wgnn download element");

#[derive(Default)]
pub struct WgnnDownload {
    transfer: Transfer,
    info: Mutex<Option<gst_video::VideoInfo>>,
}

transfer_element!(
    WgnnDownload,
    super::WgnnDownload,
    "GstWgnnDownload",
    "wgnn download",
    "Reads wgpu-texture video frames (memory:WgpuTexture) back into system memory",
    sink: caps::texture_caps(),
    src: caps::system_caps(),
);

impl Mover for WgnnDownload {
    fn caps_across(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> gst::Caps {
        caps::between_memories(
            direction,
            caps,
            filter,
            Some(CAPS_FEATURE_WGPU_TEXTURE),
            None,
        )
    }

    fn configure(&self, _incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), String> {
        let info = gst_video::VideoInfo::from_caps(outcaps)
            .map_err(|_| format!("cannot parse output caps {outcaps}"))?;
        *self.info.lock().unwrap() = Some(info);
        Ok(())
    }

    fn move_frame(
        &self,
        gpu: &Gpu,
        inbuf: &gst::BufferRef,
    ) -> Result<(gst::Buffer, TransferStats), gst::FlowError> {
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
        frames::same_device(gpu, &frame)
            .and_then(|()| frames::download(gpu, &frame, &info))
            .map_err(|e| fail(self.obj().upcast_ref(), "download failed", e))
    }
}
