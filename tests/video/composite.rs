//! Texturize against CPU references: segmentation composite (every effect,
//! edge softening, temporal smoothing), image tensor -> RGBA, and that only
//! the explicit download moves bytes.

use crate::common;

use crate::common::video::{
    assert_close_u8, bilinear, decode, random_background, random_frame, rng, to_u8, Image,
};
use rand::Rng;
use wgnn::gpu::Gpu;
use wgnn::ml::DataType;
use wgnn::video::{
    create_rgba_texture, download_rgba, upload_frame, Background, ColorSpec, CompositeOptions,
    Compositor, EdgeSoftening, Effect, FrameLayout, ImageWriter, MaskOptions, TensorBuffer,
    TexturePool, VideoFormat,
};

struct Mask {
    width: usize,
    height: usize,
    values: Vec<f32>,
}

fn random_mask(r: &mut rand::rngs::StdRng, width: usize, height: usize) -> Mask {
    Mask {
        width,
        height,
        values: (0..width * height)
            .map(|_| r.random_range(0.0..1.0))
            .collect(),
    }
}

fn mask_buffer(gpu: &Gpu, mask: &Mask) -> wgnn::gpu::live::Buffer {
    gpu.create_buffer_with_data(
        "test mask",
        bytemuck::cast_slice(&mask.values),
        wgpu::BufferUsages::STORAGE,
    )
    .unwrap()
}

/// The shape of a `width` x `height` mask tensor.
fn mask_shape(width: usize, height: usize) -> [usize; 4] {
    [1, height, width, 1]
}

