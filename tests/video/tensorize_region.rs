//! Tensorizing a region of a frame (the crop a classifier runs on): the GPU
//! pass against an f64 reference of the documented rule and against the CPU
//! tensorizer, on random frames of every format, regions at sub-pixel
//! positions, at and past the edges, 1x1, tiny and larger than the model
//! input, in every resize mode; a crop equals the tensor of the cropped
//! picture; regions recorded into one encoder each keep their own; known
//! values; and regions with nothing inside the frame are errors naming them.

use crate::common;

use crate::common::video::{
    assert_close_f32, decode, described, random_frame, rng, shape_of, tensor_buffer, Image,
};
use wgnn::gpu::Gpu;
use wgnn::video::{
    cpu, upload_frame, ChannelOrder, FrameLayout, GpuFrame, Normalize, OutputDtype, Resize,
    Sampling, TensorLayout, TensorizeOptions, Tensorizer, TexturePool, VideoFormat,
};

const RESIZES: [Resize; 3] = [
    Resize::Stretch,
    Resize::Letterbox {
        pad: [114, 20, 250],
    },
    Resize::CenterCrop,
];

/// Regions of a 37x23 frame: whole pixels, sub-pixel, partly outside at
/// each corner, 1x1, tiny, the whole frame, larger than most outputs.
const REGIONS: [[f32; 4]; 9] = [
    [3.0, 2.0, 20.0, 15.0],
    [5.3, 1.7, 9.45, 12.2],
    [-4.0, -3.0, 12.0, 10.0],
    [30.5, 18.25, 20.0, 20.0],
    [10.0, 10.0, 1.0, 1.0],
    [12.2, 7.9, 0.3, 0.2],
    [0.0, 0.0, 37.0, 23.0],
    [1.0, 1.0, 35.0, 21.0],
    [36.0, 0.0, 1.0, 23.0],
];

/// The documented rule in f64: the region clamped to the frame is fitted
/// to the output as a whole frame would be, and bilinear taps are clamped
/// to the pixels the region touches.
fn reference(img: &Image, o: &TensorizeOptions, region: [f32; 4]) -> Vec<f64> {
    let (fw, fh) = (img.width as f64, img.height as f64);
    let [x, y, w, h] = region.map(f64::from);
    let (x0, y0) = (x.max(0.0), y.max(0.0));
    let (x1, y1) = ((x + w).min(fw), (y + h).min(fh));
    let (sw, sh) = (x1 - x0, y1 - y0);
    let (first_x, first_y) = (x0.floor(), y0.floor());
    let (last_x, last_y) = (
        (x1.ceil() - 1.0).clamp(first_x, fw - 1.0),
        (y1.ceil() - 1.0).clamp(first_y, fh - 1.0),
    );
    let at = |px: f64, py: f64| {
        let px = px.clamp(first_x, last_x);
        let py = py.clamp(first_y, last_y);
        let (ax, ay) = (px.floor(), py.floor());
        let (bx, by) = ((ax + 1.0).min(last_x), (ay + 1.0).min(last_y));
        let (fx, fy) = (px - ax, py - ay);
        let p = |x: f64, y: f64| img.at(x as usize, y as usize);
        let lerp = |a: [f64; 3], b: [f64; 3], t: f64| [0, 1, 2].map(|c| a[c] + (b[c] - a[c]) * t);
        lerp(
            lerp(p(ax, ay), p(bx, ay), fx),
            lerp(p(ax, by), p(bx, by), fx),
            fy,
        )
    };
    let (dw, dh) = (o.width as usize, o.height as usize);
    let (ow, oh) = (dw as f64, dh as f64);
    // Output position q (pixel centres at half integers) at scale s samples
    // (q - k) * s - (0.5 - k): half-pixel k = 0, asymmetric k = 0.5.
    let k = match o.sampling {
        Sampling::HalfPixel => 0.0,
        Sampling::Asymmetric => 0.5,
    };
    let map = |q: f64, s: f64| (q - k) * s - (0.5 - k);
    let mut out = vec![0.0; 3 * dw * dh];
    for oy in 0..dh {
        for ox in 0..dw {
            let (u, v) = (ox as f64 + 0.5, oy as f64 + 0.5);
            let rgb = match o.resize {
                Resize::Stretch => at(x0 + map(u, sw / ow), y0 + map(v, sh / oh)),
                Resize::Letterbox { pad } => {
                    let s = (sw / ow).max(sh / oh);
                    let (cw, ch) = (sw / s, sh / s);
                    let (qx, qy) = (u - (ow - cw) / 2.0, v - (oh - ch) / 2.0);
                    if qx < 0.0 || qy < 0.0 || qx >= cw || qy >= ch {
                        pad.map(f64::from)
                    } else {
                        at(x0 + map(qx, s), y0 + map(qy, s))
                    }
                }
                Resize::CenterCrop => {
                    let s = (sw / ow).min(sh / oh);
                    let (sx, sy) = (x0 + (sw - ow * s) / 2.0, y0 + (sh - oh * s) / 2.0);
                    at(sx + map(u, s), sy + map(v, s))
                }
            };
            let rgb = match o.channels {
                ChannelOrder::Rgb => rgb,
                ChannelOrder::Bgr => [rgb[2], rgb[1], rgb[0]],
            };
            for (c, value) in rgb.into_iter().enumerate() {
                let i = match o.layout {
                    TensorLayout::Nhwc => (oy * dw + ox) * 3 + c,
                    TensorLayout::Nchw => c * dw * dh + oy * dw + ox,
                };
                out[i] = value * f64::from(o.normalize.scale[c]) + f64::from(o.normalize.offset[c]);
            }
        }
    }
    out
}

