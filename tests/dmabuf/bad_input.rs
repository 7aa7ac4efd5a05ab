//! Bad DMA-BUF input: one clear line (an error or Unsupported), never a
//! panic or a GPU fault.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd};

use wgnn::video::dmabuf::{
    self, DmabufFrame, DmabufImport, DmabufPlane, Imported, DRM_FORMAT_MOD_INVALID,
    DRM_FORMAT_MOD_LINEAR,
};
use wgnn::video::{FrameLayout, TexturePool, VideoFormat};

use super::{gpu, memfd};

fn frame<'a>(layout: &FrameLayout, memory: &'a DmabufImport, modifier: u64) -> DmabufFrame<'a> {
    DmabufFrame {
        format: layout.format,
        width: layout.width,
        height: layout.height,
        modifier,
        planes: layout
            .planes
            .iter()
            .map(|p| DmabufPlane {
                memory,
                offset: p.offset as u64,
                stride: p.stride as u32,
            })
            .collect(),
    }
}

fn error(frame: &DmabufFrame<'_>) -> String {
    let gpu = gpu();
    let e = dmabuf::import_frame(&gpu, &TexturePool::new(), frame)
        .map(|_| ())
        .expect_err("bad input was imported");
    gpu.check().unwrap();
    e.to_string()
}

fn unsupported(frame: &DmabufFrame<'_>) -> String {
    let gpu = gpu();
    let before = gpu.transfers();
    let why = match dmabuf::import_frame(&gpu, &TexturePool::new(), frame).unwrap() {
        Imported::Unsupported(why) => why,
        Imported::Frame(_) => panic!("imported"),
    };
    assert_eq!(gpu.transfers().since(&before).frames_imported, 0);
    gpu.check().unwrap();
    why
}

#[test]
fn an_fd_smaller_than_the_layout_is_an_error() {
    let layout = FrameLayout::packed(VideoFormat::Nv12, 64, 48);
    let fd = memfd(&[], 0, layout.len() - 1);
    let memory = DmabufImport::new(fd.as_fd()).unwrap();
    let e = error(&frame(&layout, &memory, DRM_FORMAT_MOD_LINEAR));
    assert!(e.contains("plane 1") && e.contains("the fd has"), "{e}");
    // A plane offset far past the end (no overflow either).
    let mut f = frame(&layout, &memory, DRM_FORMAT_MOD_LINEAR);
    f.planes[0].offset = u64::MAX - 10;
    let e = error(&f);
    assert!(e.contains("plane 0"), "{e}");
}

#[test]
fn a_closed_fd_is_an_error() {
    let fd = memfd(&[], 0, 4096);
    // A number that was an fd and is closed now (nothing in this test opens
    // another in between; a racing test reusing it would make this an open,
    // wrong-size fd, which the size checks catch instead).
    let raw = fd.try_clone().unwrap().into_raw_fd();
    // SAFETY: closing the dup we own.
    unsafe { libc::close(raw) };
    // SAFETY: deliberately a closed number: the call under test must see
    // EBADF and say so, not use it.
    let closed = unsafe { BorrowedFd::borrow_raw(raw) };
    match DmabufImport::new(closed) {
        Err(e) => assert!(e.to_string().contains("is it open"), "{e}"),
        Ok(m) => assert_ne!(m.size(), 4096, "fd {raw} was reused by another test"),
    }
    assert!(fd.as_raw_fd() >= 0);
}

#[test]
fn a_stride_narrower_than_a_row_is_an_error() {
    let mut layout = FrameLayout::packed(VideoFormat::Rgba, 31, 9);
    layout.planes[0].stride = 31 * 4 - 1;
    let fd = memfd(&[], 0, 8192);
    let memory = DmabufImport::new(fd.as_fd()).unwrap();
    let e = error(&frame(&layout, &memory, DRM_FORMAT_MOD_LINEAR));
    assert!(e.contains("shorter than a row"), "{e}");
}

#[test]
fn wrong_plane_counts_and_zero_sizes_are_errors() {
    let layout = FrameLayout::packed(VideoFormat::I420, 16, 16);
    let fd = memfd(&[], 0, 8192);
    let memory = DmabufImport::new(fd.as_fd()).unwrap();
    let mut f = frame(&layout, &memory, DRM_FORMAT_MOD_LINEAR);
    f.planes.pop();
    assert!(error(&f).contains("3 plane(s)"));
    let mut f = frame(&layout, &memory, DRM_FORMAT_MOD_LINEAR);
    f.width = 0;
    assert!(error(&f).contains("zero size"));
}

#[test]
fn tiled_and_unknown_modifiers_are_unsupported() {
    let layout = FrameLayout::packed(VideoFormat::Nv12, 32, 32);
    let fd = memfd(&[], 0, 8192);
    let memory = DmabufImport::new(fd.as_fd()).unwrap();
    // I915_FORMAT_MOD_X_TILED: lavapipe has no DRM-modifier images.
    let why = unsupported(&frame(&layout, &memory, 0x0100_0000_0000_0001));
    assert!(why.contains("not linear"), "{why}");
    let why = unsupported(&frame(&layout, &memory, DRM_FORMAT_MOD_INVALID));
    assert!(why.contains("not known"), "{why}");
}

/// A memfd whose size is not a multiple of 4 with the frame running to its
/// last byte: the unpack reads words, so the last bytes are out of reach.
#[test]
fn a_frame_ending_in_a_partial_word_is_unsupported() {
    let layout = FrameLayout::packed(VideoFormat::Rgb, 5, 3); // 45 bytes
    let fd = memfd(&[], 0, layout.len());
    let memory = DmabufImport::new(fd.as_fd()).unwrap();
    let why = unsupported(&frame(&layout, &memory, DRM_FORMAT_MOD_LINEAR));
    assert!(!why.is_empty());
}
