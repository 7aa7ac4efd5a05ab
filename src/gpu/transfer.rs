//! The one place where bytes cross between CPU and GPU.
//!
//! Every upload and download the library makes is a method here, and each
//! counts its transfers and bytes on the [`Gpu`] it runs on, so that users and
//! tests can see exactly what moved (the pipeline's promise is "0 downloads per
//! frame"). `tests/transfer_discipline.rs` fails if another module calls
//! `write_buffer`, `write_texture` or `map_async` itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use super::Gpu;
use crate::error::{Error, Result};

/// Transfers and bytes in each direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    pub uploads: u64,
    pub upload_bytes: u64,
    pub downloads: u64,
    pub download_bytes: u64,
}

impl TransferStats {
    /// What moved between `earlier` and `self`.
    pub fn since(&self, earlier: &TransferStats) -> TransferStats {
        TransferStats {
            uploads: self.uploads - earlier.uploads,
            upload_bytes: self.upload_bytes - earlier.upload_bytes,
            downloads: self.downloads - earlier.downloads,
            download_bytes: self.download_bytes - earlier.download_bytes,
        }
    }
}

impl std::ops::AddAssign for TransferStats {
    fn add_assign(&mut self, other: TransferStats) {
        self.uploads += other.uploads;
        self.upload_bytes += other.upload_bytes;
        self.downloads += other.downloads;
        self.download_bytes += other.download_bytes;
    }
}

impl std::fmt::Display for TransferStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} uploads ({} B), {} downloads ({} B)",
            self.uploads, self.upload_bytes, self.downloads, self.download_bytes
        )
    }
}

#[derive(Default)]
pub(super) struct Counters {
    uploads: AtomicU64,
    upload_bytes: AtomicU64,
    downloads: AtomicU64,
    download_bytes: AtomicU64,
}

impl Counters {
    fn upload(&self, bytes: u64) {
        self.uploads.fetch_add(1, Ordering::Relaxed);
        self.upload_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn download(&self, bytes: u64) {
        self.downloads.fetch_add(1, Ordering::Relaxed);
        self.download_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> TransferStats {
        TransferStats {
            uploads: self.uploads.load(Ordering::Relaxed),
            upload_bytes: self.upload_bytes.load(Ordering::Relaxed),
            downloads: self.downloads.load(Ordering::Relaxed),
            download_bytes: self.download_bytes.load(Ordering::Relaxed),
        }
    }
}

const ALIGN: u64 = wgpu::COPY_BUFFER_ALIGNMENT;

fn align_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
}

/// Where a texture upload or download goes: a rectangle of one mip level.
#[derive(Clone, Copy, Debug)]
pub struct TextureRegion {
    pub origin: wgpu::Origin3d,
    pub size: wgpu::Extent3d,
    pub mip_level: u32,
    pub aspect: wgpu::TextureAspect,
}

impl TextureRegion {
    pub fn whole(texture: &wgpu::Texture) -> Self {
        TextureRegion {
            origin: wgpu::Origin3d::ZERO,
            size: texture.size(),
            mip_level: 0,
            aspect: wgpu::TextureAspect::All,
        }
    }
}

impl Gpu {
    /// Queues a write of `data` at `offset` into `buffer` (no wait). Lengths that
    /// are not a multiple of 4 are zero-padded when the buffer has room.
    pub fn upload_buffer(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) -> Result<()> {
        self.check()?;
        if !buffer.usage().contains(wgpu::BufferUsages::COPY_DST) {
            return Err(Error::Transfer(
                "upload into a buffer without COPY_DST".into(),
            ));
        }
        if offset % ALIGN != 0 {
            return Err(Error::Transfer(format!(
                "upload offset {offset} is not a multiple of {ALIGN}"
            )));
        }
        if data.is_empty() {
            return Ok(());
        }
        let padded = align_up(data.len() as u64, ALIGN);
        if offset + padded > buffer.size() {
            return Err(Error::Transfer(format!(
                "upload of {} bytes at offset {offset} overruns a {}-byte buffer",
                data.len(),
                buffer.size()
            )));
        }
        if padded == data.len() as u64 {
            self.queue().write_buffer(buffer, offset, data);
        } else {
            let mut tmp = data.to_vec();
            tmp.resize(padded as usize, 0);
            self.queue().write_buffer(buffer, offset, &tmp);
        }
        self.inner.transfers.upload(data.len() as u64);
        Ok(())
    }

