//! Frames into textures: exact counted uploads, plane textures that hold the
//! frame's bytes, texture reuse across frames, and errors for bad input.

use crate::common;

use crate::common::video::{random_frame, rng};
use wgnn::gpu::transfer::TextureRegion;
use wgnn::video::{upload_frame, FrameLayout, TexturePool, VideoFormat};

#[test]
fn one_counted_upload_per_plane_with_the_exact_bytes() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(1);
    for format in VideoFormat::ALL {
        let (layout, bytes) = random_frame(&mut r, format, 37, 23, 9);
        let before = gpu.transfers();
        let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        let moved = gpu.transfers().since(&before);
        let expected_bytes: usize = (0..format.plane_count())
            .map(|p| layout.planes[p].stride * format.plane_size(p, 37, 23).1 as usize)
            .sum();
        assert_eq!(moved.uploads, format.plane_count() as u64, "{format}");
        assert_eq!(moved.upload_bytes, expected_bytes as u64, "{format}");
        assert_eq!(moved.downloads, 0, "{format}");
        assert_eq!(
            (frame.width(), frame.height(), frame.format()),
            (37, 23, format)
        );
        assert_eq!(frame.planes().count(), format.plane_count());
    }
}

#[test]
fn plane_textures_hold_the_unpadded_plane_bytes() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(2);
    for format in [
        VideoFormat::I420,
        VideoFormat::Nv12,
        VideoFormat::Rgb,
        VideoFormat::Bgrx,
    ] {
        let (w, h) = (51, 29);
        let (layout, bytes) = random_frame(&mut r, format, w, h, 13);
        let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        for (p, texture) in frame.planes().enumerate() {
            let (pw, ph) = format.plane_size(p, w, h);
            assert_eq!(
                (texture.width(), texture.height()),
                (pw, ph),
                "{format} plane {p}"
            );
            let got = gpu
                .download_texture(texture, TextureRegion::whole(texture))
                .unwrap()
                .wait()
                .unwrap();
            let row = format.row_bytes(p, w);
            let plane = layout.planes[p];
            let want: Vec<u8> = (0..ph as usize)
                .flat_map(|y| {
                    let start = plane.offset + y * plane.stride;
                    bytes[start..start + row].iter().copied()
                })
                .collect();
            assert_eq!(got, want, "{format} plane {p}");
        }
    }
}

#[test]
fn textures_are_reused_frame_to_frame() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(3);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::I420, 33, 17, 0);
    for _ in 0..5 {
        let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        drop(frame);
    }
    let stats = pool.stats();
    assert_eq!(
        stats.created, 3,
        "one texture per plane, allocated once: {stats:?}"
    );
    assert_eq!(stats.reused, 12, "{stats:?}");
    assert_eq!(stats.idle, 3, "{stats:?}");

    // Two frames alive at once cannot share textures.
    let a = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    let b = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    assert_eq!(pool.stats().created, 6);
    for (ta, tb) in a.planes().zip(b.planes()) {
        assert_ne!(ta, tb);
    }
    drop((a, b));

    // A different size is a different key.
    let (other, other_bytes) = random_frame(&mut r, VideoFormat::I420, 35, 19, 0);
    upload_frame(&gpu, &pool, &other, &other_bytes).unwrap();
    assert_eq!(pool.stats().created, 9);
}

fn upload_err(layout: &FrameLayout, bytes: &[u8]) -> String {
    let gpu = common::gpu();
    let err = upload_frame(&gpu, &TexturePool::new(), layout, bytes)
        .expect_err("bad input must fail")
        .to_string();
    gpu.check().unwrap();
    err
}

#[test]
fn unsupported_format_names_are_errors() {
    let err = VideoFormat::from_name("YUY2").unwrap_err().to_string();
    assert!(err.contains("unsupported video format 'YUY2'"), "{err}");
    assert!(err.contains("NV12"), "lists what is supported: {err}");
    assert_eq!(VideoFormat::from_name("nv12").unwrap(), VideoFormat::Nv12);
    assert_eq!(VideoFormat::from_name("BGRx").unwrap(), VideoFormat::Bgrx);
}

#[test]
fn zero_size_frames_are_errors() {
    for (w, h) in [(0, 10), (10, 0)] {
        let layout = FrameLayout::packed(VideoFormat::Rgba, w, h);
        let err = upload_err(&layout, &[0; 64]);
        assert!(err.contains("zero-size frame"), "{err}");
    }
}

#[test]
fn strides_shorter_than_a_row_are_errors() {
    let layout = FrameLayout::with_strides(VideoFormat::Rgb, 10, 4, &[29]);
    let err = upload_err(&layout, &[0; 1000]);
    assert!(
        err.contains("stride 29 is shorter than a row of 10 pixels (30 bytes)"),
        "{err}"
    );
    // The chroma plane of an odd-width NV12 frame is ceil(w/2) UV pairs wide.
    let layout = FrameLayout::with_strides(VideoFormat::Nv12, 11, 4, &[11, 11]);
    let err = upload_err(&layout, &[0; 1000]);
    assert!(err.contains("plane 1: stride 11 is shorter"), "{err}");
    assert!(err.contains("(12 bytes)"), "{err}");
}

#[test]
fn short_data_is_an_error() {
    let layout = FrameLayout::packed(VideoFormat::I420, 9, 5);
    let len = layout.len();
    assert_eq!(len, 9 * 5 + 2 * (5 * 3));
    let err = upload_err(&layout, &vec![0; len - 1]);
    assert!(err.contains("plane 2 needs bytes up to"), "{err}");
    assert!(err.contains(&format!("the data has {}", len - 1)), "{err}");
}

#[test]
fn frames_over_the_texture_limit_are_errors() {
    let max = common::gpu().limits().max_texture_dimension_2d;
    let layout = FrameLayout::packed(VideoFormat::Rgba, max + 1, 2);
    let err = upload_err(&layout, &[]);
    assert!(
        err.contains(&format!("max_texture_dimension_2d = {max}")),
        "{err}"
    );
    // Packed RGB is stored as bytes, so its limit is a third of the width.
    let width = max / 3 + 1;
    let layout = FrameLayout::packed(VideoFormat::Rgb, width, 2);
    let err = upload_err(&layout, &[]);
    assert!(err.contains("max_texture_dimension_2d"), "{err}");
    assert!(err.contains("3 bytes to a texel"), "{err}");
}

#[test]
fn plane_count_must_match_the_format() {
    let mut layout = FrameLayout::packed(VideoFormat::Nv12, 8, 8);
    layout.planes.pop();
    let err = upload_err(&layout, &[0; 256]);
    assert!(
        err.contains("NV12 frames have 2 plane(s), the layout lists 1"),
        "{err}"
    );
}
