//! A ring of staging buffers that frame uploads reuse.
//!
//! `Queue::write_texture` (wgpu-core 30) creates a fresh staging buffer for
//! every call (a Vulkan buffer, a sub-allocation, a bind), copies the bytes
//! into it on the calling thread, and frees it once the submission that used
//! it is done. For a 1080p RGBA frame that is 8.3 MB allocated and freed per
//! frame. The ring keeps a few `MAP_WRITE | COPY_SRC` buffers mapped between
//! uses instead: a frame is copied into a free one (split across the rayon
//! pool when large, because a single core does not fill the bus to mapped
//! GPU memory), unmapped, its copies to the plane textures (or a compute
//! pass writing them, where the device allows: `upload_unpack`) are
//! submitted at once (so whatever is submitted next reads the new frame), and the buffer
//! is mapped again right away; wgpu completes that mapping once the copy has
//! run, during a later submit or poll, and the buffer is free for a frame
//! after next. Where no buffer is free the upload falls back to
//! `write_texture`, so a GPU far behind the host costs allocations, never a
//! wait.
//!
//! Each upload path owns its ring (a [`TexturePool`](crate::video::TexturePool)
//! holds one beside its frame textures), so an element's staging buffers go
//! when the element stops, as its textures do, and the device keeps nothing
//! per stream. The raw mapping calls stay in [`transfer`](super::transfer),
//! which counts every byte; this module only keeps the buffers and their
//! states.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{live, Gpu};
use crate::error::{Error, Result};

/// Buffers in the ring: enough for the frame being written, two frames
/// queued behind it and one whose mapping is still being completed.
pub const SLOTS: usize = 4;

/// Slot sizes are rounded up to this, so that frames whose size varies a
/// little (a cropped stream) do not replace a slot every frame.
const GRANULE: u64 = 1 << 16;

/// Set to 0, frame uploads go through `write_texture` as before the ring
/// (to compare the two on a device).
pub const UPLOAD_RING_ENV: &str = "WGNN_UPLOAD_RING";

/// Where a slot is in its cycle.
#[derive(Debug)]
pub(super) enum SlotState {
    /// Mapped, nothing queued reads it: free for the next frame.
    Ready,
    /// Being written, or copied from on the GPU and being mapped again.
    Busy,
    /// Mapping it again failed (the device was lost, most likely).
    Failed(String),
}

struct Slot {
    buffer: live::Buffer,
    state: Arc<Mutex<SlotState>>,
}

/// How frame uploads went on one device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StagingStats {
    /// Uploads (one per frame, all planes) copied through a ring buffer.
    pub staged: u64,
    /// Uploads that found no free ring buffer and used `write_texture`.
    pub fallbacks: u64,
    /// Ring buffers created (at most [`SLOTS`] plus one per growth).
    pub buffers_created: u64,
    /// Planes of the staged uploads written by a compute pass rather than
    /// copied (`WGNN_UPLOAD_UNPACK`, [`Gpu::upload_usage`]).
    pub planes_unpacked: u64,
}

impl StagingStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &StagingStats) -> StagingStats {
        StagingStats {
            staged: self.staged - earlier.staged,
            fallbacks: self.fallbacks - earlier.fallbacks,
            buffers_created: self.buffers_created - earlier.buffers_created,
            planes_unpacked: self.planes_unpacked - earlier.planes_unpacked,
        }
    }
}

/// Staging buffers for [`Gpu::upload_textures`], reused from frame to frame.
pub struct UploadRing {
    enabled: bool,
    slots: Mutex<Slots>,
    /// The unpack kernels uploads through this ring used, by device and
    /// format (`upload_unpack`): found here without building their source
    /// and hashing it into the device's cache every frame (12 us a frame).
    unpackers: Mutex<Vec<(usize, wgpu::TextureFormat, live::ComputePipeline)>>,
    staged: AtomicU64,
    fallbacks: AtomicU64,
    created: AtomicU64,
    unpacked: AtomicU64,
}

/// The ring's buffers and the device they were made on.
#[derive(Default)]
struct Slots {
    device: Option<usize>,
    slots: Vec<Slot>,
}

impl Default for UploadRing {
    fn default() -> Self {
        UploadRing::new()
    }
}

