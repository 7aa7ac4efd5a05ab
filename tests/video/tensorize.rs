//! Frame -> tensor against a CPU reference: colour conversion of every format
//! (odd sizes, padded strides), resize modes, normalisation, layouts, f16,
//! and that the pass itself moves no bytes between CPU and GPU.

use crate::common;

use crate::common::video::{
    assert_close_f32, decode, described, random_frame, rng, shape_of, tensor_buffer, tensorize,
    Image, COLOR_SPECS,
};
use wgnn::video::{
    upload_frame, ChannelOrder, ColorSpec, Normalize, OutputDtype, Resize, TensorLayout,
    TensorizeOptions, Tensorizer, TexturePool, VideoFormat,
};

/// The tensor the options describe, computed on the CPU in f64.
fn reference(img: &Image, o: &TensorizeOptions) -> Vec<f64> {
    let (dw, dh) = (o.width as usize, o.height as usize);
    let (sw, sh) = (img.width as f64, img.height as f64);
    let (fw, fh) = (dw as f64, dh as f64);
    let mut out = vec![0.0; 3 * dw * dh];
    for y in 0..dh {
        for x in 0..dw {
            let (ox, oy) = (x as f64 + 0.5, y as f64 + 0.5);
            let rgb = match o.resize {
                Resize::Stretch => img.bilinear(ox * sw / fw - 0.5, oy * sh / fh - 0.5),
                Resize::Letterbox { pad } => {
                    let s = (sw / fw).max(sh / fh);
                    let (cw, ch) = (sw / s, sh / s);
                    let (qx, qy) = (ox - (fw - cw) / 2.0, oy - (fh - ch) / 2.0);
                    if qx < 0.0 || qy < 0.0 || qx >= cw || qy >= ch {
                        pad.map(f64::from)
                    } else {
                        img.bilinear(qx * s - 0.5, qy * s - 0.5)
                    }
                }
                Resize::CenterCrop => {
                    let s = (sw / fw).min(sh / fh);
                    let (x0, y0) = ((sw - fw * s) / 2.0, (sh - fh * s) / 2.0);
                    img.bilinear(x0 + ox * s - 0.5, y0 + oy * s - 0.5)
                }
            };
            let rgb = match o.channels {
                ChannelOrder::Rgb => rgb,
                ChannelOrder::Bgr => [rgb[2], rgb[1], rgb[0]],
            };
            for (c, value) in rgb.into_iter().enumerate() {
                let v = value * o.normalize.scale[c] as f64 + o.normalize.offset[c] as f64;
                let i = match o.layout {
                    TensorLayout::Nhwc => (y * dw + x) * 3 + c,
                    TensorLayout::Nchw => c * dw * dh + y * dw + x,
                };
                out[i] = v;
            }
        }
    }
    out
}

#[test]
fn colour_conversion_matches_within_one_lsb() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(10);
    for format in VideoFormat::ALL {
        let specs: &[ColorSpec] = if format.is_yuv() {
            &COLOR_SPECS
        } else {
            &COLOR_SPECS[..1]
        };
        for (i, &color) in specs.iter().enumerate() {
            let (w, h) = if i % 2 == 0 { (37, 23) } else { (51, 29) };
            let (layout, bytes) = random_frame(&mut r, format, w, h, 7);
            let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
            // Own size, stretch, raw values: no resampling, so this is the
            // colour conversion alone.
            let options = TensorizeOptions {
                normalize: Normalize::RAW,
                color,
                ..TensorizeOptions::new(w, h)
            };
            let got = tensorize(&gpu, &frame, options);
            let want = reference(&decode(&layout, &bytes, color), &options);
            // The contract is +-1 LSB; lavapipe's f32 is far closer, and the
            // tighter bound catches half-LSB offset mistakes.
            assert_close_f32(&got, &want, 0.05, &format!("{format} {color:?}"));
        }
    }
}