/// The GPU tensor of `region` of `frame`, read back as f32.
fn gpu_region(gpu: &Gpu, frame: &GpuFrame, o: TensorizeOptions, region: [f32; 4]) -> Vec<f32> {
    let t = Tensorizer::new(gpu, o).unwrap();
    let dst = tensor_buffer(gpu, t.output_bytes());
    let shape = shape_of(&t);
    t.run_region(frame, region, described(&t, &dst, &shape))
        .unwrap();
    read(gpu, &dst, &t)
}

fn read(gpu: &Gpu, dst: &wgpu::Buffer, t: &Tensorizer) -> Vec<f32> {
    let bytes = gpu
        .download_buffer(dst, 0, t.output_bytes())
        .unwrap()
        .wait()
        .unwrap();
    gpu.check().unwrap();
    match t.options().dtype {
        OutputDtype::F32 => bytemuck::pod_collect_to_vec(&bytes),
        OutputDtype::F16 => bytemuck::pod_collect_to_vec::<u8, half::f16>(&bytes)
            .into_iter()
            .map(f32::from)
            .collect(),
    }
}

fn cpu_region(
    layout: &FrameLayout,
    bytes: &[u8],
    o: TensorizeOptions,
    region: [f32; 4],
) -> Vec<f32> {
    let frame = cpu::CpuFrame::from_layout(layout, bytes).unwrap();
    let t = cpu::Tensorizer::new(o).unwrap();
    match o.dtype {
        OutputDtype::F32 => {
            let mut out = vec![f32::NAN; t.output_len()];
            t.run_region(&frame, region, &mut out).unwrap();
            out
        }
        OutputDtype::F16 => {
            let mut out = vec![half::f16::NAN; t.output_len()];
            t.run_region_f16(&frame, region, &mut out).unwrap();
            out.into_iter().map(f32::from).collect()
        }
    }
}

