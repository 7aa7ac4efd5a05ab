//! CPU references for the video shaders, written from the textbook formulas
//! (published BT.601/BT.709 coefficients rather than the shaders' derivation
//! from Kr/Kb), random frames with padded strides, and the GPU side the
//! tests compare them with (a tensorized frame read back, random textures).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wgnn::gpu::transfer::TextureRegion;
use wgnn::gpu::Gpu;
use wgnn::video::{
    create_rgba_texture, ColorSpec, FrameLayout, GpuFrame, OutputDtype, TensorBuffer,
    TensorizeOptions, Tensorizer, VideoFormat, YuvMatrix, YuvRange,
};

/// Every matrix and range a YUV frame may declare.
pub const COLOR_SPECS: [ColorSpec; 4] = [
    ColorSpec {
        matrix: YuvMatrix::Bt601,
        range: YuvRange::Limited,
    },
    ColorSpec {
        matrix: YuvMatrix::Bt709,
        range: YuvRange::Limited,
    },
    ColorSpec {
        matrix: YuvMatrix::Bt601,
        range: YuvRange::Full,
    },
    ColorSpec {
        matrix: YuvMatrix::Bt709,
        range: YuvRange::Full,
    },
];

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// A frame of random bytes (padding included) whose rows are `pad` bytes
/// longer than needed, plus `pad` stray bytes between planes.
pub fn random_frame(
    rng: &mut StdRng,
    format: VideoFormat,
    width: u32,
    height: u32,
    pad: usize,
) -> (FrameLayout, Vec<u8>) {
    let mut layout = FrameLayout::packed(format, width, height);
    let mut offset = pad;
    for (p, plane) in layout.planes.iter_mut().enumerate() {
        plane.stride = format.row_bytes(p, width) + pad;
        plane.offset = offset;
        offset += plane.stride * format.plane_size(p, width, height).1 as usize + pad;
    }
    let bytes = (0..layout.len()).map(|_| rng.random()).collect();
    (layout, bytes)
}

/// Row-major RGB image, channels in 0..255.
#[derive(Clone, Debug)]
pub struct Image {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<[f64; 3]>,
}

impl Image {
    pub fn at(&self, x: usize, y: usize) -> [f64; 3] {
        self.rgb[y * self.width + x]
    }

    /// Bilinear sample, pixel centres at integers, clamped to the edge.
    pub fn bilinear(&self, x: f64, y: f64) -> [f64; 3] {
        bilinear(self.width, self.height, x, y, |x, y| self.at(x, y))
    }
}

pub fn bilinear<T: Lerp>(
    width: usize,
    height: usize,
    x: f64,
    y: f64,
    at: impl Fn(usize, usize) -> T,
) -> T {
    let x = x.clamp(0.0, (width - 1) as f64);
    let y = y.clamp(0.0, (height - 1) as f64);
    let (x0, y0) = (x.floor() as usize, y.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(width - 1), (y0 + 1).min(height - 1));
    let (fx, fy) = (x - x0 as f64, y - y0 as f64);
    let top = at(x0, y0).lerp(at(x1, y0), fx);
    let bottom = at(x0, y1).lerp(at(x1, y1), fx);
    top.lerp(bottom, fy)
}

pub trait Lerp: Copy {
    fn lerp(self, other: Self, t: f64) -> Self;
}

impl Lerp for f64 {
    fn lerp(self, other: f64, t: f64) -> f64 {
        self + (other - self) * t
    }
}

impl Lerp for [f64; 3] {
    fn lerp(self, other: [f64; 3], t: f64) -> [f64; 3] {
        [0, 1, 2].map(|c| self[c].lerp(other[c], t))
    }
}

fn yuv(y: u8, u: u8, v: u8, color: ColorSpec) -> [f64; 3] {
    let (y, u, v) = (y as f64, u as f64 - 128.0, v as f64 - 128.0);
    let (ys, rv, gu, gv, bu) = match (color.matrix, color.range) {
        (YuvMatrix::Bt601, YuvRange::Limited) => (1.164383, 1.596027, 0.391762, 0.812968, 2.017232),
        (YuvMatrix::Bt709, YuvRange::Limited) => (1.164383, 1.792741, 0.213249, 0.532909, 2.112402),
        (YuvMatrix::Bt601, YuvRange::Full) => (1.0, 1.402, 0.344136, 0.714136, 1.772),
        (YuvMatrix::Bt709, YuvRange::Full) => (1.0, 1.5748, 0.187324, 0.468124, 1.8556),
    };
    let luma = match color.range {
        YuvRange::Limited => ys * (y - 16.0),
        YuvRange::Full => y,
    };
    [luma + rv * v, luma - gu * u - gv * v, luma + bu * u].map(|c| c.clamp(0.0, 255.0))
}