    /// Creates a buffer holding `data` (weights, constants). Its size is
    /// rounded up to 4 bytes and the upload is counted.
    pub fn create_buffer_with_data(
        &self,
        label: &str,
        data: &[u8],
        usage: wgpu::BufferUsages,
    ) -> Result<super::live::Buffer> {
        let size = align_up((data.len() as u64).max(ALIGN), ALIGN);
        let buffer = self.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage,
            mapped_at_creation: true,
        })?;
        {
            let mut view = buffer
                .get_mapped_range_mut(..)
                .map_err(|e| Error::Transfer(format!("{label}: {e}")))?;
            let mut bytes = data.to_vec();
            bytes.resize(size as usize, 0);
            view.copy_from_slice(&bytes);
        }
        buffer.unmap();
        if !data.is_empty() {
            self.inner.transfers.upload(data.len() as u64);
        }
        Ok(buffer)
    }

    /// Queues a write of tightly or loosely packed rows into a texture region.
    /// `bytes_per_row` is the source stride; it need not be 256-aligned.
    pub fn upload_texture(
        &self,
        texture: &wgpu::Texture,
        region: TextureRegion,
        data: &[u8],
        bytes_per_row: u32,
        rows: u32,
    ) -> Result<()> {
        self.check()?;
        let needed = bytes_per_row as u64 * rows as u64 * region.size.depth_or_array_layers as u64;
        if (data.len() as u64) < needed {
            return Err(Error::Transfer(format!(
                "texture upload needs {needed} bytes ({rows} rows of {bytes_per_row}), got {}",
                data.len()
            )));
        }
        self.scoped("texture upload", || {
            self.queue().write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: region.mip_level,
                    origin: region.origin,
                    aspect: region.aspect,
                },
                &data[..needed as usize],
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(bytes_per_row),
                    rows_per_image: Some(rows),
                },
                region.size,
            )
        })?;
        self.inner.transfers.upload(needed);
        Ok(())
    }

    /// Starts reading `size` bytes at `offset` of `buffer` back to the CPU. The
    /// copy is queued now; [`Download::wait`] or `.await` returns the bytes.
    pub fn download_buffer(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        size: u64,
    ) -> Result<Download> {
        self.check()?;
        if !buffer.usage().contains(wgpu::BufferUsages::COPY_SRC) {
            return Err(Error::Transfer(
                "download from a buffer without COPY_SRC".into(),
            ));
        }
        if offset % ALIGN != 0 || offset + size > buffer.size() {
            return Err(Error::Transfer(format!(
                "download of {size} bytes at offset {offset} from a {}-byte buffer",
                buffer.size()
            )));
        }
        let padded = align_up(size.max(ALIGN), ALIGN);
        let copy = padded.min(buffer.size() - offset);
        let staging = self.staging(padded)?;
        let mut encoder = self.device().create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, copy);
        self.inner.transfers.download(size);
        self.finish_download(encoder, staging, size as usize, None)
    }

    /// Starts reading a texture region back to the CPU as tightly packed rows.
    pub fn download_texture(
        &self,
        texture: &wgpu::Texture,
        region: TextureRegion,
    ) -> Result<Download> {
        self.check()?;
        let block = texture
            .format()
            .block_copy_size(Some(region.aspect))
            .ok_or_else(|| Error::Transfer(format!("cannot read back {:?}", texture.format())))?;
        let row = region.size.width * block;
        let padded_row = align_up(row as u64, wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64) as u32;
        let rows = region.size.height * region.size.depth_or_array_layers;
        let staging = self.staging(padded_row as u64 * rows as u64)?;
        let mut encoder = self.device().create_command_encoder(&Default::default());
        self.scoped("texture download", || {
            encoder.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: region.mip_level,
                    origin: region.origin,
                    aspect: region.aspect,
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: &staging,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(padded_row),
                        rows_per_image: Some(region.size.height),
                    },
                },
                region.size,
            )
        })?;
        let len = row as usize * rows as usize;
        self.inner.transfers.download(len as u64);
        self.finish_download(encoder, staging, len, Some((padded_row, row, rows)))
    }

    fn staging(&self, size: u64) -> Result<super::live::Buffer> {
        self.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read-back buffer"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    fn finish_download(
        &self,
        encoder: wgpu::CommandEncoder,
        staging: super::live::Buffer,
        len: usize,
        rows: Option<(u32, u32, u32)>,
    ) -> Result<Download> {
        let submission = self.scoped("download", || self.queue().submit([encoder.finish()]))?;
        let state: Arc<Mutex<MapState>> = Arc::default();
        let sink = state.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |result| {
            let mut s = sink.lock().unwrap();
            s.result = Some(result.map_err(|e| e.to_string()));
            if let Some(w) = s.waker.take() {
                w.wake();
            }
        });
        Ok(Download {
            gpu: self.clone(),
            staging,
            len,
            rows,
            submission,
            state,
            poller: false,
        })
    }
}