#[test]
fn regions_match_the_reference_and_the_cpu_in_every_resize_mode() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(40);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, 37, 23, 5);
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    let img = decode(&layout, &bytes, Default::default());
    let (mut cases, mut worst_cpu) = (0, 0.0f64);
    for (i, region) in REGIONS.into_iter().enumerate() {
        for (j, resize) in RESIZES.into_iter().enumerate() {
            for sampling in [Sampling::HalfPixel, Sampling::Asymmetric] {
                // Smaller than, about as large as, and larger than the regions.
                let (dw, dh) = [(16, 12), (5, 9), (40, 30)][(i + j) % 3];
                let o = TensorizeOptions {
                    resize,
                    layout: [TensorLayout::Nhwc, TensorLayout::Nchw][(i + j) % 2],
                    channels: [ChannelOrder::Rgb, ChannelOrder::Bgr][i % 2],
                    normalize: [Normalize::ZERO_ONE, Normalize::RAW][j % 2],
                    sampling,
                    ..TensorizeOptions::new(dw, dh)
                };
                let what = format!("region {region:?} {o:?}");
                let got = gpu_region(&gpu, &frame, o, region);
                let want = reference(&img, &o, region);
                // Up to 0..255 values: sub-pixel positions in f32 vs f64.
                assert_close_f32(&got, &want, 5e-3, &what);
                let on_cpu = cpu_region(&layout, &bytes, o, region);
                let gpu64: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
                worst_cpu = on_cpu
                    .iter()
                    .zip(&gpu64)
                    .map(|(&c, g)| (f64::from(c) - g).abs())
                    .fold(worst_cpu, f64::max);
                assert_close_f32(&on_cpu, &gpu64, 1e-3, &format!("CPU vs GPU: {what}"));
                cases += 1;
            }
        }
    }
    assert_eq!(cases, REGIONS.len() * 3 * 2);
    eprintln!("regions: CPU vs GPU at most {worst_cpu:.2e} apart");
}

#[test]
fn regions_of_every_format_and_f16_match_the_cpu() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(41);
    for (i, format) in VideoFormat::ALL.into_iter().enumerate() {
        let (layout, bytes) = random_frame(&mut r, format, 37, 23, 3);
        let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        for (j, region) in REGIONS
            .into_iter()
            .enumerate()
            .filter(|(j, _)| (i + j) % 2 == 0)
        {
            let o = TensorizeOptions {
                resize: RESIZES[(i + j) % 3],
                dtype: [OutputDtype::F32, OutputDtype::F16][j % 2],
                normalize: Normalize::MINUS_ONE_ONE,
                layout: [TensorLayout::Nhwc, TensorLayout::Nchw][i % 2],
                ..TensorizeOptions::new(13, 11)
            };
            let got = gpu_region(&gpu, &frame, o, region);
            let want: Vec<f64> = cpu_region(&layout, &bytes, o, region)
                .into_iter()
                .map(f64::from)
                .collect();
            // One f16 step of values in -1..1 where the paths round apart.
            assert_close_f32(&got, &want, 1e-3, &format!("{format} {region:?} {o:?}"));
        }
    }
}

#[test]
fn a_crop_is_the_tensor_of_the_cropped_picture() {
    // Independent of any reference: the region (x, y, w, h) in whole pixels
    // gives what the whole-frame pass gives for a frame holding only those
    // pixels, since no tap reaches past the region.
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(42);
    let (w, h) = (37u32, 23u32);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, w, h, 0);
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    for (x, y, cw, ch) in [
        (3, 2, 20, 15),
        (0, 0, 1, 1),
        (36, 22, 1, 1),
        (11, 4, 26, 19),
    ] {
        let mut crop = Vec::with_capacity((cw * ch * 4) as usize);
        for row in y..y + ch {
            let start = ((row * w + x) * 4) as usize;
            crop.extend_from_slice(&bytes[start..start + (cw * 4) as usize]);
        }
        let crop_layout = FrameLayout::packed(VideoFormat::Rgba, cw, ch);
        let cropped = upload_frame(&gpu, &pool, &crop_layout, &crop).unwrap();
        for resize in RESIZES {
            let o = TensorizeOptions {
                resize,
                ..TensorizeOptions::new(9, 7)
            };
            let region = [x, y, cw, ch].map(|v| v as f32);
            let got = gpu_region(&gpu, &frame, o, region);
            let want: Vec<f64> = common::video::tensorize(&gpu, &cropped, o)
                .into_iter()
                .map(f64::from)
                .collect();
            // 0..1 values; only the f32 rounding of positions offset by
            // the region's corner differs.
            assert_close_f32(&got, &want, 1e-4, &format!("{region:?} {resize:?}"));
            let on_cpu = cpu_region(&layout, &bytes, o, region);
            assert_close_f32(&on_cpu, &want, 1e-4, &format!("CPU {region:?} {resize:?}"));
        }
    }
}

