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

use super::upload_ring::Lease;
use super::{Commands, Gpu};
use crate::error::{Error, Result};

/// Transfers and bytes in each direction, and frames the GPU reads where
/// they already were (DMA-BUF imports, `crate::video::dmabuf`): an imported
/// frame moves no bytes, so it is counted apart, and a zero-copy pipeline
/// shows `upload_bytes == 0` with `frames_imported` growing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    pub uploads: u64,
    pub upload_bytes: u64,
    pub downloads: u64,
    pub download_bytes: u64,
    /// Frames read from imported memory instead of being uploaded.
    pub frames_imported: u64,
    /// The bytes of those frames' planes (stride x rows), which did not move.
    pub bytes_imported: u64,
}

impl TransferStats {
    /// What moved between `earlier` and `self`.
    pub fn since(&self, earlier: &TransferStats) -> TransferStats {
        TransferStats {
            uploads: self.uploads - earlier.uploads,
            upload_bytes: self.upload_bytes - earlier.upload_bytes,
            downloads: self.downloads - earlier.downloads,
            download_bytes: self.download_bytes - earlier.download_bytes,
            frames_imported: self.frames_imported - earlier.frames_imported,
            bytes_imported: self.bytes_imported - earlier.bytes_imported,
        }
    }
}

impl std::ops::AddAssign for TransferStats {
    fn add_assign(&mut self, other: TransferStats) {
        self.uploads += other.uploads;
        self.upload_bytes += other.upload_bytes;
        self.downloads += other.downloads;
        self.download_bytes += other.download_bytes;
        self.frames_imported += other.frames_imported;
        self.bytes_imported += other.bytes_imported;
    }
}

impl std::fmt::Display for TransferStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} uploads ({} B), {} downloads ({} B)",
            self.uploads, self.upload_bytes, self.downloads, self.download_bytes
        )?;
        if self.frames_imported > 0 {
            write!(
                f,
                ", {} frames imported ({} B not copied)",
                self.frames_imported, self.bytes_imported
            )?;
        }
        Ok(())
    }
}

#[derive(Default)]
pub(super) struct Counters {
    uploads: AtomicU64,
    upload_bytes: AtomicU64,
    downloads: AtomicU64,
    download_bytes: AtomicU64,
    frames_imported: AtomicU64,
    bytes_imported: AtomicU64,
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