impl std::fmt::Debug for UploadRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UploadRing")
            .field("enabled", &self.enabled)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl UploadRing {
    /// An empty ring (buffers are made as uploads need them), switched off
    /// where `WGNN_UPLOAD_RING=0`.
    pub fn new() -> UploadRing {
        let enabled = std::env::var(UPLOAD_RING_ENV).as_deref() != Ok("0");
        if !enabled {
            log::debug!("{UPLOAD_RING_ENV}=0: frame uploads use write_texture");
        }
        UploadRing {
            enabled,
            slots: Mutex::default(),
            unpackers: Mutex::default(),
            staged: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
            created: AtomicU64::new(0),
            unpacked: AtomicU64::new(0),
        }
    }

    pub(super) fn enabled(&self) -> bool {
        self.enabled
    }

    /// How the uploads through this ring went.
    pub fn stats(&self) -> StagingStats {
        StagingStats {
            staged: self.staged.load(Ordering::Relaxed),
            fallbacks: self.fallbacks.load(Ordering::Relaxed),
            buffers_created: self.created.load(Ordering::Relaxed),
            planes_unpacked: self.unpacked.load(Ordering::Relaxed),
        }
    }

    pub(super) fn count_unpacked(&self, planes: usize) {
        self.unpacked.fetch_add(planes as u64, Ordering::Relaxed);
    }

    pub(super) fn count_fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops every buffer (those still being copied from go once the copy
    /// is done) and kernel.
    pub fn clear(&self) {
        self.slots.lock().unwrap().slots.clear();
        self.unpackers.lock().unwrap().clear();
    }

    /// The unpack kernel for `format` on `gpu`, made by `make` the first
    /// time.
    pub(super) fn unpacker(
        &self,
        gpu: &Gpu,
        format: wgpu::TextureFormat,
        make: impl FnOnce() -> Result<live::ComputePipeline>,
    ) -> Result<live::ComputePipeline> {
        let mut unpackers = self.unpackers.lock().unwrap();
        let found = unpackers
            .iter()
            .find(|(device, f, _)| *device == gpu.id() && *f == format);
        if let Some((_, _, pipeline)) = found {
            return Ok(pipeline.clone());
        }
        let pipeline = make()?;
        unpackers.push((gpu.id(), format, pipeline.clone()));
        Ok(pipeline)
    }

    /// A mapped buffer of at least `size` bytes, or None when every slot is
    /// still in use. A slot whose mapping failed is an error (the device's
    /// own fault where it has one).
    pub(super) fn acquire(&self, gpu: &Gpu, size: u64) -> Result<Option<Lease<'_>>> {
        let size = size.div_ceil(GRANULE) * GRANULE;
        for attempt in 0..2 {
            let mut guard = self.slots.lock().unwrap();
            if guard.device != Some(gpu.id()) {
                // Buffers of another device cannot be copied from here. The
                // ring is made whole at once: grown one buffer at a time, it
                // grew whenever the GPU fell a frame further behind, however
                // late in a stream (a soak run's live buffers then changed
                // between reports with nothing leaking).
                guard.slots.clear();
                guard.device = Some(gpu.id());
                for _ in 0..SLOTS {
                    let slot = self.new_slot(gpu, size)?;
                    guard.slots.push(slot);
                }
            }
            let slots = &mut guard.slots;
            let failed = slots
                .iter()
                .position(|s| matches!(*s.state.lock().unwrap(), SlotState::Failed(_)));
            if let Some(i) = failed {
                let slot = slots.remove(i);
                drop(guard);
                gpu.check()?;
                let reason = match &*slot.state.lock().unwrap() {
                    SlotState::Failed(reason) => reason.clone(),
                    _ => String::new(),
                };
                return Err(Error::Transfer(format!(
                    "mapping an upload staging buffer failed: {reason}"
                )));
            }
            let ready: Vec<usize> = (0..slots.len())
                .filter(|&i| matches!(*slots[i].state.lock().unwrap(), SlotState::Ready))
                .collect();
            let fits = ready
                .iter()
                .copied()
                .find(|&i| slots[i].buffer.size() >= size);
            let index = match (fits, ready.first()) {
                (Some(i), _) => i,
                (None, _) if slots.len() < SLOTS => {
                    slots.push(self.new_slot(gpu, size)?);
                    slots.len() - 1
                }
                // Every slot is free or busy and the free ones are too small
                // (the frames grew): the first free one is replaced.
                (None, Some(&i)) => {
                    slots[i] = self.new_slot(gpu, size)?;
                    i
                }
                (None, None) => {
                    drop(guard);
                    if attempt == 0 {
                        // Mappings complete when wgpu polls; a caller that
                        // neither submits nor polls between frames would
                        // otherwise never see a slot come free.
                        gpu.device()
                            .poll(wgpu::PollType::Poll)
                            .map_err(|e| gpu.poll_error(e))?;
                    }
                    continue;
                }
            };
            let slot = &slots[index];
            *slot.state.lock().unwrap() = SlotState::Busy;
            return Ok(Some(Lease {
                ring: self,
                buffer: slot.buffer.clone(),
                state: slot.state.clone(),
                returned: false,
            }));
        }
        Ok(None)
    }

    fn new_slot(&self, gpu: &Gpu, size: u64) -> Result<Slot> {
        let buffer = gpu.mapped_upload_buffer(size)?;
        self.created.fetch_add(1, Ordering::Relaxed);
        Ok(Slot {
            buffer,
            state: Arc::new(Mutex::new(SlotState::Ready)),
        })
    }

    fn forget(&self, state: &Arc<Mutex<SlotState>>) {
        self.slots
            .lock()
            .unwrap()
            .slots
            .retain(|s| !Arc::ptr_eq(&s.state, state));
    }
}