fn smoothstep(lo: f64, hi: f64, x: f64) -> f64 {
    let t = ((x - lo) / (hi - lo)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

/// Person probability at frame pixel (x, y).
fn person(mask: &Mask, w: usize, h: usize, x: usize, y: usize, edge: Option<EdgeSoftening>) -> f64 {
    let mx = (x as f64 + 0.5) * mask.width as f64 / w as f64 - 0.5;
    let my = (y as f64 + 0.5) * mask.height as f64 / h as f64 - 0.5;
    let m = bilinear(mask.width, mask.height, mx, my, |x, y| {
        mask.values[y * mask.width + x] as f64
    })
    .clamp(0.0, 1.0);
    match edge {
        Some(e) if e.softness > 0.0 => smoothstep(
            (e.threshold - e.softness) as f64,
            (e.threshold + e.softness) as f64,
            m,
        ),
        Some(e) => f64::from(u8::from(m >= e.threshold as f64)),
        None => m,
    }
}

fn gaussian_blur(img: &Image, sigma: f64) -> Image {
    let radius = (3.0 * sigma).ceil() as i64;
    let pass = |src: &Image, dx: i64, dy: i64| {
        let mut rgb = Vec::with_capacity(src.rgb.len());
        for y in 0..src.height as i64 {
            for x in 0..src.width as i64 {
                let (mut sum, mut total) = ([0.0; 3], 0.0);
                for i in -radius..=radius {
                    let w = (-0.5 * (i * i) as f64 / (sigma * sigma)).exp();
                    let qx = (x + dx * i).clamp(0, src.width as i64 - 1) as usize;
                    let qy = (y + dy * i).clamp(0, src.height as i64 - 1) as usize;
                    let p = src.at(qx, qy);
                    for c in 0..3 {
                        sum[c] += w * p[c];
                    }
                    total += w;
                }
                rgb.push(sum.map(|s| s / total));
            }
        }
        Image { rgb, ..*src }
    };
    pass(&pass(img, 1, 0), 0, 1)
}

/// The expected RGBA bytes of a composite.
fn reference(
    frame: &Image,
    mask: &Mask,
    effect: &Effect,
    edge: Option<EdgeSoftening>,
    bg_image: Option<&Image>,
) -> Vec<u8> {
    let (w, h) = (frame.width, frame.height);
    let blurred = match effect {
        Effect::Blur { strength } => Some(gaussian_blur(frame, *strength as f64)),
        _ => None,
    };
    let mut out = Vec::with_capacity(w * h * 4);
    for y in 0..h {
        for x in 0..w {
            let fg = frame.at(x, y);
            let m = person(mask, w, h, x, y, edge);
            let mix = |bg: [f64; 3]| [0, 1, 2].map(|c| bg[c] + (fg[c] - bg[c]) * m);
            let (rgb, alpha) = match effect {
                Effect::None => (fg, 255.0),
                Effect::Mask => ([m * 255.0; 3], 255.0),
                Effect::Replace(Background::Color(c)) => (
                    mix([c[0], c[1], c[2]].map(f64::from)),
                    c[3] as f64 + (255.0 - c[3] as f64) * m,
                ),
                Effect::Replace(Background::Image(_)) => {
                    let bg = bg_image.unwrap();
                    let bx = (x as f64 + 0.5) * bg.width as f64 / w as f64 - 0.5;
                    let by = (y as f64 + 0.5) * bg.height as f64 / h as f64 - 0.5;
                    (mix(bg.bilinear(bx, by)), 255.0)
                }
                Effect::Blur { .. } => (mix(blurred.as_ref().unwrap().at(x, y)), 255.0),
            };
            out.extend(rgb.map(to_u8));
            out.push(to_u8(alpha));
        }
    }
    out
}

/// A random RGBA image texture, and what it holds.
fn background_image(
    gpu: &Gpu,
    r: &mut rand::rngs::StdRng,
    w: u32,
    h: u32,
) -> (wgnn::gpu::live::Texture, Image) {
    let (texture, bytes) = random_background(gpu, r, w, h);
    let rgb = bytes
        .chunks(4)
        .map(|p| [p[0], p[1], p[2]].map(f64::from))
        .collect();
    (
        texture,
        Image {
            width: w as usize,
            height: h as usize,
            rgb,
        },
    )
}

#[test]
fn every_effect_matches_the_reference_within_one_lsb() {
    let gpu = common::gpu();
    let pool = TexturePool::new();
    let mut r = rng(20);
    let (bg_texture, bg_image) = background_image(&gpu, &mut r, 13, 9);
    let soft = Some(EdgeSoftening {
        threshold: 0.5,
        softness: 0.2,
    });
    let hard = Some(EdgeSoftening {
        threshold: 0.4,
        softness: 0.0,
    });
    let cases: Vec<(VideoFormat, Effect, Option<EdgeSoftening>)> = vec![
        (VideoFormat::Nv12, Effect::None, None),
        (VideoFormat::Rgb, Effect::Mask, None),
        (VideoFormat::I420, Effect::Mask, soft),
        (VideoFormat::Bgrx, Effect::Mask, hard),
        (
            VideoFormat::Rgba,
            Effect::Replace(Background::Color([10, 200, 30, 255])),
            soft,
        ),
        (
            VideoFormat::Nv12,
            Effect::Replace(Background::Color([250, 0, 99, 64])),
            None,
        ),
        (
            VideoFormat::I420,
            Effect::Replace(Background::Image(bg_texture)),
            None,
        ),
        (VideoFormat::Rgbx, Effect::Blur { strength: 2.5 }, soft),
        (VideoFormat::Nv12, Effect::Blur { strength: 0.7 }, None),
    ];
    for (i, (format, effect, edge)) in cases.into_iter().enumerate() {
        let (w, h) = if i % 2 == 0 { (37, 23) } else { (51, 29) };
        let (layout, bytes) = random_frame(&mut r, format, w, h, 6);
        let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
        let mask = random_mask(&mut r, 16, 12);
        let mut mask_options = MaskOptions::new(16, 12);
        mask_options.edge = edge;
        let mut compositor = Compositor::new(
            &gpu,
            CompositeOptions {
                mask: mask_options,
                effect: effect.clone(),
                color: ColorSpec::default(),
            },
        )
        .unwrap();
        let out = create_rgba_texture(&gpu, w, h).unwrap();
        let shape = mask_shape(mask.width, mask.height);
        let buffer = mask_buffer(&gpu, &mask);
        compositor
            .run(
                &frame,
                TensorBuffer::new(&buffer, DataType::Float32, &shape),
                &out,
            )
            .unwrap();
        let got = download_rgba(&gpu, &out).unwrap();
        let img = decode(&layout, &bytes, ColorSpec::default());
        let want = reference(&img, &mask, &effect, edge, Some(&bg_image));
        assert_close_u8(&got, &want, 1, &format!("{format} {effect:?} {edge:?}"));
    }
    gpu.check().unwrap();
}

/// The GPU's blur of a frame: a composite with an all-background mask.
fn blurred_on_gpu(gpu: &Gpu, layout: &FrameLayout, bytes: &[u8], strength: f32) -> Vec<u8> {
    let frame = upload_frame(gpu, &TexturePool::new(), layout, bytes).unwrap();
    let background = mask_buffer(
        gpu,
        &Mask {
            width: 1,
            height: 1,
            values: vec![0.0],
        },
    );
    let mut compositor = Compositor::new(
        gpu,
        CompositeOptions {
            mask: MaskOptions::new(1, 1),
            effect: Effect::Blur { strength },
            color: ColorSpec::default(),
        },
    )
    .unwrap();
    let out = create_rgba_texture(gpu, layout.width, layout.height).unwrap();
    let shape = mask_shape(1, 1);
    compositor
        .run(
            &frame,
            TensorBuffer::new(&background, DataType::Float32, &shape),
            &out,
        )
        .unwrap();
    download_rgba(gpu, &out).unwrap()
}

/// The exact Gaussian blur of a frame, rounded to bytes.
fn blurred_exactly(layout: &FrameLayout, bytes: &[u8], strength: f32) -> Vec<u8> {
    let img = decode(layout, bytes, ColorSpec::default());
    let mask = Mask {
        width: 1,
        height: 1,
        values: vec![0.0],
    };
    reference(&img, &mask, &Effect::Blur { strength }, None, None)
}

/// The blur works on tiles (a run of outputs plus the kernel's radius either
/// side, read once into workgroup memory): frames that end mid-tile, kernels
/// longer than a tile, frames smaller than the kernel's reach, and tiles
/// that meet inside a frame must all match a plain clamp-to-edge Gaussian.
/// On random frames the sampled blur (from sigma 8) is as close to it.
#[test]
fn blur_tiles_match_the_reference_at_every_size() {
    let gpu = common::gpu();
    let mut r = rng(25);
    // Rows are split into runs of 512 outputs, columns into runs of 256
    // across 4 columns at a time; from sigma 8 on, outputs are k = sigma / 4
    // (rounded down) pixels apart: runs of 512 k and 256 k pixels.
    let cases = [
        (VideoFormat::Rgba, 1, 1, 64.0),
        (VideoFormat::Nv12, 1, 1, 64.0),
        (VideoFormat::Rgba, 3, 2, 64.0),
        (VideoFormat::Nv12, 3, 2, 1.5),
        (VideoFormat::Nv12, 600, 3, 64.0),
        (VideoFormat::Rgba, 517, 5, 7.5),
        (VideoFormat::Rgba, 9, 300, 64.0),
        (VideoFormat::Nv12, 7, 261, 2.5),
        (VideoFormat::Rgba, 6, 133, 20.0),
        (VideoFormat::Nv12, 11, 130, 20.0),
        // Step 2 and 3 with tiles meeting across, then down.
        (VideoFormat::Rgba, 1030, 3, 8.5),
        (VideoFormat::Nv12, 1541, 2, 12.0),
        (VideoFormat::Rgba, 5, 519, 8.5),
        (VideoFormat::Nv12, 3, 775, 13.0),
    ];
    for (format, w, h, strength) in cases {
        let (layout, bytes) = random_frame(&mut r, format, w, h, 3);
        let got = blurred_on_gpu(&gpu, &layout, &bytes, strength);
        let want = blurred_exactly(&layout, &bytes, strength);
        assert_close_u8(
            &got,
            &want,
            1,
            &format!("{format} {w}x{h} sigma {strength}"),
        );
    }
    gpu.check().unwrap();
}

/// Hard black and white shapes whose blur's second derivative peaks: bars
/// and squares `side` pixels across; the single ones from pixel `at`.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Bars,
    OneBar,
    Square,
    Checkerboard,
}

impl Shape {
    fn is_white(self, x: u32, y: u32, side: u32, at: u32) -> bool {
        let inside = |v: u32| (at..at + side).contains(&v);
        match self {
            Shape::Bars => (x / side) % 2 == 0,
            Shape::OneBar => inside(x),
            Shape::Square => inside(x) && inside(y),
            Shape::Checkerboard => (x / side + y / side) % 2 == 0,
        }
    }

    /// The shape as a `w` x `h` RGBA frame.
    fn picture(self, w: u32, h: u32, side: u32, at: u32) -> (FrameLayout, Vec<u8>) {
        let layout = FrameLayout::packed(VideoFormat::Rgba, w, h);
        let bytes = (0..h)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .flat_map(|(x, y)| {
                let v = if self.is_white(x, y, side, at) {
                    255
                } else {
                    0
                };
                [v, v, v, 255]
            })
            .collect();
        (layout, bytes)
    }
}

/// The sampled blur (every k-th pixel each way, k = sigma / 4 rounded
/// down, interpolated between) against the exact Gaussian: within 2 levels
/// on the hardest pictures, hard shapes 2 sigma across at sigma = 4 k (the
/// largest k for a sigma), and within 1 on random ones.
#[test]
fn sampled_blur_stays_within_two_levels_of_the_exact_gaussian() {
    let gpu = common::gpu();
    let mut r = rng(26);
    let worst = |got: &[u8], want: &[u8]| -> u8 {
        got.iter()
            .zip(want)
            .map(|(g, w)| g.abs_diff(*w))
            .max()
            .unwrap_or(0)
    };
    // Steps 2, 3 and 4; (W - 1) and (H - 1) not all multiples of k.
    for (strength, w, h) in [(8.0f32, 61, 47), (12.0, 62, 45), (16.0, 97, 70)] {
        let side = (2.0 * strength) as u32;
        // The single shapes centred about midway between two samples (k
        // apart from pixel 0), where interpolation strays furthest.
        let k = (strength / 4.0) as u32;
        let at = 5 * k + k / 2 - side / 2;
        for shape in [
            Shape::Bars,
            Shape::OneBar,
            Shape::Square,
            Shape::Checkerboard,
        ] {
            let (layout, bytes) = shape.picture(w, h, side, at);
            let got = blurred_on_gpu(&gpu, &layout, &bytes, strength);
            let want = blurred_exactly(&layout, &bytes, strength);
            eprintln!(
                "sigma {strength} {shape:?}: {} levels from the exact blur at most",
                worst(&got, &want)
            );
            assert_close_u8(&got, &want, 2, &format!("sigma {strength} {shape:?}"));
        }
        let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, w, h, 0);
        let got = blurred_on_gpu(&gpu, &layout, &bytes, strength);
        let want = blurred_exactly(&layout, &bytes, strength);
        assert_close_u8(&got, &want, 1, &format!("sigma {strength} random"));
    }
    gpu.check().unwrap();
}