    pub(super) fn import(&self, bytes: u64) {
        self.frames_imported.fetch_add(1, Ordering::Relaxed);
        self.bytes_imported.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> TransferStats {
        TransferStats {
            uploads: self.uploads.load(Ordering::Relaxed),
            upload_bytes: self.upload_bytes.load(Ordering::Relaxed),
            downloads: self.downloads.load(Ordering::Relaxed),
            download_bytes: self.download_bytes.load(Ordering::Relaxed),
            frames_imported: self.frames_imported.load(Ordering::Relaxed),
            bytes_imported: self.bytes_imported.load(Ordering::Relaxed),
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

/// One plane of a frame upload: `rows` rows of `bytes_per_row` bytes (the
/// source stride; it need not be 256-aligned) into a texture region.
#[derive(Clone, Copy, Debug)]
pub struct TextureWrite<'a> {
    pub texture: &'a wgpu::Texture,
    pub region: TextureRegion,
    pub data: &'a [u8],
    pub bytes_per_row: u32,
    pub rows: u32,
}

struct PlannedPlane {
    offset: u64,
    padded_row: u32,
    /// Bytes of one row of texels, without padding.
    row: usize,
}

struct StagingPlan {
    planes: Vec<PlannedPlane>,
    size: u64,
}

/// Below this many bytes a plane is copied on the calling thread: waking the
/// pool costs more than it saves.
const PARALLEL_BYTES: usize = 1 << 20;

/// Rows copied by one task at least (about 256 KiB of a 1080p RGBA frame).
const MIN_TASK_BYTES: usize = 1 << 18;

/// The bands plane `p` of `height` rows is copied in: one below
/// [`PARALLEL_BYTES`] or where the pool has one thread.
fn plane_tasks(p: &PlannedPlane, height: usize) -> usize {
    let threads = rayon::current_num_threads();
    if p.padded_row as usize * height < PARALLEL_BYTES || threads < 2 {
        return 1;
    }
    let per_task = (MIN_TASK_BYTES / p.padded_row as usize).max(1);
    threads.min(height.div_ceil(per_task)).max(1)
}

/// Whether [`write_planes`] copies any plane in parallel bands.
fn write_in_parallel(writes: &[TextureWrite<'_>], plan: &StagingPlan) -> bool {
    writes
        .iter()
        .zip(&plan.planes)
        .any(|(w, p)| plane_tasks(p, w.region.size.height as usize) > 1)
}

/// Copies the planes' rows into the mapped staging bytes at their padded
/// places. Large planes are split into bands of rows copied in parallel:
/// mapped GPU memory is write-combined (or across PCIe), and one core's
/// stores do not fill the bus.
fn write_planes(mut view: wgpu::BufferViewMut, writes: &[TextureWrite<'_>], plan: &StagingPlan) {
    let bands = plan_bands(&mut view, writes, plan);
    if bands.len() == 1 || !write_in_parallel(writes, plan) {
        bands.into_iter().for_each(copy_band);
    } else {
        use rayon::prelude::*;
        bands.into_par_iter().for_each(copy_band);
    }
}

/// The bands of rows the planes are copied in, each a task of its own
/// ([`plane_tasks`] per plane).
fn plan_bands<'v>(
    view: &'v mut wgpu::BufferViewMut,
    writes: &[TextureWrite<'v>],
    plan: &'v StagingPlan,
) -> Vec<Band<'v>> {
    let mut rest = view.slice(..);
    let mut at = 0u64;
    let mut bands = Vec::new();
    for (w, p) in writes.iter().zip(&plan.planes) {
        let skip = (p.offset - at) as usize;
        let (_, tail) = rest.split_at(skip);
        let plane_bytes = p.padded_row as usize * w.region.size.height as usize;
        let (mut dst, tail) = tail.split_at(plane_bytes);
        rest = tail;
        at = p.offset + plane_bytes as u64;
        let height = w.region.size.height as usize;
        let band_rows = height.div_ceil(plane_tasks(p, height));
        let mut first = 0;
        while first < height {
            let rows = band_rows.min(height - first);
            let (band, tail) = dst.split_at(rows * p.padded_row as usize);
            dst = tail;
            let src = &w.data[first * w.bytes_per_row as usize..];
            bands.push(Band {
                dst: band,
                src,
                rows,
                stride: w.bytes_per_row as usize,
                plane: p,
            });
            first += rows;
        }
    }
    bands
}

/// How a frame's planes go from the staging buffer to their textures.
struct Staged<'w> {
    /// Planes a compute pass writes (`upload_unpack`).
    unpacks: Vec<super::upload_unpack::Unpack<'w>>,
    /// The rest, copied.
    copies: Vec<(&'w TextureWrite<'w>, &'w PlannedPlane)>,
}

impl Staged<'_> {
    /// The upload's commands, from `buffer`.
    fn encode(&self, gpu: &Gpu, buffer: &wgpu::Buffer) -> Result<wgpu::CommandBuffer> {
        gpu.scoped("texture upload", || {
            let mut encoder =
                gpu.device()
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("wgnn frame upload"),
                    });
            gpu.encode_unpacks(&mut encoder, buffer, &self.unpacks);
            for &(w, p) in &self.copies {
                encoder.copy_buffer_to_texture(
                    wgpu::TexelCopyBufferInfo {
                        buffer,
                        layout: wgpu::TexelCopyBufferLayout {
                            offset: p.offset,
                            bytes_per_row: Some(p.padded_row),
                            rows_per_image: Some(w.region.size.height),
                        },
                    },
                    wgpu::TexelCopyTextureInfo {
                        texture: w.texture,
                        mip_level: w.region.mip_level,
                        origin: w.region.origin,
                        aspect: w.region.aspect,
                    },
                    w.region.size,
                );
            }
            encoder.finish()
        })
    }
}

/// Whether [`Gpu::upload_textures_then`] copies while its caller records
/// (`WGNN_UPLOAD_OVERLAP`, default on).
pub fn upload_overlap() -> bool {
    std::env::var(UPLOAD_OVERLAP_ENV).as_deref() != Ok("0")
}

/// Set to 0, [`Gpu::upload_textures_then`] uploads, submits, and only then
/// lets its caller record (to compare the two on a device).
pub const UPLOAD_OVERLAP_ENV: &str = "WGNN_UPLOAD_OVERLAP";

/// One band of rows: a destination of `rows` padded rows, the source from
/// its first row on with its stride, and the plane's layout.
struct Band<'a> {
    dst: wgpu::WriteOnly<'a, [u8]>,
    src: &'a [u8],
    rows: usize,
    stride: usize,
    plane: &'a PlannedPlane,
}

