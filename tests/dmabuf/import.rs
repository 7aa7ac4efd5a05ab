//! Imported frames against uploaded ones: the same plane textures, the
//! same tensor, nothing uploaded, the import counted.

use std::os::fd::AsFd;

use wgnn::gpu::Gpu;
use wgnn::video::dmabuf::{
    self, DmabufFrame, DmabufImport, DmabufPlane, Imported, Support, DRM_FORMAT_MOD_LINEAR,
};
use wgnn::video::{
    upload_frame, FrameLayout, GpuFrame, TensorizeOptions, Tensorizer, TexturePool, VideoFormat,
};

use super::{gpu, memfd};
use crate::common::video::{described, planes_of, random_frame, rng, shape_of, tensor_buffer};

fn import(gpu: &Gpu, pool: &TexturePool, frame: &DmabufFrame<'_>) -> GpuFrame {
    match dmabuf::import_frame(gpu, pool, frame).unwrap() {
        Imported::Frame(f) => f,
        Imported::Unsupported(why) => panic!("{} frame not imported: {why}", frame.format),
    }
}

/// Imports `layout`'s frame from `memories` (plane p in `memories[which[p]]`
/// at `base[p]` + the layout's offset) and checks it against the upload of
/// `bytes`: plane bytes, tensor, counters.
fn check(
    gpu: &Gpu,
    layout: &FrameLayout,
    bytes: &[u8],
    memories: &[DmabufImport],
    which: &[usize],
    base: &[u64],
) {
    let pool = TexturePool::new();
    let f = layout.format;
    let what = format!("{f} {}x{}", layout.width, layout.height);
    let frame = DmabufFrame {
        format: f,
        width: layout.width,
        height: layout.height,
        modifier: DRM_FORMAT_MOD_LINEAR,
        planes: layout
            .planes
            .iter()
            .enumerate()
            .map(|(p, plane)| DmabufPlane {
                memory: &memories[which[p]],
                offset: base[p] + plane.offset as u64,
                stride: plane.stride as u32,
            })
            .collect(),
    };
    let before = gpu.transfers();
    let imported = import(gpu, &pool, &frame);
    let moved = gpu.transfers().since(&before);
    let expected: u64 = (0..f.plane_count())
        .map(|p| {
            layout.planes[p].stride as u64
                * u64::from(f.plane_size(p, layout.width, layout.height).1)
        })
        .sum();
    assert_eq!(
        (
            moved.uploads,
            moved.upload_bytes,
            moved.frames_imported,
            moved.bytes_imported
        ),
        (0, 0, 1, expected),
        "{what}: counters {moved}"
    );
    let uploaded = upload_frame(gpu, &pool, layout, bytes).unwrap();
    assert_eq!(
        planes_of(gpu, &imported),
        planes_of(gpu, &uploaded),
        "{what}: imported planes differ from uploaded ones"
    );
    // Read -> tensorize with nothing uploaded once the tensorizer is made
    // (its parameters are uploaded then, once per configuration).
    let t = Tensorizer::new(gpu, TensorizeOptions::new(24, 17)).unwrap();
    let shape = shape_of(&t);
    let run = |frame: &GpuFrame| {
        let dst = tensor_buffer(gpu, t.output_bytes());
        let before = gpu.transfers();
        t.run(frame, described(&t, &dst, &shape)).unwrap();
        let moved = gpu.transfers().since(&before);
        let bytes = gpu
            .download_buffer(&dst, 0, t.output_bytes())
            .unwrap()
            .wait()
            .unwrap();
        (moved, bytes)
    };
    let (moved, from_import) = run(&imported);
    assert_eq!(
        moved.upload_bytes, 0,
        "{what}: tensorizing uploaded {moved}"
    );
    let (_, from_upload) = run(&uploaded);
    assert_eq!(from_import, from_upload, "{what}: tensors differ");
    gpu.check().unwrap();
}

#[test]
fn mesa25_lavapipe_imports_by_buffer() {
    let gpu = gpu();
    assert_eq!(dmabuf::support(&gpu), Support::Buffer);
    assert!(gpu.has(wgpu::Features::VULKAN_EXTERNAL_MEMORY_FD));
}

