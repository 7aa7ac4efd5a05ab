//! Segmentation output -> picture on the CPU: `mask_smooth.wgsl`,
//! `blur.wgsl` and `composite.wgsl`, writing RGBA rows in parallel.

use std::sync::Arc;

use rayon::prelude::*;

use super::frame::{CpuFrame, Reader};
use super::{bilinear, mix, mix_n};
use crate::error::{Error, Result};
use crate::video::composite::{blur_samples, blur_step, check_blur, check_mask};
use crate::video::{ColorSpec, MaskOptions};

/// An RGBA image in system memory, rows packed.
#[derive(Clone, Debug, PartialEq)]
pub struct RgbaImage {
    width: u32,
    height: u32,
    // Shared: options are cloned with their effect.
    rgba: Arc<[u8]>,
}

impl RgbaImage {
    pub fn new(width: u32, height: u32, rgba: Vec<u8>) -> Result<RgbaImage> {
        let needed = 4 * u64::from(width) * u64::from(height);
        if width == 0 || height == 0 || rgba.len() as u64 != needed {
            return Err(Error::invalid(format!(
                "RGBA image {width}x{height}: needs at least 1x1 pixels and {needed} bytes, \
                 got {}",
                rgba.len()
            )));
        }
        Ok(RgbaImage {
            width,
            height,
            rgba: rgba.into(),
        })
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    fn rgb(&self, x: usize, y: usize) -> [f32; 3] {
        let i = 4 * (y * self.width as usize + x);
        [0, 1, 2].map(|c| f32::from(self.rgba[i + c]))
    }
}

/// What replaces the background ([`video::Background`](crate::video::Background)
/// with the image in system memory).
#[derive(Clone, Debug, PartialEq)]
pub enum Background {
    /// RGBA; an alpha below 255 makes the background see-through.
    Color([u8; 4]),
    /// Stretched to the frame.
    Image(RgbaImage),
}

/// [`video::Effect`](crate::video::Effect) with a CPU [`Background`].
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// The frame, converted to RGBA.
    None,
    /// The mask as grey (white = person).
    Mask,
    /// The background blurred with a Gaussian of sigma `strength` pixels,
    /// sampled and interpolated from sigma 8 on as the GPU path does it
    /// (see [`video::Effect::Blur`](crate::video::Effect::Blur)).
    Blur {
        strength: f32,
    },
    Replace(Background),
}

#[derive(Clone, Debug)]
pub struct CompositeOptions {
    pub mask: MaskOptions,
    pub effect: Effect,
    /// For YUV frames.
    pub color: ColorSpec,
}

/// Composites frames with masks; holds the temporal state and the blur's
/// buffers between frames.
#[derive(Debug)]
pub struct Compositor {
    options: CompositeOptions,
    /// The smoothed mask, once a frame has been seen.
    smoothed: Option<Vec<f32>>,
    /// The frame as RGB, then its blur (effect blur only): the horizontal
    /// pass (samples x full height) and the blur's samples, `blurred_w`
    /// wide and `step` pixels apart.
    rgb: Vec<[f32; 3]>,
    across: Vec<[f32; 3]>,
    blurred: Vec<[f32; 3]>,
    blurred_w: usize,
    blurred_h: usize,
    step: usize,
}

fn check_effect(effect: &Effect) -> Result<()> {
    match effect {
        Effect::Blur { strength } => check_blur(*strength),
        _ => Ok(()),
    }
}

/// 8-bit storage of a 0..255 value, as the shader's store to an
/// `rgba8unorm` texture rounds it.
#[inline]
fn to_u8(v: f32) -> u8 {
    // NaN (a model's broken output) becomes 0, as a unorm store makes it.
    v.clamp(0.0, 255.0).round() as u8
}

/// Gaussian taps of sigma `strength`, reaching 3 sigma each way: `blur.wgsl`'s.
/// A blurred colour (0..255) as a blur pass stores it: divided by 255 into
/// a half float, as `blur.wgsl` writes its Rgba16Float intermediate, and read
/// back times 255, as `read_float_rgba.wgsl` does.
fn as_stored(v: f32) -> f32 {
    half::f16::from_f32(v / 255.0).to_f32() * 255.0
}

fn gaussian(strength: f32) -> Vec<f32> {
    let radius = (3.0 * strength).ceil() as i32;
    (-radius..=radius)
        .map(|i| (-0.5 * (i * i) as f32 / (strength * strength)).exp())
        .collect()
}

/// Position `p + i`, for `i` = tap index - radius, clamped to `0..len`:
/// border pixels are repeated rather than darkened.
#[inline]
fn clamped(p: usize, tap: usize, radius: usize, len: usize) -> usize {
    (p + tap).saturating_sub(radius).min(len - 1)
}