#[test]
fn temporal_smoothing_averages_masks_over_frames() {
    let gpu = common::gpu();
    let mut r = rng(21);
    let (w, h) = (21, 17);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::Rgba, w, h, 0);
    let frame = upload_frame(&gpu, &TexturePool::new(), &layout, &bytes).unwrap();
    let img = decode(&layout, &bytes, ColorSpec::default());
    let alpha = 0.6;
    let mut options = MaskOptions::new(9, 7);
    options.temporal = alpha;
    let mut compositor = Compositor::new(
        &gpu,
        CompositeOptions {
            mask: options,
            effect: Effect::Mask,
            color: ColorSpec::default(),
        },
    )
    .unwrap();
    let out = create_rgba_texture(&gpu, w, h).unwrap();
    let mut state: Option<Vec<f32>> = None;
    for step in 0..4 {
        if step == 3 {
            compositor.reset_temporal();
            state = None;
        }
        let mask = random_mask(&mut r, 9, 7);
        let buffer = mask_buffer(&gpu, &mask);
        let shape = mask_shape(9, 7);
        compositor
            .run(
                &frame,
                TensorBuffer::new(&buffer, DataType::Float32, &shape),
                &out,
            )
            .unwrap();
        let smoothed: Vec<f32> = match &state {
            None => mask.values.clone(),
            Some(prev) => prev
                .iter()
                .zip(&mask.values)
                .map(|(p, m)| alpha * p + (1.0 - alpha) * m)
                .collect(),
        };
        let expected = Mask {
            values: smoothed.clone(),
            ..mask
        };
        let want = reference(&img, &expected, &Effect::Mask, None, None);
        assert_close_u8(
            &download_rgba(&gpu, &out).unwrap(),
            &want,
            1,
            &format!("frame {step}"),
        );
        state = Some(smoothed);
    }
}