/// What a frame's bytes mean as RGB.
pub fn decode(layout: &FrameLayout, bytes: &[u8], color: ColorSpec) -> Image {
    let (w, h) = (layout.width as usize, layout.height as usize);
    let byte = |plane: usize, x: usize, y: usize| {
        let p = layout.planes[plane];
        bytes[p.offset + y * p.stride + x]
    };
    let mut rgb = Vec::with_capacity(w * h);
    for y in 0..h {
        for x in 0..w {
            let px =
                |order: [usize; 3], size: usize| order.map(|c| byte(0, x * size + c, y) as f64);
            rgb.push(match layout.format {
                VideoFormat::Rgba | VideoFormat::Rgbx => px([0, 1, 2], 4),
                VideoFormat::Bgra | VideoFormat::Bgrx => px([2, 1, 0], 4),
                VideoFormat::Rgb => px([0, 1, 2], 3),
                VideoFormat::Nv12 => yuv(
                    byte(0, x, y),
                    byte(1, x / 2 * 2, y / 2),
                    byte(1, x / 2 * 2 + 1, y / 2),
                    color,
                ),
                VideoFormat::I420 => yuv(
                    byte(0, x, y),
                    byte(1, x / 2, y / 2),
                    byte(2, x / 2, y / 2),
                    color,
                ),
            });
        }
    }
    Image {
        width: w,
        height: h,
        rgb,
    }
}

/// 8-bit storage of a 0..255 value, as a unorm texture store does it.
pub fn to_u8(v: f64) -> u8 {
    v.clamp(0.0, 255.0).round() as u8
}

/// Asserts two byte images differ by at most `tolerance` per channel.
pub fn assert_close_u8(got: &[u8], want: &[u8], tolerance: u8, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst = (0u8, 0usize);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let d = g.abs_diff(w);
        if d > worst.0 {
            worst = (d, i);
        }
    }
    let i = worst.1;
    assert!(
        worst.0 <= tolerance,
        "{what}: byte {i} (pixel {}, channel {}) is {}, expected {} (tolerance {tolerance})",
        i / 4,
        i % 4,
        got[i],
        want[i]
    );
}

/// Asserts two float arrays differ by at most `tolerance` anywhere.
pub fn assert_close_f32(got: &[f32], want: &[f64], tolerance: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst = (0.0f64, 0usize);
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let d = (g as f64 - w).abs();
        if d.is_nan() || d > worst.0 {
            worst = (if d.is_nan() { f64::INFINITY } else { d }, i);
        }
    }
    let i = worst.1;
    assert!(
        worst.0 <= tolerance,
        "{what}: element {i} is {}, expected {} (difference {}, tolerance {tolerance})",
        got[i],
        want[i],
        worst.0
    );
}

/// Every plane of `frame` read back, one download each.
pub fn planes_of(gpu: &Gpu, frame: &GpuFrame) -> Vec<Vec<u8>> {
    frame.planes().map(|t| texture_bytes(gpu, t)).collect()
}

/// The whole of `texture` (mip 0) read back as tightly packed rows.
pub fn texture_bytes(gpu: &Gpu, texture: &wgpu::Texture) -> Vec<u8> {
    gpu.download_texture(texture, TextureRegion::whole(texture))
        .unwrap()
        .wait()
        .unwrap()
}

/// A buffer for a tensor of `bytes` bytes that the tensorizer can write and
/// a download can read.
pub fn tensor_buffer(gpu: &Gpu, bytes: u64) -> wgpu::Buffer {
    gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("test tensor"),
        size: bytes.div_ceil(4) * 4,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// The tensor `t` writes into `dst`, described as it holds it.
pub fn described<'a>(
    t: &Tensorizer,
    dst: &'a wgpu::Buffer,
    shape: &'a [usize; 4],
) -> TensorBuffer<'a> {
    TensorBuffer::new(dst, t.options().dtype.data_type(), shape)
}

/// The shape of the tensor `t` writes.
pub fn shape_of(t: &Tensorizer) -> [usize; 4] {
    t.output_shape().map(|d| d as usize)
}

/// Runs the tensorizer and reads the tensor back as f32.
pub fn tensorize(gpu: &Gpu, frame: &GpuFrame, options: TensorizeOptions) -> Vec<f32> {
    let t = Tensorizer::new(gpu, options).unwrap();
    let dst = tensor_buffer(gpu, t.output_bytes());
    let shape = shape_of(&t);
    t.run(frame, described(&t, &dst, &shape)).unwrap();
    let bytes = gpu
        .download_buffer(&dst, 0, t.output_bytes())
        .unwrap()
        .wait()
        .unwrap();
    gpu.check().unwrap();
    match options.dtype {
        OutputDtype::F32 => bytemuck::pod_collect_to_vec(&bytes),
        OutputDtype::F16 => bytemuck::pod_collect_to_vec::<u8, half::f16>(&bytes)
            .into_iter()
            .map(f32::from)
            .collect(),
    }
}

/// A random RGBA texture, and its bytes.
pub fn random_background(
    gpu: &Gpu,
    r: &mut StdRng,
    w: u32,
    h: u32,
) -> (wgnn::gpu::live::Texture, Vec<u8>) {
    let bytes: Vec<u8> = (0..w * h * 4).map(|_| r.random()).collect();
    let texture = create_rgba_texture(gpu, w, h).unwrap();
    gpu.upload_texture(&texture, TextureRegion::whole(&texture), &bytes, w * 4, h)
        .unwrap();
    (texture, bytes)
}