impl Compositor {
    pub fn new(options: CompositeOptions) -> Result<Compositor> {
        check_mask(&options.mask)?;
        check_effect(&options.effect)?;
        Ok(Compositor {
            options,
            smoothed: None,
            rgb: Vec::new(),
            across: Vec::new(),
            blurred: Vec::new(),
            blurred_w: 0,
            blurred_h: 0,
            step: 1,
        })
    }

    pub fn options(&self) -> &CompositeOptions {
        &self.options
    }

    pub fn set_effect(&mut self, effect: Effect) -> Result<()> {
        check_effect(&effect)?;
        self.options.effect = effect;
        Ok(())
    }

    /// Forgets the mask history (after a scene cut, say).
    pub fn reset_temporal(&mut self) {
        self.smoothed = None;
    }

    /// Writes the composite of `frame` and `mask` (`height` rows of `width`
    /// values of the mask options) as RGBA rows `out_stride` bytes apart into
    /// `out`; the bytes between a row's pixels and the next row are zeroed.
    pub fn run(
        &mut self,
        frame: &CpuFrame,
        mask: &[f32],
        out: &mut [u8],
        out_stride: usize,
    ) -> Result<()> {
        let m = self.options.mask;
        let (mw, mh) = (m.width as usize, m.height as usize);
        if mask.len() < mw * mh {
            return Err(Error::invalid(format!(
                "composite: the mask has {} values, a {mw}x{mh} mask needs {}",
                mask.len(),
                mw * mh
            )));
        }
        let (w, h) = (frame.width() as usize, frame.height() as usize);
        let row = 4 * w;
        let needed = (h - 1)
            .checked_mul(out_stride)
            .and_then(|n| n.checked_add(row));
        if out_stride < row || needed.is_none_or(|n| out.len() < n) {
            return Err(Error::invalid(format!(
                "composite: the output has {} bytes with rows {out_stride} apart; a {w}x{h} \
                 RGBA frame needs rows of at least {row} bytes and {} bytes in all",
                out.len(),
                needed.map_or("more than memory holds".into(), |n| n.to_string())
            )));
        }

        let reader = frame.reader(self.options.color);
        if let Effect::Blur { strength } = self.options.effect {
            self.blur(&reader, strength);
        }
        let mask = &mask[..mw * mh];
        let mask: &[f32] = if m.temporal > 0.0 {
            // The first frame has no history: its mask is taken as is.
            let state = self.smoothed.get_or_insert_with(|| mask.to_vec());
            state.par_iter_mut().zip(mask).for_each(|(s, &v)| {
                *s = m.temporal * *s + (1.0 - m.temporal) * v;
            });
            state
        } else {
            mask
        };
        let o = &self.options;
        let rgb = &self.rgb;
        // `bg_blurred` of composite.wgsl: bilinear between the blur's
        // samples, weights (x mod k) / k; step 1 reads the blur as is.
        let (blurred, bw, bh, k) = (&self.blurred, self.blurred_w, self.blurred_h, self.step);
        let blurred_at = |x: usize, y: usize| -> [f32; 3] {
            if k == 1 {
                return blurred[y * bw + x];
            }
            let (x0, y0) = ((x / k).min(bw - 1), (y / k).min(bh - 1));
            let (x1, y1) = ((x0 + 1).min(bw - 1), (y0 + 1).min(bh - 1));
            let (fx, fy) = ((x % k) as f32 / k as f32, (y % k) as f32 / k as f32);
            let at = |x: usize, y: usize| blurred[y * bw + x];
            let top = mix_n(at(x0, y0), at(x1, y0), fx);
            let bottom = mix_n(at(x0, y1), at(x1, y1), fx);
            mix_n(top, bottom, fy)
        };
        let (edge, lo, hi) = match m.edge {
            Some(e) => (true, e.threshold - e.softness, e.threshold + e.softness),
            None => (false, 0.0, 0.0),
        };
        // `person` of composite.wgsl: the mask stretched over the frame,
        // bilinear with pixel centres aligned, then optionally sharpened.
        let person = |x: usize, y: usize| -> f32 {
            let mx = (x as f32 + 0.5) * mw as f32 / w as f32 - 0.5;
            let my = (y as f32 + 0.5) * mh as f32 / h as f32 - 0.5;
            let [v] = bilinear(mx, my, mw, mh, |x, y| [mask[y * mw + x]]);
            let v = v.clamp(0.0, 1.0);
            match (edge, hi > lo) {
                (false, _) => v,
                (true, true) => {
                    let t = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
                    t * t * (3.0 - 2.0 * t)
                }
                (true, false) => f32::from(u8::from(v >= lo)),
            }
        };
        out.par_chunks_mut(out_stride)
            .take(h)
            .enumerate()
            .for_each(|(y, out)| {
                let (pixels, padding) = out.split_at_mut(row);
                padding.fill(0);
                for (x, px) in pixels.chunks_exact_mut(4).enumerate() {
                    let (rgb, alpha) = match &o.effect {
                        Effect::None => (reader.rgb(x, y), 1.0),
                        Effect::Mask => ([person(x, y) * 255.0; 3], 1.0),
                        Effect::Blur { .. } => {
                            let fg = rgb[y * w + x];
                            (mix_n(blurred_at(x, y), fg, person(x, y)), 1.0)
                        }
                        Effect::Replace(Background::Color(c)) => {
                            let t = person(x, y);
                            let bg = [c[0], c[1], c[2]].map(f32::from);
                            let bg_a = f32::from(c[3]) / 255.0;
                            (mix_n(bg, reader.rgb(x, y), t), mix(bg_a, 1.0, t))
                        }
                        Effect::Replace(Background::Image(img)) => {
                            let (bw, bh) = (img.width as usize, img.height as usize);
                            let bx = (x as f32 + 0.5) * bw as f32 / w as f32 - 0.5;
                            let by = (y as f32 + 0.5) * bh as f32 / h as f32 - 0.5;
                            let bg = bilinear(bx, by, bw, bh, |x, y| img.rgb(x, y));
                            (mix_n(bg, reader.rgb(x, y), person(x, y)), 1.0)
                        }
                    };
                    px[..3].copy_from_slice(&rgb.map(to_u8));
                    px[3] = to_u8(alpha * 255.0);
                }
            });
        Ok(())
    }