#[test]
fn image_tensor_becomes_clamped_rgba() {
    let gpu = common::gpu();
    let mut r = rng(22);
    let (w, h) = (23usize, 11usize);
    let values: Vec<f32> = (0..w * h * 3)
        .map(|_| r.random_range(-40.0..300.0))
        .collect();
    let src = gpu
        .create_buffer_with_data(
            "test image tensor",
            bytemuck::cast_slice(&values),
            wgpu::BufferUsages::STORAGE,
        )
        .unwrap();
    let out = create_rgba_texture(&gpu, w as u32, h as u32).unwrap();
    let shape = [1, h, w, 3];
    ImageWriter::new(&gpu)
        .unwrap()
        .run(TensorBuffer::new(&src, DataType::Float32, &shape), &out)
        .unwrap();
    let want: Vec<u8> = values
        .chunks(3)
        .flat_map(|p| {
            [
                to_u8(p[0] as f64),
                to_u8(p[1] as f64),
                to_u8(p[2] as f64),
                255,
            ]
        })
        .collect();
    assert_close_u8(&download_rgba(&gpu, &out).unwrap(), &want, 1, "image out");
    assert!(
        want.contains(&0) && want.contains(&255),
        "the data exercises clamping"
    );
}

#[test]
fn only_the_explicit_download_moves_bytes() {
    let gpu = common::own_gpu();
    let pool = TexturePool::new();
    let mut r = rng(23);
    let (w, h) = (37, 23);
    let (layout, bytes) = random_frame(&mut r, VideoFormat::I420, w, h, 3);
    let frame = upload_frame(&gpu, &pool, &layout, &bytes).unwrap();
    let mask = mask_buffer(&gpu, &random_mask(&mut r, 8, 8));
    let tensor = gpu
        .create_buffer_with_data(
            "tensor",
            bytemuck::cast_slice(&vec![100.0f32; (w * h * 3) as usize]),
            wgpu::BufferUsages::STORAGE,
        )
        .unwrap();
    let mut options = MaskOptions::new(8, 8);
    options.temporal = 0.5;
    let mut compositor = Compositor::new(
        &gpu,
        CompositeOptions {
            mask: options,
            effect: Effect::Blur { strength: 1.5 },
            color: ColorSpec::default(),
        },
    )
    .unwrap();
    let writer = ImageWriter::new(&gpu).unwrap();
    let out = create_rgba_texture(&gpu, w, h).unwrap();

    let before = gpu.transfers();
    let (mshape, tensor_shape) = (mask_shape(8, 8), [1, h as usize, w as usize, 3]);
    let mask = TensorBuffer::new(&mask, DataType::Float32, &mshape);
    let tensor = TensorBuffer::new(&tensor, DataType::Float32, &tensor_shape);
    for _ in 0..2 {
        compositor.run(&frame, mask, &out).unwrap();
        writer.run(tensor, &out).unwrap();
    }
    gpu.wait_idle().unwrap();
    assert_eq!(gpu.transfers().since(&before), Default::default());

    let got = download_rgba(&gpu, &out).unwrap();
    let moved = gpu.transfers().since(&before);
    assert_eq!(moved.downloads, 1);
    assert_eq!(moved.download_bytes, u64::from(w * h * 4));
    assert_eq!(moved.uploads, 0);
    assert!(got.chunks(4).all(|p| p == [100, 100, 100, 255]));
}