/// A ring buffer on loan for one upload. Unless handed back with
/// [`Lease::remap`] (after its copies were submitted), dropping it takes the
/// buffer out of the ring: its state is then unknown.
pub(super) struct Lease<'a> {
    ring: &'a UploadRing,
    pub(super) buffer: live::Buffer,
    state: Arc<Mutex<SlotState>>,
    returned: bool,
}

impl Lease<'_> {
    /// Maps the (unmapped) buffer again for a later frame (wgpu finishes the mapping
    /// once the submitted copies from it have run) and counts the upload.
    pub(super) fn remap(mut self, gpu: &Gpu) {
        gpu.map_for_upload(&self.buffer, self.state.clone());
        self.ring.staged.fetch_add(1, Ordering::Relaxed);
        self.returned = true;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if !self.returned {
            self.ring.forget(&self.state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::transfer::{TextureRegion, TextureWrite};

    fn gpu() -> Gpu {
        Gpu::new().unwrap_or_else(|e| panic!("the upload ring tests need a GPU adapter: {e}"))
    }

    fn texture(gpu: &Gpu, width: u32, height: u32) -> live::Texture {
        gpu.create_texture(&wgpu::TextureDescriptor {
            label: Some("upload ring test"),
            size: wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::Rgba8Unorm,
            usage: wgpu::TextureUsages::COPY_DST | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        })
        .unwrap()
    }

    fn upload(gpu: &Gpu, ring: &UploadRing, t: &wgpu::Texture, bytes: &[u8]) -> Result<()> {
        gpu.upload_textures(
            ring,
            &[TextureWrite {
                texture: t,
                region: TextureRegion::whole(t),
                data: bytes,
                bytes_per_row: t.width() * 4,
                rows: t.height(),
            }],
        )
    }

    fn read(gpu: &Gpu, t: &wgpu::Texture) -> Vec<u8> {
        gpu.download_texture(t, TextureRegion::whole(t))
            .unwrap()
            .wait()
            .unwrap()
    }

    #[test]
    fn with_every_buffer_on_loan_uploads_fall_back_to_write_texture() {
        let gpu = gpu();
        let ring = &UploadRing::new();
        let leases: Vec<Lease> = (0..SLOTS)
            .map(|_| ring.acquire(&gpu, 1000).unwrap().expect("a free slot"))
            .collect();
        assert!(ring.acquire(&gpu, 1000).unwrap().is_none());

        let t = texture(&gpu, 7, 5);
        let bytes: Vec<u8> = (0..7 * 5 * 4).map(|i| (i * 7 % 251) as u8).collect();
        let before = ring.stats();
        upload(&gpu, ring, &t, &bytes).unwrap();
        let used = ring.stats().since(&before);
        assert_eq!((used.staged, used.fallbacks), (0, 1));
        assert_eq!(read(&gpu, &t), bytes);

        // A lease dropped without its buffer being mapped again takes the
        // buffer out of the ring; the next upload makes a new one.
        drop(leases);
        assert_eq!(ring.slots.lock().unwrap().slots.len(), 0);
        let before = ring.stats();
        let bytes: Vec<u8> = bytes.iter().map(|b| b ^ 0x5a).collect();
        upload(&gpu, ring, &t, &bytes).unwrap();
        let used = ring.stats().since(&before);
        assert_eq!(
            (used.staged, used.fallbacks, used.buffers_created),
            (1, 0, 1)
        );
        assert_eq!(read(&gpu, &t), bytes);
    }

    #[test]
    fn with_every_buffer_on_loan_work_recorded_with_the_upload_still_follows_it() {
        let gpu = gpu();
        let ring = &UploadRing::new();
        let _leases: Vec<Lease> = (0..SLOTS)
            .map(|_| ring.acquire(&gpu, 1000).unwrap().expect("a free slot"))
            .collect();
        let t = texture(&gpu, 7, 5);
        let twin = texture(&gpu, 7, 5);
        for round in 0..2u8 {
            let bytes: Vec<u8> = (0..7 * 5 * 4)
                .map(|i| (i * 7 % 251) as u8 ^ round)
                .collect();
            let write = TextureWrite {
                texture: &t,
                region: TextureRegion::whole(&t),
                data: &bytes,
                bytes_per_row: 7 * 4,
                rows: 5,
            };
            let before = ring.stats();
            let (answer, _) = gpu
                .upload_textures_then(ring, &[write], "test copy", |c| {
                    c.encoder().copy_texture_to_texture(
                        t.as_image_copy(),
                        twin.as_image_copy(),
                        t.size(),
                    );
                    Ok(42)
                })
                .unwrap();
            assert_eq!(answer, 42);
            let used = ring.stats().since(&before);
            assert_eq!((used.staged, used.fallbacks), (0, 1));
            assert_eq!(read(&gpu, &twin), bytes, "round {round}");
        }
    }

    #[test]
    fn a_larger_frame_replaces_a_free_buffer_that_is_too_small() {
        let gpu = gpu();
        let ring = &UploadRing::new();
        let small = texture(&gpu, 8, 8);
        let big = texture(&gpu, 300, 200);
        let bytes: Vec<u8> = (0..300 * 200 * 4).map(|i| (i % 253) as u8).collect();
        // Fill the ring with small buffers, all free once the GPU is idle.
        let leases: Vec<Lease> = (0..SLOTS)
            .map(|_| ring.acquire(&gpu, 256).unwrap().unwrap())
            .collect();
        for lease in leases {
            lease.buffer.unmap();
            lease.remap(&gpu);
        }
        gpu.wait_idle().unwrap();
        upload(&gpu, ring, &small, &bytes[..8 * 8 * 4]).unwrap();
        upload(&gpu, ring, &big, &bytes).unwrap();
        assert_eq!(read(&gpu, &big), bytes);
        let slots = &ring.slots.lock().unwrap().slots;
        assert_eq!(slots.len(), SLOTS);
        assert_eq!(
            slots
                .iter()
                .filter(|s| s.buffer.size() >= 300 * 4 * 200)
                .count(),
            1
        );
    }

    #[test]
    fn a_failed_mapping_is_one_line() {
        let gpu = gpu();
        let ring = &UploadRing::new();
        let lease = ring.acquire(&gpu, 256).unwrap().unwrap();
        lease.buffer.unmap();
        lease.remap(&gpu);
        gpu.wait_idle().unwrap();
        // What the mapping callback records when wgpu fails the mapping.
        {
            let slots = &ring.slots.lock().unwrap().slots;
            *slots[0].state.lock().unwrap() = SlotState::Failed("Buffer is invalid".into());
        }
        let t = texture(&gpu, 4, 4);
        let err = upload(&gpu, ring, &t, &[0; 64]).unwrap_err().to_string();
        assert_eq!(
            err,
            "transfer failed: mapping an upload staging buffer failed: Buffer is invalid"
        );
        // The failed buffer is gone; the next upload works.
        upload(&gpu, ring, &t, &[9; 64]).unwrap();
        assert_eq!(read(&gpu, &t), vec![9; 64]);
    }
}