#[test]
fn stretch_resize_and_normalisation_match_to_1e4() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(11);
    let cases = [
        (
            VideoFormat::Rgba,
            37,
            23,
            16,
            12,
            Normalize::ZERO_ONE,
            TensorLayout::Nhwc,
        ),
        (
            VideoFormat::Nv12,
            51,
            29,
            64,
            40,
            Normalize::MINUS_ONE_ONE,
            TensorLayout::Nchw,
        ),
        (
            VideoFormat::I420,
            37,
            23,
            20,
            31,
            Normalize::mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
            TensorLayout::Nchw,
        ),
        (
            VideoFormat::Rgb,
            51,
            29,
            25,
            25,
            Normalize::ZERO_ONE,
            TensorLayout::Nhwc,
        ),
    ];
    for (format, w, h, dw, dh, normalize, layout_kind) in cases {
        let (layout, bytes) = random_frame(&mut r, format, w, h, 5);
        let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        let options = TensorizeOptions {
            normalize,
            layout: layout_kind,
            ..TensorizeOptions::new(dw, dh)
        };
        let got = tensorize(&gpu, &frame, options);
        let img = decode(&layout, &bytes, options.color);
        let want = reference(&img, &options);
        assert_close_f32(&got, &want, 1e-4, &format!("{format} -> {dw}x{dh}"));
    }
}

#[test]
fn resize_of_rgb_frames_is_within_1e4() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(12);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Bgra, 51, 29, 3);
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    let img = decode(&layout, &bytes, ColorSpec::default());
    for resize in [
        Resize::Stretch,
        Resize::Letterbox {
            pad: [114, 20, 250],
        },
        Resize::CenterCrop,
    ] {
        for (dw, dh) in [(24, 24), (19, 33), (60, 20)] {
            for layout_kind in [TensorLayout::Nhwc, TensorLayout::Nchw] {
                let options = TensorizeOptions {
                    resize,
                    layout: layout_kind,
                    ..TensorizeOptions::new(dw, dh)
                };
                let got = tensorize(&gpu, &frame, options);
                let want = reference(&img, &options);
                assert_close_f32(
                    &got,
                    &want,
                    1e-4,
                    &format!("{resize:?} {dw}x{dh} {layout_kind:?}"),
                );
            }
        }
    }
}

#[test]
fn letterbox_pads_and_center_crop_cuts_evenly() {
    // Independent of the reference: a frame whose left half is black and right
    // half white, letterboxed into a square, has pad rows top and bottom.
    let gpu = common::gpu();
    let (w, h) = (40u32, 20u32);
    let mut bytes = vec![0u8; (w * h * 4) as usize];
    for y in 0..h {
        for x in w / 2..w {
            let i = ((y * w + x) * 4) as usize;
            bytes[i..i + 4].copy_from_slice(&[255, 255, 255, 255]);
        }
    }
    let layout = wgnn::video::FrameLayout::packed(VideoFormat::Rgba, w, h);
    let frame = upload_frame(&gpu, &TexturePool::new(), &layout, &bytes).unwrap();
    let options = TensorizeOptions {
        resize: Resize::Letterbox { pad: [7, 8, 9] },
        normalize: Normalize::RAW,
        ..TensorizeOptions::new(20, 20)
    };
    let t = tensorize(&gpu, &frame, options);
    let px = |x: usize, y: usize| {
        [
            t[(y * 20 + x) * 3],
            t[(y * 20 + x) * 3 + 1],
            t[(y * 20 + x) * 3 + 2],
        ]
    };
    // Content is 20x10 centred: rows 5..15.
    for x in 0..20 {
        assert_eq!(px(x, 4), [7.0, 8.0, 9.0], "pad above at x={x}");
        assert_eq!(px(x, 15), [7.0, 8.0, 9.0], "pad below at x={x}");
    }
    assert_eq!(px(0, 5), [0.0; 3]);
    assert_eq!(px(19, 14), [255.0; 3]);

    // Center crop of the same frame into a square keeps its middle 20x20:
    // black left, white right, edge between columns 9 and 10.
    let options = TensorizeOptions {
        resize: Resize::CenterCrop,
        ..options
    };
    let t = tensorize(&gpu, &frame, options);
    let px = |x: usize, y: usize| t[(y * 20 + x) * 3];
    assert_eq!(px(0, 0), 0.0);
    assert_eq!(px(8, 10), 0.0);
    assert_eq!(px(11, 10), 255.0);
    assert_eq!(px(19, 19), 255.0);
}