    /// The frame into `rgb` and its separable Gaussian blur, at every
    /// `step`-th pixel each way (`blur_step`), into `blurred` (`blur.wgsl`
    /// run across, then down), summed in f32 and each pass's result
    /// rounded as the shader's Rgba16Float intermediates store it. Each
    /// sample adds its taps in the shader's order: phase p = 0..step, then
    /// taps p, p + step, ... of the phase.
    fn blur(&mut self, reader: &Reader, strength: f32) {
        let (w, h) = (reader.width(), reader.height());
        let weights = gaussian(strength);
        let radius = weights.len() / 2;
        let k = blur_step(strength) as usize;
        let (bw, bh) = (
            blur_samples(w as u32, k as u32),
            blur_samples(h as u32, k as u32),
        );
        let (bw, bh) = (bw as usize, bh as usize);
        let order: Vec<usize> = (0..k).flat_map(|p| (p..weights.len()).step_by(k)).collect();
        let total = order.iter().fold(0.0f32, |t, &i| t + weights[i]);
        self.rgb.resize(w * h, [0.0; 3]);
        self.across.resize(bw * h, [0.0; 3]);
        self.blurred.resize(bw * bh, [0.0; 3]);
        (self.blurred_w, self.blurred_h, self.step) = (bw, bh, k);
        self.rgb
            .par_chunks_mut(w)
            .enumerate()
            .for_each(|(y, row)| reader.row(y, row));
        // Flat f32 rows and tap-outer loops: each tap adds a shifted row in
        // one run over contiguous memory, which the compiler vectorises, and
        // each sample still sums its taps in the shader's order. Across,
        // the padded row is split by phase (pixel mod k) first, so that tap
        // p + k j of samples X = 0, 1, ... reads phase p's pixels X + j, a
        // contiguous run too.
        let (row, out_row) = (3 * w, 3 * bw);
        // Sample X's taps reach pixel k X + radius; a phase holds them all.
        let phase_len = bw + weights.len().div_ceil(k);
        let rgb: &[f32] = bytemuck::cast_slice(&self.rgb);
        let across: &mut [f32] = bytemuck::cast_slice_mut(&mut self.across);
        across
            .par_chunks_mut(out_row)
            .zip(rgb.par_chunks(row))
            .for_each_init(Vec::new, |phases, (out, src)| {
                // Pixel x - radius of the row, clamped to the edge as the
                // shader's reads are, at phases[p][n] for x = p + k n.
                phases.clear();
                for p in 0..k {
                    for n in 0..phase_len {
                        let x = (p + k * n).saturating_sub(radius).min(w - 1);
                        phases.extend_from_slice(&src[3 * x..3 * x + 3]);
                    }
                }
                out.fill(0.0);
                for &tap in &order {
                    let (p, j) = (tap % k, tap / k);
                    let phase = &phases[3 * (p * phase_len + j)..];
                    for (o, x) in out.iter_mut().zip(phase) {
                        *o += weights[tap] * x;
                    }
                }
                out.iter_mut().for_each(|o| *o = as_stored(*o / total));
            });
        let across: &[f32] = bytemuck::cast_slice(&self.across);
        let blurred: &mut [f32] = bytemuck::cast_slice_mut(&mut self.blurred);
        blurred
            .par_chunks_mut(out_row)
            .enumerate()
            .for_each(|(y, out)| {
                out.fill(0.0);
                for &tap in &order {
                    let src = &across[clamped(k * y, tap, radius, h) * out_row..][..out_row];
                    for (o, p) in out.iter_mut().zip(src) {
                        *o += weights[tap] * p;
                    }
                }
                out.iter_mut().for_each(|o| *o = as_stored(*o / total));
            });
    }
}
