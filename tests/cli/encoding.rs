//! What the CLIs write plays everywhere: H.264 High profile 4:2:0 in MP4 and
//! MKV, also from frame sizes the encoder or muxer refuses as they are (a
//! 1x1 picture, odd sides).

use crate::common;
use crate::files::{assert_clean, h264_caps, leftovers, test_video};

fn high_420(path: &std::path::Path) {
    let (profile, chroma) = h264_caps(path);
    assert_eq!(profile, "high", "{}", path.display());
    assert_eq!(chroma, "4:2:0", "{}", path.display());
}

#[test]
fn selfie_writes_high_profile_420_mp4_and_mkv() {
    let dir = common::scratch("cli-encoding-selfie");
    for name in ["tp.mp4", "tp.mkv"] {
        let path = dir.join(name);
        let out = common::run_bin(
            env!("CARGO_BIN_EXE_wgnn-selfie"),
            &[
                "--test-pattern",
                "--frames",
                "3",
                "--width",
                "64",
                "--height",
                "48",
                "-o",
                path.to_str().unwrap(),
            ],
            &[],
        );
        assert!(out.status.success(), "{name}");
        high_420(&path);
        assert_eq!(common::decode_video(&path), (3, 64, 48));
    }
    assert!(leftovers(&dir).is_empty());
}

#[test]
fn superres_writes_a_high_profile_420_mp4() {
    let dir = common::scratch("cli-encoding-superres");
    let input = dir.join("small.mp4");
    test_video(&input, 48, 32, 4);
    let output = dir.join("small_x2.mp4");
    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-superres"),
        &[
            input.to_str().unwrap(),
            "--frames",
            "2",
            "-o",
            output.to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success());
    high_420(&output);
    assert_eq!(common::decode_video(&output), (2, 96, 64));
    assert!(leftovers(&dir).is_empty());
}

/// A 1x1 picture becomes a 16x16 MP4 (the smallest MP4 takes) and a 3x5 one
/// a 4x6 MKV (4:2:0 halves the chroma: even sides), each said in one line.
#[test]
fn tiny_and_odd_pictures_are_scaled_to_an_encodable_size() {
    let dir = common::scratch("cli-encoding-tiny");
    for (w, h, name, size) in [(1, 1, "one.mp4", (16, 16)), (3, 5, "odd.mkv", (4, 6))] {
        let png = dir.join(format!("{w}x{h}.png"));
        image::RgbImage::from_pixel(w, h, image::Rgb([200, 120, 40]))
            .save(&png)
            .unwrap();
        let path = dir.join(name);
        let out = common::run_bin(
            env!("CARGO_BIN_EXE_wgnn-selfie"),
            &[
                "--input",
                png.to_str().unwrap(),
                "-o",
                path.to_str().unwrap(),
            ],
            &[],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_clean(&stderr);
        let said = format!("{w}x{h} frames are scaled to {}x{}", size.0, size.1);
        assert_eq!(stderr.matches(&said).count(), 1, "{stderr}");
        high_420(&path);
        assert_eq!(common::decode_video(&path), (1, size.0, size.1));
    }
    // And the same 1x1 picture upscaled as a picture.
    let png = dir.join("1x1.png");
    let up = dir.join("1x1_x2.png");
    let out = common::run_bin(
        env!("CARGO_BIN_EXE_wgnn-superres"),
        &[png.to_str().unwrap(), "-o", up.to_str().unwrap()],
        &[],
    );
    assert!(out.status.success());
    assert_eq!(image::image_dimensions(&up).unwrap(), (2, 2));
    assert!(leftovers(&dir).is_empty());
}
