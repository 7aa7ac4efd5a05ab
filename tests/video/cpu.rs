//! The CPU frame path (`wgnn::video::cpu`) against the GPU shaders it mirrors:
//! tensorize and composite of random frames of odd sizes and padded strides in
//! every format, every effect, temporal smoothing; plus known values and bad
//! input.

use crate::common;

use crate::common::video::{
    assert_close_f32, assert_close_u8, random_background, random_frame, rng, tensorize, COLOR_SPECS,
};
use rand::Rng;
use wgnn::gpu::Gpu;
use wgnn::video::{
    self, cpu, create_rgba_texture, download_rgba, upload_frame, ChannelOrder, ColorSpec,
    EdgeSoftening, FrameLayout, MaskOptions, Normalize, OutputDtype, PlaneLayout, Resize,
    TensorLayout, TensorizeOptions, TexturePool, VideoFormat, YuvMatrix, YuvRange,
};

/// Frame sizes: odd both ways, wider and taller than the outputs, and 1x1.
const SIZES: [(u32, u32); 3] = [(37, 23), (19, 41), (1, 1)];

/// The shader's tensor of a frame, as f64.
fn gpu_tensor(gpu: &Gpu, layout: &FrameLayout, bytes: &[u8], o: TensorizeOptions) -> Vec<f64> {
    let frame = upload_frame(gpu, &TexturePool::new(), layout, bytes).unwrap();
    tensorize(gpu, &frame, o)
        .into_iter()
        .map(f64::from)
        .collect()
}

/// The largest difference, for the log: how close the paths really are.
fn worst_f32(got: &[f32], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(&g, w)| (f64::from(g) - w).abs())
        .fold(0.0, f64::max)
}

fn worst_u8(got: &[u8], want: &[u8]) -> u8 {
    got.iter()
        .zip(want)
        .map(|(g, w)| g.abs_diff(*w))
        .max()
        .unwrap_or(0)
}

fn cpu_tensor(layout: &FrameLayout, bytes: &[u8], o: TensorizeOptions) -> Vec<f32> {
    let frame = cpu::CpuFrame::from_layout(layout, bytes).unwrap();
    let t = cpu::Tensorizer::new(o).unwrap();
    match o.dtype {
        OutputDtype::F32 => {
            let mut out = vec![f32::NAN; t.output_len()];
            t.run(&frame, &mut out).unwrap();
            out
        }
        OutputDtype::F16 => {
            let mut out = vec![half::f16::NAN; t.output_len()];
            t.run_f16(&frame, &mut out).unwrap();
            out.into_iter().map(f32::from).collect()
        }
    }
}

#[test]
fn colour_conversion_matches_the_shader_in_every_format() {
    let gpu = common::gpu();
    let mut r = rng(30);
    let mut worst = 0.0f64;
    for format in VideoFormat::ALL {
        let specs: &[ColorSpec] = if format.is_yuv() {
            &COLOR_SPECS
        } else {
            &COLOR_SPECS[..1]
        };
        for &color in specs {
            for (w, h) in SIZES {
                let (layout, bytes) = random_frame(&mut r, format, w, h, 5);
                // Own size and raw values: the colour conversion alone.
                let o = TensorizeOptions {
                    normalize: Normalize::RAW,
                    color,
                    ..TensorizeOptions::new(w, h)
                };
                let want = gpu_tensor(&gpu, &layout, &bytes, o);
                let got = cpu_tensor(&layout, &bytes, o);
                // +-1 LSB is the contract; both compute the same f32 formula,
                // so they agree far closer.
                worst = worst.max(worst_f32(&got, &want));
                assert_close_f32(&got, &want, 0.01, &format!("{format} {w}x{h} {color:?}"));
            }
        }
    }
    eprintln!("colour conversion: CPU vs GPU at most {worst:.2e} apart (0..255 scale)");
}