#[test]
fn bad_composite_input_is_an_error() {
    let gpu = common::gpu();
    let options = |effect| CompositeOptions {
        mask: MaskOptions::new(8, 8),
        effect,
        color: ColorSpec::default(),
    };
    for strength in [0.0, -1.0, 100.0, f32::NAN] {
        let err = Compositor::new(&gpu, options(Effect::Blur { strength })).unwrap_err();
        assert!(err.to_string().contains("MAX_BLUR_STRENGTH = 64"), "{err}");
    }
    let mut temporal = options(Effect::Mask);
    temporal.mask.temporal = 1.0;
    let err = Compositor::new(&gpu, temporal).unwrap_err();
    assert!(
        err.to_string()
            .contains("temporal smoothing 1 must be in 0..1"),
        "{err}"
    );

    let mut compositor = Compositor::new(&gpu, options(Effect::Mask)).unwrap();
    let layout = wgnn::video::FrameLayout::packed(VideoFormat::Rgba, 5, 4);
    let frame = upload_frame(&gpu, &TexturePool::new(), &layout, &[9; 80]).unwrap();
    let mask = mask_buffer(&gpu, &random_mask(&mut rng(24), 8, 8));
    let wrong_size = create_rgba_texture(&gpu, 4, 5).unwrap();
    let shape = mask_shape(8, 8);
    let mask = TensorBuffer::new(&mask, DataType::Float32, &shape);
    let err = compositor.run(&frame, mask, &wrong_size).unwrap_err();
    assert!(
        err.to_string().contains("the output is 4x5, the frame 5x4"),
        "{err}"
    );

    let small_mask = mask_buffer(&gpu, &random_mask(&mut rng(24), 8, 7));
    let out = create_rgba_texture(&gpu, 5, 4).unwrap();
    // Described as the 8x8 mask the compositor takes: the buffer is short.
    let small_mask = TensorBuffer::new(&small_mask, DataType::Float32, &shape);
    let err = compositor.run(&frame, small_mask, &out).unwrap_err();
    assert!(
        err.to_string().contains("a 8x8 f32 mask needs 256"),
        "{err}"
    );

    let err = download_rgba(&gpu, frame.plane(0).unwrap()).map(|_| ());
    assert!(err.is_ok(), "an Rgba8Unorm plane with COPY_SRC reads back");
    let r8 = wgnn::video::FrameLayout::packed(VideoFormat::I420, 4, 4);
    let yuv = upload_frame(&gpu, &TexturePool::new(), &r8, &[0; 24]).unwrap();
    let err = download_rgba(&gpu, yuv.plane(0).unwrap()).unwrap_err();
    assert!(err.to_string().contains("R8Unorm is not RGBA8"), "{err}");
    gpu.check().unwrap();
}