#[test]
fn regions_recorded_into_one_encoder_each_keep_their_own() {
    // Four regions of a frame whose quarters are flat colours, recorded into
    // one encoder and submitted once: each tensor is its quarter's colour.
    let gpu = common::gpu();
    let (w, h) = (16u32, 12u32);
    let colours = [[200u8, 0, 0], [0, 150, 0], [0, 0, 100], [50, 60, 70]];
    let mut bytes = Vec::with_capacity((w * h * 4) as usize);
    for y in 0..h {
        for x in 0..w {
            let q = usize::from(x >= w / 2) + 2 * usize::from(y >= h / 2);
            bytes.extend_from_slice(&colours[q]);
            bytes.push(255);
        }
    }
    let layout = FrameLayout::packed(VideoFormat::Rgba, w, h);
    let frame = upload_frame(&gpu, &TexturePool::new(), &layout, &bytes).unwrap();
    let o = TensorizeOptions {
        normalize: Normalize::RAW,
        ..TensorizeOptions::new(5, 3)
    };
    let t = Tensorizer::new(&gpu, o).unwrap();
    let shape = shape_of(&t);
    let dsts: Vec<wgpu::Buffer> = (0..4)
        .map(|_| tensor_buffer(&gpu, t.output_bytes()))
        .collect();
    let (hw, hh) = ((w / 2) as f32, (h / 2) as f32);
    let regions = [
        [0.0, 0.0, hw, hh],
        [hw, 0.0, hw, hh],
        [0.0, hh, hw, hh],
        [hw, hh, hw, hh],
    ];
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    for (region, dst) in regions.iter().zip(&dsts) {
        t.encode_region(&mut encoder, &frame, *region, described(&t, dst, &shape))
            .unwrap();
    }
    gpu.queue().submit([encoder.finish()]);
    for (q, dst) in dsts.iter().enumerate() {
        let got = read(&gpu, dst, &t);
        let want = colours[q].map(f32::from);
        assert!(
            got.chunks_exact(3)
                .all(|p| p.iter().zip(&want).all(|(g, w)| (g - w).abs() < 1e-3)),
            "quarter {q}: {got:?}, want {want:?} everywhere"
        );
    }
}

#[test]
fn known_values_of_a_region() {
    // A 4x2 RGBx frame whose columns are 0, 100, 200, 50: the region of
    // columns 1..3 halved is the mean of each column pair only (no tap
    // reaches columns 0 or 3); as one pixel, stretched, the middle of the
    // region is a tap halfway between its two columns.
    let columns = [0u8, 100, 200, 50];
    let bytes: Vec<u8> = (0..2)
        .flat_map(|_| columns.iter().flat_map(|&c| [c, c, c, 7]))
        .collect();
    let layout = FrameLayout::packed(VideoFormat::Rgbx, 4, 2);
    let frame = cpu::CpuFrame::from_layout(&layout, &bytes).unwrap();
    let region = [1.0, 0.0, 2.0, 2.0];
    let run = |w: u32, h: u32| {
        let t = cpu::Tensorizer::new(TensorizeOptions {
            normalize: Normalize::RAW,
            ..TensorizeOptions::new(w, h)
        })
        .unwrap();
        let mut out = vec![0.0; t.output_len()];
        t.run_region(&frame, region, &mut out).unwrap();
        out
    };
    assert_eq!(run(2, 1), [100.0, 100.0, 100.0, 200.0, 200.0, 200.0]);
    assert_eq!(run(1, 1), [150.0; 3]);
    // Upscaled 4x: the outermost samples fall outside the region's pixel
    // centres and are held at its edge columns, never 0 or 50.
    let wide = run(4, 1);
    let reds: Vec<f32> = wide.chunks(3).map(|p| p[0]).collect();
    assert_eq!(reds, [100.0, 125.0, 175.0, 200.0]);

    let gpu = common::gpu();
    let on_gpu = upload_frame(&gpu, &TexturePool::new(), &layout, &bytes).unwrap();
    let o = TensorizeOptions {
        normalize: Normalize::RAW,
        ..TensorizeOptions::new(4, 1)
    };
    let got: Vec<f64> = gpu_region(&gpu, &on_gpu, o, region)
        .into_iter()
        .map(f64::from)
        .collect();
    assert_close_f32(&wide, &got, 1e-4, "GPU vs CPU known values");
}