#[test]
fn resize_and_normalisation_match_the_shader_to_1e4() {
    let gpu = common::gpu();
    let mut r = rng(31);
    let mut worst = 0.0f64;
    let resizes = [
        Resize::Stretch,
        Resize::Letterbox {
            pad: [114, 20, 250],
        },
        Resize::CenterCrop,
    ];
    let normalizations = [
        Normalize::ZERO_ONE,
        Normalize::MINUS_ONE_ONE,
        Normalize::mean_std([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ];
    for (i, format) in VideoFormat::ALL.into_iter().enumerate() {
        for (j, (w, h)) in SIZES.into_iter().enumerate() {
            let (layout, bytes) = random_frame(&mut r, format, w, h, 3);
            for (k, (dw, dh)) in [(16, 12), (25, 25), (60, 20)].into_iter().enumerate() {
                let o = TensorizeOptions {
                    resize: resizes[(i + j + k) % 3],
                    normalize: normalizations[(i + k) % 3],
                    layout: [TensorLayout::Nhwc, TensorLayout::Nchw][(i + j + k) % 2],
                    channels: [ChannelOrder::Rgb, ChannelOrder::Bgr][(j + k) % 2],
                    color: COLOR_SPECS[(i + j) % 4],
                    ..TensorizeOptions::new(dw, dh)
                };
                let want = gpu_tensor(&gpu, &layout, &bytes, o);
                let got = cpu_tensor(&layout, &bytes, o);
                worst = worst.max(worst_f32(&got, &want));
                assert_close_f32(&got, &want, 1e-4, &format!("{format} {w}x{h} {o:?}"));
            }
        }
    }
    eprintln!("resize and normalisation: CPU vs GPU at most {worst:.2e} apart");
}

#[test]
fn f16_output_matches_the_shader() {
    let gpu = common::gpu();
    let mut r = rng(32);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Nv12, 37, 23, 9);
    for layout_kind in [TensorLayout::Nhwc, TensorLayout::Nchw] {
        let o = TensorizeOptions {
            dtype: OutputDtype::F16,
            normalize: Normalize::MINUS_ONE_ONE,
            layout: layout_kind,
            ..TensorizeOptions::new(29, 17)
        };
        let want = gpu_tensor(&gpu, &layout, &bytes, o);
        let got = cpu_tensor(&layout, &bytes, o);
        // One f16 step (2^-11 of values in -1..1) where the f32s round apart.
        assert_close_f32(&got, &want, 1e-3, &format!("f16 {layout_kind:?}"));
    }
}

fn random_mask(r: &mut rand::rngs::StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| r.random_range(0.0..1.0)).collect()
}

/// A random RGBA background, for the GPU as a texture and for the CPU.
fn background(
    gpu: &Gpu,
    r: &mut rand::rngs::StdRng,
    w: u32,
    h: u32,
) -> (wgnn::gpu::live::Texture, cpu::RgbaImage) {
    let (texture, bytes) = random_background(gpu, r, w, h);
    (texture, cpu::RgbaImage::new(w, h, bytes).unwrap())
}

/// The GPU compositor and its CPU twin over the same frames and masks.
struct Pair {
    gpu: Gpu,
    on_gpu: video::Compositor,
    on_cpu: cpu::Compositor,
}

impl Pair {
    fn new(
        gpu: &Gpu,
        mask: MaskOptions,
        gpu_effect: video::Effect,
        cpu_effect: cpu::Effect,
    ) -> Pair {
        let color = ColorSpec::default();
        Pair {
            gpu: gpu.clone(),
            on_gpu: video::Compositor::new(
                gpu,
                video::CompositeOptions {
                    mask,
                    effect: gpu_effect,
                    color,
                },
            )
            .unwrap(),
            on_cpu: cpu::Compositor::new(cpu::CompositeOptions {
                mask,
                effect: cpu_effect,
                color,
            })
            .unwrap(),
        }
    }

    /// Both outputs of one frame: (CPU, GPU) RGBA bytes.
    fn run(&mut self, layout: &FrameLayout, bytes: &[u8], mask: &[f32]) -> (Vec<u8>, Vec<u8>) {
        let gpu = &self.gpu;
        let (w, h) = (layout.width, layout.height);
        let frame = upload_frame(gpu, &TexturePool::new(), layout, bytes).unwrap();
        let mask_buffer = gpu
            .create_buffer_with_data(
                "test mask",
                bytemuck::cast_slice(mask),
                wgpu::BufferUsages::STORAGE,
            )
            .unwrap();
        let out = create_rgba_texture(gpu, w, h).unwrap();
        let m = self.on_gpu.options().mask;
        let shape = [1, m.height as usize, m.width as usize, 1];
        let mask_tensor =
            video::TensorBuffer::new(&mask_buffer, wgnn::ml::DataType::Float32, &shape);
        self.on_gpu.run(&frame, mask_tensor, &out).unwrap();
        let want = download_rgba(gpu, &out).unwrap();
        gpu.check().unwrap();

        // Padded output rows: the padding must come back zeroed.
        let stride = 4 * w as usize + 3;
        let mut padded = vec![0xaa; stride * h as usize];
        let frame = cpu::CpuFrame::from_layout(layout, bytes).unwrap();
        self.on_cpu.run(&frame, mask, &mut padded, stride).unwrap();
        let mut got = Vec::with_capacity(want.len());
        for row in padded.chunks(stride) {
            got.extend_from_slice(&row[..4 * w as usize]);
            assert!(
                row[4 * w as usize..].iter().all(|&b| b == 0),
                "row padding is zeroed"
            );
        }
        (got, want)
    }
}

