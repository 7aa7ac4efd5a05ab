//! The frame path on the CPU, for `device=cpu` and machines without a GPU
//! adapter: the same tensorize, composite and image output as the shaders
//! (`tensorize.wgsl`, `composite.wgsl`, `blur.wgsl`, `mask_smooth.wgsl`,
//! `image_out.wgsl` and the frame readers), on frames in system memory,
//! with rayon over rows.
//!
//! The arithmetic follows the shaders step by step in f32, so that a frame
//! gives the same tensor and the same picture on either path (within the
//! rounding of the GPU's f32 and its 8-bit stores). Options are the GPU
//! path's types where they hold no GPU resource ([`TensorizeOptions`],
//! [`MaskOptions`], [`ColorSpec`]); the effect and background have CPU twins
//! here because the GPU ones carry a texture.
//!
//! [`TensorizeOptions`]: super::TensorizeOptions
//! [`MaskOptions`]: super::MaskOptions
//! [`ColorSpec`]: super::ColorSpec

mod composite;
mod frame;
mod image_out;
mod tensorize;

pub use composite::{Background, CompositeOptions, Compositor, Effect, RgbaImage};
pub use frame::CpuFrame;
pub use image_out::write_image;
pub use tensorize::Tensorizer;

/// WGSL's `mix`: `a * (1 - t) + b * t`, written the same way so that the
/// endpoints come out exact as they do on the GPU.
#[inline]
fn mix(a: f32, b: f32, t: f32) -> f32 {
    a * (1.0 - t) + b * t
}

#[inline]
fn mix_n<const N: usize>(a: [f32; N], b: [f32; N], t: f32) -> [f32; N] {
    std::array::from_fn(|c| mix(a[c], b[c], t))
}

/// Bilinear sample at continuous pixel coordinate (`x`, `y`) of a `width` x
/// `height` grid (pixel centres at integers), clamped to the edge: the
/// shaders' `bilinear`, `person` and `bg_scaled`. `width` and `height` are at
/// least 1.
#[inline]
fn bilinear<const N: usize>(
    x: f32,
    y: f32,
    width: usize,
    height: usize,
    at: impl Fn(usize, usize) -> [f32; N],
) -> [f32; N] {
    let x = x.clamp(0.0, (width - 1) as f32);
    let y = y.clamp(0.0, (height - 1) as f32);
    let (x0, y0) = (x.floor() as usize, y.floor() as usize);
    let (x1, y1) = ((x0 + 1).min(width - 1), (y0 + 1).min(height - 1));
    let (fx, fy) = (x - x0 as f32, y - y0 as f32);
    let top = mix_n(at(x0, y0), at(x1, y0), fx);
    let bottom = mix_n(at(x0, y1), at(x1, y1), fx);
    mix_n(top, bottom, fy)
}