// SAFETY: a `WriteOnly<[u8]>` is an exclusive write-only borrow, as `&mut
// [u8]` is, and `&mut [u8]` is Send. wgpu declares `WriteOnly<T>` Send for
// `T: Send` but its impl carries the implicit `T: Sized` bound, which leaves
// slices out; the bands are disjoint (split off one another), so sending
// each to one thread is as sound as sending disjoint `&mut [u8]`.
unsafe impl Send for Band<'_> {}

fn copy_band(band: Band<'_>) {
    let Band {
        mut dst,
        src,
        rows,
        stride,
        plane: p,
    } = band;
    let padded = p.padded_row as usize;
    if stride == p.row && padded == p.row {
        dst.copy_from_slice(&src[..rows * p.row]);
    } else {
        for r in 0..rows {
            dst.slice(r * padded..r * padded + p.row)
                .copy_from_slice(&src[r * stride..r * stride + p.row]);
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

    /// Uploads several planes (a frame's) into their textures through a
    /// ring of reused staging buffers ([`upload_ring`]), submitting
    /// the copies at once so that anything submitted later reads the new
    /// bytes. Counted as one upload per plane of `bytes_per_row * rows`
    /// bytes, as [`Gpu::upload_texture`] counts it. Falls back to
    /// `upload_texture` per plane when no ring buffer is free, when the ring
    /// is switched off (`WGNN_UPLOAD_RING=0`) or for copies it does not
    /// handle (block-compressed formats, 3D regions).
    ///
    /// [`upload_ring`]: super::upload_ring
    pub fn upload_textures(
        &self,
        ring: &super::UploadRing,
        writes: &[TextureWrite<'_>],
    ) -> Result<()> {
        self.check()?;
        let plan = match self.staging_plan(writes)? {
            Some(plan) if ring.enabled() => plan,
            _ => return self.upload_each(writes),
        };
        let Some(lease) = self.lease_or_upload(ring, writes, &plan)? else {
            return Ok(());
        };
        let staged = self.stage(ring, &lease, writes, &plan)?;
        let view = lease
            .buffer
            .get_mapped_range_mut(..plan.size)
            .map_err(|e| Error::Transfer(format!("upload staging buffer: {e}")))?;
        // The commands do not depend on the bytes (only their submission
        // must wait for them), so where the bytes are copied in parallel
        // the commands are encoded meanwhile, as one more job on the pool:
        // on an H200 host a 1080p RGBA upload took 0.37-0.41 ms so against
        // 0.43-0.46 encoded after the copy. (Encoding on this thread while
        // the copy ran as a spawned job made it slower than either.)
        let commands = if write_in_parallel(writes, &plan) {
            let mut encoded = None;
            rayon::in_place_scope(|s| {
                s.spawn(|_| encoded = Some(staged.encode(self, &lease.buffer)));
                write_planes(view, writes, &plan);
            });
            encoded.expect("the scope ran the encoding")
        } else {
            write_planes(view, writes, &plan);
            staged.encode(self, &lease.buffer)
        }?;
        lease.buffer.unmap();
        self.submit("texture upload", [commands])?;
        self.staged(ring, lease, writes, &staged);
        Ok(())
    }

    /// [`Gpu::upload_textures`] with the commands that read the planes:
    /// `during` records them into `commands` on this thread while the
    /// pool copies the planes' bytes, and the upload and `during`'s
    /// commands go in one submission (`what` names it in an error), the
    /// upload first. A frame's passes then cost the host no time of their
    /// own beside its upload, which is bound by the bus to the GPU, not by
    /// the cores (docs/BENCHMARKS.md). `during` must not submit: anything
    /// it submits would run before the upload. Where `during` fails, the
    /// upload is still submitted, alone, and its error returned.
    ///
    /// Set `WGNN_UPLOAD_OVERLAP=0` to upload first and record after, in two
    /// submissions, as [`Gpu::upload_textures`] and then `during` did (to
    /// compare the two on a device).
    pub fn upload_textures_then<R>(
        &self,
        ring: &super::UploadRing,
        writes: &[TextureWrite<'_>],
        what: &str,
        during: impl FnOnce(&mut Commands) -> Result<R>,
    ) -> Result<(R, wgpu::SubmissionIndex)> {
        self.check()?;
        // Where nothing is copied while `during` records: the upload first
        // (through the ring unless a fallback was taken already), then the
        // work in a submission of its own.
        let lease = match self.staging_plan(writes)? {
            Some(plan) if ring.enabled() && upload_overlap() => self
                .lease_or_upload(ring, writes, &plan)?
                .map(|lease| (plan, lease)),
            _ => {
                self.upload_textures(ring, writes)?;
                None
            }
        };
        let Some((plan, lease)) = lease else {
            let mut commands = Commands::new(self);
            let r = during(&mut commands)?;
            return Ok((r, commands.submit(what)?));
        };
        let staged = self.stage(ring, &lease, writes, &plan)?;
        let mut view = lease
            .buffer
            .get_mapped_range_mut(..plan.size)
            .map_err(|e| Error::Transfer(format!("upload staging buffer: {e}")))?;
        let mut commands = Commands::new(self);
        let (upload, recorded) = rayon::in_place_scope(|s| {
            let parallel = write_in_parallel(writes, &plan);
            let bands = plan_bands(&mut view, writes, &plan);
            let mut bands = bands.into_iter();
            if parallel {
                for band in bands.by_ref() {
                    s.spawn(move |_| copy_band(band));
                }
            }
            let upload = staged.encode(self, &lease.buffer);
            let recorded = during(&mut commands);
            bands.for_each(copy_band);
            (upload, recorded)
        });
        drop(view);
        let upload = upload?;
        lease.buffer.unmap();
        let submitted = match recorded {
            Ok(r) => commands.submit_after(upload, what).map(|index| (r, index)),
            Err(e) => self.submit("texture upload", [upload]).and(Err(e)),
        };
        self.staged(ring, lease, writes, &staged);
        submitted
    }

    /// A ring buffer for `plan`; where none is free, None once `writes`
    /// went through `write_texture` instead (counted as a fallback).
    fn lease_or_upload<'r>(
        &self,
        ring: &'r super::UploadRing,
        writes: &[TextureWrite<'_>],
        plan: &StagingPlan,
    ) -> Result<Option<Lease<'r>>> {
        let lease = ring.acquire(self, plan.size)?;
        if lease.is_none() {
            ring.count_fallback();
            self.upload_each(writes)?;
        }
        Ok(lease)
    }

    /// How each plane of `writes` goes from `lease`'s buffer to its
    /// texture: by a compute pass (`upload_unpack`) or a copy.
    fn stage<'w>(
        &self,
        ring: &super::UploadRing,
        lease: &Lease<'_>,
        writes: &'w [TextureWrite<'w>],
        plan: &'w StagingPlan,
    ) -> Result<Staged<'w>> {
        let mut unpacks = Vec::new();
        let mut copies = Vec::new();
        for (w, p) in writes.iter().zip(&plan.planes) {
            let bytes = u64::from(p.padded_row) * u64::from(w.region.size.height);
            match self.unpack_for(ring, &lease.buffer, w.texture, &w.region, p.offset, bytes)? {
                Some(u) => unpacks.push(u),
                None => copies.push((w, p)),
            }
        }
        Ok(Staged { unpacks, copies })
    }

    /// After the upload's submission: the buffer goes back to the ring
    /// (mapped again once the GPU has read it) and the planes are counted.
    fn staged(
        &self,
        ring: &super::UploadRing,
        lease: Lease<'_>,
        writes: &[TextureWrite<'_>],
        staged: &Staged<'_>,
    ) {
        lease.remap(self);
        ring.count_unpacked(staged.unpacks.len());
        for w in writes {
            self.inner
                .transfers
                .upload(u64::from(w.bytes_per_row) * u64::from(w.rows));
        }
    }

    /// Each plane with `write_texture`.
    fn upload_each(&self, writes: &[TextureWrite<'_>]) -> Result<()> {
        for w in writes {
            self.upload_texture(w.texture, w.region, w.data, w.bytes_per_row, w.rows)?;
        }
        Ok(())
    }

    /// Where each plane goes in a staging buffer (rows padded to 256 bytes,
    /// planes at 256-byte offsets), after checking the bytes are there; None
    /// for copies the ring leaves to `write_texture`.
    fn staging_plan(&self, writes: &[TextureWrite<'_>]) -> Result<Option<StagingPlan>> {
        let mut planes = Vec::with_capacity(writes.len());
        let mut size = 0u64;
        for w in writes {
            let format = w.texture.format();
            let block = match (
                format.block_dimensions(),
                format.block_copy_size(Some(w.region.aspect)),
            ) {
                ((1, 1), Some(block)) => block,
                _ => return Ok(None),
            };
            if w.region.size.depth_or_array_layers != 1 {
                return Ok(None);
            }
            let (width, height) = (w.region.size.width, w.region.size.height);
            let row = u64::from(width) * u64::from(block);
            let needed = u64::from(w.bytes_per_row) * u64::from(w.rows);
            if (w.data.len() as u64) < needed {
                return Err(Error::Transfer(format!(
                    "texture upload needs {needed} bytes ({} rows of {}), got {}",
                    w.rows,
                    w.bytes_per_row,
                    w.data.len()
                )));
            }
            if u64::from(w.bytes_per_row) < row || w.rows < height {
                return Err(Error::Transfer(format!(
                    "texture upload of {width}x{height} texels ({row} bytes a row) from {} rows \
                     of {} bytes",
                    w.rows, w.bytes_per_row
                )));
            }
            let padded_row = align_up(row, wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64);
            let offset = align_up(size, wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64);
            size = offset + padded_row * u64::from(height);
            planes.push(PlannedPlane {
                offset,
                padded_row: u32::try_from(padded_row)
                    .map_err(|_| Error::Transfer(format!("a texture row of {row} bytes")))?,
                row: row as usize,
            });
        }
        if size == 0 || size > self.limits().max_buffer_size {
            return Ok(None);
        }
        Ok(Some(StagingPlan { planes, size }))
    }

    /// A `MAP_WRITE | COPY_SRC` buffer, mapped, for the upload ring; also
    /// STORAGE where uploads unpack planes by compute (`upload_unpack`).
    pub(super) fn mapped_upload_buffer(&self, size: u64) -> Result<super::live::Buffer> {
        let storage = match self.inner.unpack_formats.is_empty() {
            true => wgpu::BufferUsages::empty(),
            false => wgpu::BufferUsages::STORAGE,
        };
        self.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgnn upload staging"),
            size,
            usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC | storage,
            mapped_at_creation: true,
        })
    }

    /// Maps a ring buffer again; `state` turns Ready (or Failed) when wgpu
    /// completes the mapping, after the copies already submitted from it.
    pub(super) fn map_for_upload(
        &self,
        buffer: &wgpu::Buffer,
        state: Arc<Mutex<super::upload_ring::SlotState>>,
    ) {
        use super::upload_ring::SlotState;
        buffer.map_async(wgpu::MapMode::Write, .., move |result| {
            *state.lock().unwrap() = match result {
                Ok(()) => SlotState::Ready,
                Err(e) => SlotState::Failed(e.to_string()),
            };
        });
    }

    /// Starts reading `size` bytes at `offset` of `buffer` back to the CPU. The
    /// copy is queued now; [`Download::wait`] or `.await` returns the bytes.
    pub fn download_buffer(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        size: u64,
    ) -> Result<Download> {
        let mut encoder = self.device().create_command_encoder(&Default::default());
        let recorded = self.record_download(&mut encoder, buffer, offset, size)?;
        let submission = self.submit("download", [encoder.finish()])?;
        Ok(recorded.start(submission))
    }

    /// [`Gpu::download_buffer`]'s copy recorded into `encoder`, after the
    /// commands that write `buffer`, so that both go in the caller's one
    /// submission; [`RecordedDownload::start`] starts the read once it is
    /// submitted. Counted now.
    pub fn record_download(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffer: &wgpu::Buffer,
        offset: u64,
        size: u64,
    ) -> Result<RecordedDownload> {
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
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, copy);
        self.inner.transfers.download(size);
        Ok(RecordedDownload {
            gpu: self.clone(),
            staging,
            len: size as usize,
            rows: None,
        })
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
        let recorded = RecordedDownload {
            gpu: self.clone(),
            staging,
            len,
            rows: Some((padded_row, row, rows)),
        };
        let submission = self.submit("download", [encoder.finish()])?;
        Ok(recorded.start(submission))
    }

    fn staging(&self, size: u64) -> Result<super::live::Buffer> {
        self.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read-back buffer"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }
}

#[derive(Default)]
struct MapState {
    result: Option<Result<(), String>>,
    waker: Option<Waker>,
}

/// A read-back copy recorded into a caller's commands, not yet started:
/// [`RecordedDownload::start`] it once they are submitted (mapping the
/// buffer earlier would fail their submission).
#[must_use = "a recorded download reads nothing until started"]
pub struct RecordedDownload {
    gpu: Gpu,
    staging: super::live::Buffer,
    len: usize,
    rows: Option<(u32, u32, u32)>,
}

impl RecordedDownload {
    /// Starts reading the bytes back; `submission` is the one that holds
    /// the copy.
    pub fn start(self, submission: wgpu::SubmissionIndex) -> Download {
        let state: Arc<Mutex<MapState>> = Arc::default();
        let sink = state.clone();
        self.staging
            .map_async(wgpu::MapMode::Read, .., move |result| {
                let mut s = sink.lock().unwrap();
                s.result = Some(result.map_err(|e| e.to_string()));
                if let Some(w) = s.waker.take() {
                    w.wake();
                }
            });
        Download {
            gpu: self.gpu,
            staging: self.staging,
            len: self.len,
            rows: self.rows,
            submission,
            state,
            poller: false,
        }
    }
}

impl std::fmt::Debug for RecordedDownload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordedDownload")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
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

    /// Whether the bytes have arrived, so that [`Download::wait`] returns
    /// at once: polls the device once, without waiting. A device error also
    /// counts as ready (`wait` returns it).
    pub fn ready(&self) -> bool {
        if self.state.lock().unwrap().result.is_some() {
            return true;
        }
        if self.gpu.device().poll(wgpu::PollType::Poll).is_err() {
            return true;
        }
        self.state.lock().unwrap().result.is_some()
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