#[derive(Default)]
struct MapState {
    result: Option<Result<(), String>>,
    waker: Option<Waker>,
}

/// A read-back in flight. Either block on it with [`Download::wait`] or
/// `.await` it (a helper thread drives the device meanwhile).
#[must_use = "a download does nothing useful unless waited for"]
pub struct Download {
    gpu: Gpu,
    staging: super::live::Buffer,
    len: usize,
    rows: Option<(u32, u32, u32)>,
    submission: wgpu::SubmissionIndex,
    state: Arc<Mutex<MapState>>,
    poller: bool,
}

impl std::fmt::Debug for Download {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Download")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl Download {
    /// Blocks until the bytes are on the CPU.
    pub fn wait(mut self) -> Result<Vec<u8>> {
        loop {
            let done = self.state.lock().unwrap().result.take();
            if let Some(r) = done {
                return self.finish(r);
            }
            self.gpu
                .device()
                .poll(wgpu::PollType::Wait {
                    submission_index: Some(self.submission.clone()),
                    timeout: None,
                })
                .map_err(|e| self.gpu.poll_error(e))?;
            self.gpu.check()?;
        }
    }

    /// The number of bytes this download returns.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn finish(&mut self, mapped: Result<(), String>) -> Result<Vec<u8>> {
        // A device lost while the copy was in flight fails the mapping (or
        // the view of it) with a vaguer error than the loss itself, maybe
        // before wgpu has run the lost callback: one poll runs it.
        if mapped.is_err() {
            let _ = self.gpu.device().poll(wgpu::PollType::Poll);
        }
        self.gpu.check()?;
        mapped.map_err(|e| Error::Transfer(format!("mapping the read-back buffer failed: {e}")))?;
        let out = {
            let view = self
                .staging
                .get_mapped_range(..)
                .map_err(|e| Error::Transfer(e.to_string()))?;
            match self.rows {
                None => view[..self.len].to_vec(),
                Some((padded, row, rows)) => {
                    let mut out = Vec::with_capacity(self.len);
                    for r in 0..rows as usize {
                        let start = r * padded as usize;
                        out.extend_from_slice(&view[start..start + row as usize]);
                    }
                    out
                }
            }
        };
        self.staging.unmap();
        Ok(out)
    }
}

impl Future for Download {
    type Output = Result<Vec<u8>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let result = {
            let mut s = self.state.lock().unwrap();
            match s.result.take() {
                Some(r) => r,
                None => {
                    s.waker = Some(cx.waker().clone());
                    drop(s);
                    if !self.poller {
                        self.poller = true;
                        let device = self.gpu.device().clone();
                        let submission = self.submission.clone();
                        std::thread::spawn(move || {
                            let _ = device.poll(wgpu::PollType::Wait {
                                submission_index: Some(submission),
                                timeout: None,
                            });
                        });
                    }
                    return Poll::Pending;
                }
            }
        };
        Poll::Ready(self.finish(result))
    }
}