/// Every format, odd and even sizes, padded and tight strides, all planes
/// in one fd at an offset that is not a multiple of 4 (so the unpack's
/// bindings start below the planes).
#[test]
fn one_fd_frames_match_the_upload_path() {
    let gpu = gpu();
    let mut r = rng(41);
    for format in VideoFormat::ALL {
        for (w, h, pad) in [(37, 23, 9), (64, 48, 0), (1, 1, 3), (33, 2, 64)] {
            let (layout, bytes) = random_frame(&mut r, format, w, h, pad);
            let at = 4096 + 13;
            let fd = memfd(&bytes, at, (at + bytes.len()).div_ceil(4096) * 4096);
            let memory = DmabufImport::new(fd.as_fd()).unwrap();
            drop(fd); // the import holds its own dup
            let planes = format.plane_count();
            check(
                &gpu,
                &layout,
                &bytes,
                &[memory],
                &vec![0; planes],
                &vec![at as u64; planes],
            );
        }
    }
}

/// I420 and NV12 with every plane in an fd of its own (a multi-memory
/// GstBuffer), at offsets 0 and beyond.
#[test]
fn one_fd_per_plane() {
    let gpu = gpu();
    let mut r = rng(42);
    for format in [VideoFormat::I420, VideoFormat::Nv12] {
        let (w, h) = (45, 31);
        let (layout, bytes) = random_frame(&mut r, format, w, h, 7);
        let fds: Vec<_> = (0..format.plane_count())
            .map(|p| memfd(&bytes, 256 * p, 8192))
            .collect();
        let memories: Vec<_> = fds
            .iter()
            .map(|fd| DmabufImport::new(fd.as_fd()).unwrap())
            .collect();
        let which: Vec<usize> = (0..format.plane_count()).collect();
        let base: Vec<u64> = (0..format.plane_count()).map(|p| 256 * p as u64).collect();
        check(&gpu, &layout, &bytes, &memories, &which, &base);
    }
}

/// A pool's buffers come back frame after frame: the same import, new
/// contents each time, and frames outliving their import.
#[test]
fn reused_imports_see_new_contents() {
    let gpu = gpu();
    let pool = TexturePool::new();
    let mut r = rng(43);
    let (layout, first) = random_frame(&mut r, VideoFormat::Nv12, 40, 30, 24);
    let fd = memfd(&first, 0, 8192);
    let memory = DmabufImport::new(fd.as_fd()).unwrap();
    let frame = |m| DmabufFrame {
        format: layout.format,
        width: layout.width,
        height: layout.height,
        modifier: DRM_FORMAT_MOD_LINEAR,
        planes: layout
            .planes
            .iter()
            .map(|p| DmabufPlane {
                memory: m,
                offset: p.offset as u64,
                stride: p.stride as u32,
            })
            .collect(),
    };
    let a = import(&gpu, &pool, &frame(&memory));
    let want_a = planes_of(&gpu, &upload_frame(&gpu, &pool, &layout, &first).unwrap());
    assert_eq!(planes_of(&gpu, &a), want_a);
    // The producer writes the next frame into the same memory.
    let (_, second) = random_frame(&mut r, VideoFormat::Nv12, 40, 30, 24);
    let mut file = std::fs::File::from(fd.try_clone().unwrap());
    std::io::Write::write_all(&mut file, &second).unwrap();
    let b = import(&gpu, &pool, &frame(&memory));
    drop(memory);
    let want_b = planes_of(&gpu, &upload_frame(&gpu, &pool, &layout, &second).unwrap());
    assert_ne!(want_a, want_b);
    assert_eq!(planes_of(&gpu, &b), want_b, "the second frame");
    // The first frame was unpacked before the overwrite: still the first.
    assert_eq!(
        planes_of(&gpu, &a),
        want_a,
        "the first frame after the second"
    );
    drop((a, b));
    gpu.wait_idle().unwrap();
}