#[test]
fn every_effect_matches_the_shader_within_one_lsb() {
    let gpu = common::gpu();
    let mut r = rng(33);
    let (bg_texture, bg_image) = background(&gpu, &mut r, 13, 9);
    let soft = Some(EdgeSoftening {
        threshold: 0.5,
        softness: 0.2,
    });
    let hard = Some(EdgeSoftening {
        threshold: 0.4,
        softness: 0.0,
    });
    let effects: Vec<(video::Effect, cpu::Effect)> = vec![
        (video::Effect::None, cpu::Effect::None),
        (video::Effect::Mask, cpu::Effect::Mask),
        (
            video::Effect::Replace(video::Background::Color([10, 200, 30, 255])),
            cpu::Effect::Replace(cpu::Background::Color([10, 200, 30, 255])),
        ),
        (
            video::Effect::Replace(video::Background::Color([250, 0, 99, 64])),
            cpu::Effect::Replace(cpu::Background::Color([250, 0, 99, 64])),
        ),
        (
            video::Effect::Replace(video::Background::Image(bg_texture)),
            cpu::Effect::Replace(cpu::Background::Image(bg_image)),
        ),
        (
            video::Effect::Blur { strength: 2.5 },
            cpu::Effect::Blur { strength: 2.5 },
        ),
        (
            video::Effect::Blur { strength: 0.7 },
            cpu::Effect::Blur { strength: 0.7 },
        ),
        // A kernel reaching far past every border.
        (
            video::Effect::Blur { strength: 20.0 },
            cpu::Effect::Blur { strength: 20.0 },
        ),
    ];
    let (mut cases, mut worst, mut differing) = (0, 0u8, 0usize);
    for (i, format) in VideoFormat::ALL.into_iter().enumerate() {
        for (j, (gpu_effect, cpu_effect)) in effects.iter().enumerate() {
            let (w, h) = SIZES[(i + j) % SIZES.len()];
            let (layout, bytes) = random_frame(&mut r, format, w, h, 6);
            let (mw, mh) = [(16, 12), (7, 31), (1, 1)][(i + 2 * j) % 3];
            let mut mask = MaskOptions::new(mw, mh);
            mask.edge = [None, soft, hard][(i + j) % 3];
            let values = random_mask(&mut r, (mw * mh) as usize);
            let mut pair = Pair::new(&gpu, mask, gpu_effect.clone(), cpu_effect.clone());
            let (got, want) = pair.run(&layout, &bytes, &values);
            worst = worst.max(worst_u8(&got, &want));
            differing += got.iter().zip(&want).filter(|(g, w)| g != w).count();
            assert_close_u8(
                &got,
                &want,
                1,
                &format!("{format} {w}x{h} {cpu_effect:?} {:?}", mask.edge),
            );
            cases += 1;
        }
    }
    assert_eq!(cases, 7 * 8);
    eprintln!("composite: CPU vs GPU at most {worst} LSB apart, {differing} bytes differ");
}

/// From sigma 8 the blur is computed at every k-th pixel (k = sigma / 4
/// rounded down) and interpolated: both paths take the same samples and
/// weights. Sizes where the last sample lies past the frame's edge (W - 1
/// not a multiple of k) and frames narrower or shorter than k.
#[test]
fn sampled_blur_matches_the_shader_within_one_lsb() {
    let gpu = common::gpu();
    let mut r = rng(35);
    let sizes = [(62, 47), (54, 38), (3, 29), (41, 2)];
    let formats = [VideoFormat::Rgba, VideoFormat::Nv12, VideoFormat::I420];
    let (mut worst, mut differing) = (0u8, 0usize);
    // Steps 2, 3 and 5.
    for (i, strength) in [8.5, 13.0, 20.0].into_iter().enumerate() {
        for (j, format) in formats.into_iter().enumerate() {
            let (w, h) = sizes[(i + j) % sizes.len()];
            let (layout, bytes) = random_frame(&mut r, format, w, h, 5);
            let (mw, mh) = [(16, 12), (7, 31)][(i + j) % 2];
            let values = random_mask(&mut r, (mw * mh) as usize);
            let mut pair = Pair::new(
                &gpu,
                MaskOptions::new(mw, mh),
                video::Effect::Blur { strength },
                cpu::Effect::Blur { strength },
            );
            let (got, want) = pair.run(&layout, &bytes, &values);
            worst = worst.max(worst_u8(&got, &want));
            differing += got.iter().zip(&want).filter(|(g, w)| g != w).count();
            assert_close_u8(
                &got,
                &want,
                1,
                &format!("{format} {w}x{h} sigma {strength}"),
            );
        }
    }
    eprintln!("sampled blur: CPU vs GPU at most {worst} LSB apart, {differing} bytes differ");
}