#[test]
fn f16_output_and_bgr_order() {
    let gpu = common::gpu();
    assert!(
        gpu.has(wgpu::Features::SHADER_F16),
        "lavapipe has SHADER_F16"
    );
    let pool = TexturePool::new();
    let mut r = rng(13);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::I420, 37, 23, 11);
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    let img = decode(&layout, &bytes, ColorSpec::default());
    for layout_kind in [TensorLayout::Nhwc, TensorLayout::Nchw] {
        let options = TensorizeOptions {
            dtype: OutputDtype::F16,
            channels: ChannelOrder::Bgr,
            normalize: Normalize::MINUS_ONE_ONE,
            layout: layout_kind,
            ..TensorizeOptions::new(29, 17)
        };
        let got = tensorize(&gpu, &frame, options);
        let want = reference(&img, &options);
        // f16 has 11 significant bits: within 2^-11 of values in -1..1.
        assert_close_f32(&got, &want, 1e-3, &format!("f16 {layout_kind:?}"));
    }
}

#[test]
fn tensorize_moves_no_bytes_and_compiles_once() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(14);
    let t = Tensorizer::new(&gpu, TensorizeOptions::new(16, 16)).unwrap();
    let dst = tensor_buffer(&gpu, t.output_bytes());
    let frames: Vec<_> = (0..3)
        .map(|_| {
            let (layout, bytes) = random_frame(&mut r, VideoFormat::Nv12, 37, 23, 4);
            upload_frame(&gpu, &pool, &layout, &bytes).unwrap()
        })
        .collect();
    let shape = shape_of(&t);
    let before = gpu.transfers();
    for frame in &frames {
        t.run(frame, described(&t, &dst, &shape)).unwrap();
    }
    gpu.wait_idle().unwrap();
    assert_eq!(gpu.transfers().since(&before), Default::default());
    assert_eq!(t.pipelines_built(), 1, "one pipeline for all NV12 frames");

    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgbx, 37, 23, 4);
    let rgbx = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    t.run(&rgbx, described(&t, &dst, &shape)).unwrap();
    t.run(&frames[0], described(&t, &dst, &shape)).unwrap();
    assert_eq!(t.pipelines_built(), 2, "one more for packed RGB frames");
    gpu.check().unwrap();
}

#[test]
fn bad_tensorize_options_and_buffers_are_errors() {
    let gpu = common::gpu();
    let err = Tensorizer::new(&gpu, TensorizeOptions::new(0, 4)).unwrap_err();
    assert!(err.to_string().contains("output size 0x4"), "{err}");

    let options = TensorizeOptions {
        normalize: Normalize::mean_std([0.5; 3], [0.0, 1.0, 1.0]),
        ..TensorizeOptions::new(4, 4)
    };
    let err = Tensorizer::new(&gpu, options).unwrap_err();
    assert!(err.to_string().contains("not finite"), "{err}");

    let t = Tensorizer::new(&gpu, TensorizeOptions::new(8, 8)).unwrap();
    let layout = wgnn::video::FrameLayout::packed(VideoFormat::Rgba, 4, 4);
    let frame = upload_frame(&gpu, &TexturePool::new(), &layout, &[0; 64]).unwrap();
    let small = tensor_buffer(&gpu, t.output_bytes() - 4);
    let shape = shape_of(&t);
    let err = t.run(&frame, described(&t, &small, &shape)).unwrap_err();
    assert!(
        err.to_string()
            .contains("has 764 bytes, the [1, 8, 8, 3] tensor needs 768"),
        "{err}"
    );
    let not_storage = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 768,
        usage: wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let err = t
        .run(&frame, described(&t, &not_storage, &shape))
        .unwrap_err();
    assert!(err.to_string().contains("lacks STORAGE"), "{err}");
    gpu.check().unwrap();
}