#[test]
fn regions_with_nothing_inside_the_frame_are_errors_naming_them() {
    // A device of its own: the transfer count below is this test's alone.
    let gpu = common::own_gpu();
    let layout = FrameLayout::packed(VideoFormat::Rgba, 8, 6);
    let bytes = vec![9u8; 8 * 6 * 4];
    let frame = upload_frame(&gpu, &TexturePool::new(), &layout, &bytes).unwrap();
    let cpu_frame = cpu::CpuFrame::from_layout(&layout, &bytes).unwrap();
    let o = TensorizeOptions::new(4, 4);
    let t = Tensorizer::new(&gpu, o).unwrap();
    let on_cpu = cpu::Tensorizer::new(o).unwrap();
    let dst = tensor_buffer(&gpu, t.output_bytes());
    let shape = shape_of(&t);
    let cases = [
        ([20.0, 1.0, 4.0, 4.0], "(x 20, y 1, w 4, h 4)"),
        ([-10.0, 0.0, 10.0, 6.0], "(x -10, y 0, w 10, h 6)"),
        ([2.0, 2.0, 0.0, 3.0], "w 0"),
        ([2.0, 2.0, 3.0, -1.0], "h -1"),
        ([f32::NAN, 0.0, 3.0, 3.0], "x NaN"),
        ([0.0, 0.0, f32::INFINITY, 3.0], "w inf"),
    ];
    let before = gpu.transfers();
    for (region, needle) in cases {
        let err = t
            .run_region(&frame, region, described(&t, &dst, &shape))
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{region:?}: {err}");
        assert!(err.contains("no area inside the 8x6 frame"), "{err}");
        let err = on_cpu
            .run_region(&cpu_frame, region, &mut [0.0; 48])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(needle) && err.contains("8x6"),
            "CPU {region:?}: {err}"
        );
    }
    // A refused region records nothing.
    assert_eq!(gpu.transfers().since(&before).uploads, 0);
    gpu.check().unwrap();
}

/// Asymmetric sampling (OpenCV's warpAffine, MediaPipe's CPU graphs):
/// output pixel i of a 4x downscale is exactly source pixel 4i, where
/// half-pixel sampling blends pixels 4i+1 and 4i+2.
#[test]
fn asymmetric_sampling_takes_every_fourth_pixel() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let (w, h) = (16u32, 4u32);
    let bytes: Vec<u8> = (0..w * h)
        .flat_map(|i| {
            let (x, y) = (i % w, i / w);
            [(x * 10) as u8, (y * 50) as u8, 7, 255]
        })
        .collect();
    let layout = FrameLayout::packed(VideoFormat::Rgba, w, h);
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    let whole = [0.0, 0.0, w as f32, h as f32];
    let o = TensorizeOptions {
        normalize: Normalize::RAW,
        sampling: Sampling::Asymmetric,
        ..TensorizeOptions::new(4, 1)
    };
    let got = gpu_region(&gpu, &frame, o, whole);
    let want: Vec<f32> = (0..4).flat_map(|i| [(i * 40) as f32, 0.0, 7.0]).collect();
    assert_close_f32(
        &got,
        &want.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        1e-4,
        "asymmetric",
    );
    assert_eq!(cpu_region(&layout, &bytes, o, whole), want);
    let half = gpu_region(
        &gpu,
        &frame,
        TensorizeOptions {
            sampling: Sampling::HalfPixel,
            ..o
        },
        whole,
    );
    // Half-pixel: x = 4i + 1.5, between pixels 4i+1 and 4i+2; y = 1.5.
    assert!(
        (half[0] - 15.0).abs() < 1e-3 && (half[1] - 75.0).abs() < 1e-3,
        "{half:?}"
    );
}