#[test]
fn temporal_smoothing_matches_the_shader_across_frames_and_resets() {
    let gpu = common::gpu();
    let mut r = rng(34);
    let (w, h) = (21, 17);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::I420, w, h, 2);
    let mut mask = MaskOptions::new(9, 7);
    mask.temporal = 0.6;
    mask.edge = Some(EdgeSoftening {
        threshold: 0.5,
        softness: 0.3,
    });
    let mut pair = Pair::new(&gpu, mask, video::Effect::Mask, cpu::Effect::Mask);
    let mut outputs = Vec::new();
    for step in 0..5 {
        if step == 3 {
            pair.on_gpu.reset_temporal();
            pair.on_cpu.reset_temporal();
        }
        let values = random_mask(&mut r, 63);
        let (got, want) = pair.run(&layout, &bytes, &values);
        assert_close_u8(&got, &want, 1, &format!("frame {step}"));
        outputs.push((got, values));
    }
    // After the reset the history is gone: frame 3 is its own mask alone,
    // which a fresh compositor without smoothing gives too.
    let mut fresh = cpu::Compositor::new(cpu::CompositeOptions {
        mask: MaskOptions {
            temporal: 0.0,
            ..mask
        },
        effect: cpu::Effect::Mask,
        color: ColorSpec::default(),
    })
    .unwrap();
    let frame = cpu::CpuFrame::from_layout(&layout, &bytes).unwrap();
    let mut alone = vec![0; (w * h * 4) as usize];
    fresh
        .run(&frame, &outputs[3].1, &mut alone, 4 * w as usize)
        .unwrap();
    assert_eq!(alone, outputs[3].0);
    assert_ne!(
        outputs[4].0, outputs[3].0,
        "smoothing goes on after the reset"
    );
}

