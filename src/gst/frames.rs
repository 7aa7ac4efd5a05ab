//! Frames in and out of the elements: a buffer's GPU frame (its
//! [`WgpuFrameMeta`](super::frame_meta::WgpuFrameMeta), or one counted upload
//! of its system memory) and the way back to system memory (one counted
//! download per plane). Every element moves pixels through these two
//! functions, so the counters they return are the whole story.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::gpu::transfer::TextureRegion;
use crate::gpu::{Gpu, TransferStats};
use crate::video::{upload_frame, GpuFrame, TexturePool};

use super::caps;
use super::frame_meta::frame_of;

/// The GPU frame of `buffer`, negotiated as `info`: the frame it carries
/// (no copy) or an upload of its pixels.
pub fn frame_in(
    gpu: &Gpu,
    pool: &TexturePool,
    info: &gst_video::VideoInfo,
    buffer: &gst::BufferRef,
) -> Result<(Arc<GpuFrame>, TransferStats)> {
    if let Some(frame) = frame_of(buffer) {
        if frame.width() != info.width() || frame.height() != info.height() {
            return Err(Error::invalid(format!(
                "the buffer's GPU frame is {}x{} but the caps say {}x{}",
                frame.width(),
                frame.height(),
                info.width(),
                info.height()
            )));
        }
        return Ok((frame, TransferStats::default()));
    }
    let layout = caps::frame_layout(info, buffer.meta::<gst_video::VideoMeta>().as_deref())?;
    let map = buffer
        .map_readable()
        .map_err(|_| Error::invalid("cannot map the input buffer for reading"))?;
    let frame = upload_frame(gpu, pool, &layout, map.as_slice())?;
    let bytes: usize = layout
        .planes
        .iter()
        .enumerate()
        .map(|(p, plane)| {
            plane.stride * layout.format.plane_size(p, layout.width, layout.height).1 as usize
        })
        .sum();
    Ok((
        Arc::new(frame),
        TransferStats {
            uploads: layout.planes.len() as u64,
            upload_bytes: bytes as u64,
            ..Default::default()
        },
    ))
}

/// `frame` read back into a new system-memory buffer laid out as `info`.
pub fn download(
    gpu: &Gpu,
    frame: &GpuFrame,
    info: &gst_video::VideoInfo,
) -> Result<(gst::Buffer, TransferStats)> {
    if frame.width() != info.width() || frame.height() != info.height() {
        return Err(Error::invalid(format!(
            "frame is {}x{} but the caps say {}x{}",
            frame.width(),
            frame.height(),
            info.width(),
            info.height()
        )));
    }
    if caps::video_format(info)? != frame.format() {
        return Err(Error::invalid(format!(
            "frame is {} but the caps say {}",
            frame.format(),
            info.format().to_str()
        )));
    }
    let mut out = gst::Buffer::with_size(info.size())
        .map_err(|_| Error::invalid(format!("cannot allocate {} bytes", info.size())))?;
    let mut moved = TransferStats::default();
    {
        let out = out.get_mut().unwrap();
        let mut map = out
            .map_writable()
            .map_err(|_| Error::invalid("cannot map the output buffer for writing"))?;
        let data = map.as_mut_slice();
        // Row padding carries no pixels; zero it rather than leak old memory.
        data.fill(0);
        let format = frame.format();
        for (p, texture) in frame.planes().enumerate() {
            let (_, rows) = format.plane_size(p, frame.width(), frame.height());
            let row = format.row_bytes(p, frame.width());
            let bytes = gpu
                .download_texture(texture, TextureRegion::whole(texture))?
                .wait()?;
            moved.downloads += 1;
            moved.download_bytes += bytes.len() as u64;
            let packed = bytes.len() / rows as usize;
            let stride = info.stride()[p] as usize;
            let offset = info.offset()[p];
            let n = row.min(packed);
            for r in 0..rows as usize {
                let dst = offset + r * stride;
                data[dst..dst + n].copy_from_slice(&bytes[r * packed..r * packed + n]);
            }
        }
    }
    Ok((out, moved))
}

/// Gives a new output buffer its input's timestamps, duration and flags.
pub fn copy_timing(input: &gst::BufferRef, out: &mut gst::Buffer) -> Result<(), gst::FlowError> {
    input
        .copy_into(
            out.make_mut(),
            gst::BufferCopyFlags::FLAGS | gst::BufferCopyFlags::TIMESTAMPS,
            ..,
        )
        .map_err(|_| gst::FlowError::Error)
}