#[test]
fn known_values() {
    // A 4x2 RGBx frame whose columns are 0, 100, 200, 50 (all channels),
    // halved: output pixel centres fall midway between source columns.
    let columns = [0u8, 100, 200, 50];
    let bytes: Vec<u8> = (0..2)
        .flat_map(|_| columns.iter().flat_map(|&c| [c, c, c, 7]))
        .collect();
    let layout = FrameLayout::packed(VideoFormat::Rgbx, 4, 2);
    let frame = cpu::CpuFrame::from_layout(&layout, &bytes).unwrap();
    let t = cpu::Tensorizer::new(TensorizeOptions {
        normalize: Normalize::RAW,
        ..TensorizeOptions::new(2, 1)
    })
    .unwrap();
    let mut out = vec![0.0; 6];
    t.run(&frame, &mut out).unwrap();
    assert_eq!(out, [50.0, 50.0, 50.0, 125.0, 125.0, 125.0]);

    // Letterboxed into 4x4: content 4x2 in rows 1..3, pad above and below;
    // NCHW, BGR, 0..1.
    let t = cpu::Tensorizer::new(TensorizeOptions {
        resize: Resize::Letterbox { pad: [255, 0, 51] },
        layout: TensorLayout::Nchw,
        channels: ChannelOrder::Bgr,
        ..TensorizeOptions::new(4, 4)
    })
    .unwrap();
    let mut out = vec![0.0; 48];
    t.run(&frame, &mut out).unwrap();
    let (b, g, r) = (&out[..16], &out[16..32], &out[32..]);
    let close = |got: &[f32], want: &[f32]| {
        got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6) && got.len() == want.len()
    };
    let pad = [1.0, 0.0, 0.2];
    assert!(
        close(&[r[0], g[0], b[0]], &pad),
        "pad top-left, BGR planes: {out:?}"
    );
    assert!(
        close(&[r[15], g[15], b[15]], &pad),
        "pad bottom-right: {out:?}"
    );
    let row = [0.0, 100.0 / 255.0, 200.0 / 255.0, 50.0 / 255.0];
    assert!(close(&r[4..8], &row) && close(&b[8..12], &row), "{out:?}");

    // I420 in limited range: Y 16 is black, 235 white, neutral chroma grey;
    // 2x2 pixels share one chroma sample. Full range: Y 0..255 as is.
    let yuv = |range| {
        let mut bytes = vec![16, 235, 126, 235];
        bytes.extend([128, 128]);
        let layout = FrameLayout::packed(VideoFormat::I420, 2, 2);
        let frame = cpu::CpuFrame::from_layout(&layout, &bytes).unwrap();
        let t = cpu::Tensorizer::new(TensorizeOptions {
            normalize: Normalize::RAW,
            color: ColorSpec {
                matrix: YuvMatrix::Bt709,
                range,
            },
            ..TensorizeOptions::new(2, 2)
        })
        .unwrap();
        let mut out = vec![0.0; 12];
        t.run(&frame, &mut out).unwrap();
        out.chunks(3).map(|p| p[0]).collect::<Vec<f32>>()
    };
    let limited = yuv(YuvRange::Limited);
    assert_eq!(limited[0], 0.0);
    assert_eq!(limited[1], 255.0);
    assert!(
        (limited[2] - 110.0 * 255.0 / 219.0).abs() < 1e-3,
        "{limited:?}"
    );
    let full = yuv(YuvRange::Full);
    assert!(
        (full[0] - 16.0).abs() < 1e-3 && (full[2] - 126.0).abs() < 1e-3,
        "{full:?}"
    );

    // A quarter-person mask over white on a transparent background: a
    // quarter of white, a quarter opaque. Edge softening at 0.2 +- 0 makes
    // it all person.
    let white = vec![255u8; 3 * 3 * 3];
    let layout = FrameLayout::packed(VideoFormat::Rgb, 3, 3);
    let frame = cpu::CpuFrame::from_layout(&layout, &white).unwrap();
    let mut mask = MaskOptions::new(1, 1);
    let composite = |mask: MaskOptions, effect| {
        let mut c = cpu::Compositor::new(cpu::CompositeOptions {
            mask,
            effect,
            color: ColorSpec::default(),
        })
        .unwrap();
        let mut out = vec![0; 36];
        c.run(&frame, &[0.25], &mut out, 12).unwrap();
        out
    };
    let transparent = cpu::Effect::Replace(cpu::Background::Color([0, 0, 0, 0]));
    let out = composite(mask, transparent.clone());
    assert!(out.chunks(4).all(|p| p == [64, 64, 64, 64]), "{out:?}");
    mask.edge = Some(EdgeSoftening {
        threshold: 0.2,
        softness: 0.0,
    });
    let out = composite(mask, transparent);
    assert!(out.chunks(4).all(|p| p == [255; 4]), "{out:?}");
    // A flat frame blurs to itself, sampled (from sigma 8) or not.
    for strength in [5.0, 12.0] {
        let out = composite(MaskOptions::new(1, 1), cpu::Effect::Blur { strength });
        assert!(out.chunks(4).all(|p| p == [255; 4]), "{out:?}");
    }
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let err = |r: wgnn::Result<cpu::CpuFrame>| r.map(|_| ()).unwrap_err().to_string();
    let rgba = |w, h| FrameLayout::packed(VideoFormat::Rgba, w, h);

    let e = err(cpu::CpuFrame::from_layout(&rgba(0, 4), &[]));
    assert!(e.contains("zero-size frame (0x4)"), "{e}");
    let e = err(cpu::CpuFrame::new(
        VideoFormat::Rgba,
        u32::MAX,
        1,
        &[(&[][..], 0)],
    ));
    assert!(e.contains("too large"), "{e}");

    let short_stride = FrameLayout {
        planes: vec![PlaneLayout {
            offset: 0,
            stride: 15,
        }],
        ..rgba(4, 2)
    };
    let e = err(cpu::CpuFrame::from_layout(&short_stride, &[0; 64]));
    assert!(
        e.contains("stride 15 is shorter than a row of 4 pixels (16 bytes)"),
        "{e}"
    );

    let e = err(cpu::CpuFrame::from_layout(&rgba(4, 2), &[0; 31]));
    assert!(
        e.contains("plane 0 has 31 bytes, 2 rows of stride 16 need 32"),
        "{e}"
    );
    let nv12 = FrameLayout::packed(VideoFormat::Nv12, 5, 3);
    let e = err(cpu::CpuFrame::from_layout(&nv12, &[0; 15 + 11]));
    assert!(
        e.contains("plane 1 has 11 bytes, 2 rows of stride 6 need 12"),
        "{e}"
    );
    let e = err(cpu::CpuFrame::from_layout(&nv12, &[0; 10]));
    assert!(e.contains("plane 1 starts at byte 15, past the end"), "{e}");
    let e = err(cpu::CpuFrame::new(
        VideoFormat::I420,
        4,
        4,
        &[(&[0; 16][..], 4)],
    ));
    assert!(e.contains("I420 frames have 3 plane(s), got 1"), "{e}");
    let huge_stride = [(&[0u8; 64][..], usize::MAX)];
    let e = err(cpu::CpuFrame::new(VideoFormat::Rgba, 4, 3, &huge_stride));
    assert!(e.contains("more than memory holds"), "{e}");

    // The last row needs no padding after its pixels.
    let bytes = [9u8; 2 * 20 + 16];
    let frame = cpu::CpuFrame::new(VideoFormat::Rgba, 4, 3, &[(&bytes[..], 20)]).unwrap();

    let e = cpu::Tensorizer::new(TensorizeOptions::new(0, 4)).unwrap_err();
    assert!(e.to_string().contains("output size 0x4"), "{e}");
    let nan = TensorizeOptions {
        normalize: Normalize::mean_std([0.5; 3], [0.0, 1.0, 1.0]),
        ..TensorizeOptions::new(4, 4)
    };
    let e = cpu::Tensorizer::new(nan).unwrap_err();
    assert!(e.to_string().contains("not finite"), "{e}");
    let t = cpu::Tensorizer::new(TensorizeOptions::new(8, 8)).unwrap();
    let e = t.run(&frame, &mut [0.0; 191]).unwrap_err();
    assert!(
        e.to_string()
            .contains("has 191 values, the [1, 8, 8, 3] tensor needs 192"),
        "{e}"
    );
    let e = t.run_f16(&frame, &mut [half::f16::ZERO; 192]).unwrap_err();
    assert!(e.to_string().contains("ask for F32 output"), "{e}");

    let options = |effect| cpu::CompositeOptions {
        mask: MaskOptions::new(8, 8),
        effect,
        color: ColorSpec::default(),
    };
    for strength in [0.0, -1.0, 100.0, f32::NAN] {
        let e = cpu::Compositor::new(options(cpu::Effect::Blur { strength })).unwrap_err();
        assert!(e.to_string().contains("MAX_BLUR_STRENGTH = 64"), "{e}");
    }
    let mut temporal = options(cpu::Effect::Mask);
    temporal.mask.temporal = 1.0;
    let e = cpu::Compositor::new(temporal).unwrap_err();
    assert!(
        e.to_string()
            .contains("temporal smoothing 1 must be in 0..1"),
        "{e}"
    );
    let mut zero = options(cpu::Effect::Mask);
    zero.mask.width = 0;
    let e = cpu::Compositor::new(zero).unwrap_err();
    assert!(e.to_string().contains("mask size 0x8"), "{e}");
    let e = cpu::RgbaImage::new(2, 2, vec![0; 15]).unwrap_err();
    assert!(
        e.to_string()
            .contains("needs at least 1x1 pixels and 16 bytes, got 15"),
        "{e}"
    );

    let mut c = cpu::Compositor::new(options(cpu::Effect::Mask)).unwrap();
    let mask = [0.5; 64];
    let e = c.run(&frame, &mask[..63], &mut [0; 48], 16).unwrap_err();
    assert!(
        e.to_string()
            .contains("the mask has 63 values, a 8x8 mask needs 64"),
        "{e}"
    );
    let e = c.run(&frame, &mask, &mut [0; 48], 12).unwrap_err();
    assert!(e.to_string().contains("rows of at least 16 bytes"), "{e}");
    let e = c.run(&frame, &mask, &mut [0; 47], 16).unwrap_err();
    assert!(e.to_string().contains("48 bytes in all"), "{e}");
    let e = c.run(&frame, &mask, &mut [0; 48], usize::MAX).unwrap_err();
    assert!(e.to_string().contains("more than memory holds"), "{e}");
    c.run(&frame, &mask, &mut [0; 48], 16).unwrap();
    // NaN and out-of-range masks (a broken model) still give a picture.
    c.run(&frame, &[f32::NAN; 64], &mut [0; 48], 16).unwrap();
    c.run(&frame, &[-3.0; 64], &mut [0; 48], 16).unwrap();
}
