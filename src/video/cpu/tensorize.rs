//! Frame -> model input tensor on the CPU: `tensorize.wgsl` (colour
//! conversion, resize of the frame or a region of it, normalisation) one
//! output row per rayon task.

use rayon::prelude::*;

use super::frame::{CpuFrame, Reader};
use super::mix_n;
use crate::error::{Error, Result};
use crate::video::tensorize::{check_options, SourceWindow};
use crate::video::{ChannelOrder, OutputDtype, Resize, Sampling, TensorLayout, TensorizeOptions};

/// Turns frames into tensors of one configuration.
#[derive(Clone, Debug)]
pub struct Tensorizer {
    options: TensorizeOptions,
}

impl Tensorizer {
    pub fn new(options: TensorizeOptions) -> Result<Tensorizer> {
        check_options(&options)?;
        Ok(Tensorizer { options })
    }

    pub fn options(&self) -> &TensorizeOptions {
        &self.options
    }

    /// Elements written: 1 * 3 * height * width.
    pub fn output_len(&self) -> usize {
        3 * self.options.width as usize * self.options.height as usize
    }

    /// Writes the tensor for `frame` into the first
    /// [`output_len`](Tensorizer::output_len) values of `dst`; the options'
    /// dtype must be f32.
    pub fn run(&self, frame: &CpuFrame, dst: &mut [f32]) -> Result<()> {
        self.dtype_is(OutputDtype::F32)?;
        let whole = SourceWindow::whole(frame.width(), frame.height());
        self.fill(frame, &whole, dst, |v| v)
    }

    /// [`Tensorizer::run`] for f16 options.
    pub fn run_f16(&self, frame: &CpuFrame, dst: &mut [half::f16]) -> Result<()> {
        self.dtype_is(OutputDtype::F16)?;
        let whole = SourceWindow::whole(frame.width(), frame.height());
        self.fill(frame, &whole, dst, half::f16::from_f32)
    }

    /// [`Tensorizer::run`] of the part `region` (x, y, w, h in frame pixels)
    /// of `frame` only, as the GPU tensorizer's `encode_region` does it: the
    /// region, clamped to the frame, is fitted to the tensor as a whole
    /// frame is, and bilinear taps stay inside the pixels it touches. A
    /// region with no area inside the frame is an error naming it.
    pub fn run_region(&self, frame: &CpuFrame, region: [f32; 4], dst: &mut [f32]) -> Result<()> {
        self.dtype_is(OutputDtype::F32)?;
        let window = SourceWindow::of_region(region, frame.width(), frame.height())?;
        self.fill(frame, &window, dst, |v| v)
    }

    /// [`Tensorizer::run_region`] for f16 options.
    pub fn run_region_f16(
        &self,
        frame: &CpuFrame,
        region: [f32; 4],
        dst: &mut [half::f16],
    ) -> Result<()> {
        self.dtype_is(OutputDtype::F16)?;
        let window = SourceWindow::of_region(region, frame.width(), frame.height())?;
        self.fill(frame, &window, dst, half::f16::from_f32)
    }

    fn dtype_is(&self, dtype: OutputDtype) -> Result<()> {
        if self.options.dtype == dtype {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "tensorize: the options ask for {:?} output, this call writes {dtype:?}",
            self.options.dtype
        )))
    }

    fn fill<T: Send>(
        &self,
        frame: &CpuFrame,
        window: &SourceWindow,
        dst: &mut [T],
        store: impl Fn(f32) -> T + Sync,
    ) -> Result<()> {
        let o = &self.options;
        let (w, h) = (o.width as usize, o.height as usize);
        let len = self.output_len();
        if dst.len() < len {
            let shape = match o.layout {
                TensorLayout::Nhwc => [1, h, w, 3],
                TensorLayout::Nchw => [1, 3, h, w],
            };
            return Err(Error::invalid(format!(
                "tensorize: the destination has {} values, the {shape:?} tensor needs {len}",
                dst.len()
            )));
        }
        let reader = frame.reader(o.color);
        let value = |x: usize, y: usize| -> [f32; 3] {
            let mut rgb = self.sample(&reader, window, x as f32 + 0.5, y as f32 + 0.5);
            if o.channels == ChannelOrder::Bgr {
                rgb.reverse();
            }
            let n = &o.normalize;
            std::array::from_fn(|c| rgb[c] * n.scale[c] + n.offset[c])
        };
        let dst = &mut dst[..len];
        match o.layout {
            TensorLayout::Nhwc => dst.par_chunks_mut(3 * w).enumerate().for_each(|(y, row)| {
                for (x, px) in row.chunks_exact_mut(3).enumerate() {
                    for (d, v) in px.iter_mut().zip(value(x, y)) {
                        *d = store(v);
                    }
                }
            }),
            TensorLayout::Nchw => {
                let (r, gb) = dst.split_at_mut(w * h);
                let (g, b) = gb.split_at_mut(w * h);
                r.par_chunks_mut(w)
                    .zip(g.par_chunks_mut(w))
                    .zip(b.par_chunks_mut(w))
                    .enumerate()
                    .for_each(|(y, ((r, g), b))| {
                        for x in 0..w {
                            let [vr, vg, vb] = value(x, y);
                            (r[x], g[x], b[x]) = (store(vr), store(vg), store(vb));
                        }
                    })
            }
        }
        Ok(())
    }

    /// The colour at output position (`ox`, `oy`) (pixel centres at half
    /// integers) of `window` of the frame: `sample` of `tensorize.wgsl`.
    fn sample(&self, reader: &Reader, window: &SourceWindow, ox: f32, oy: f32) -> [f32; 3] {
        let o = &self.options;
        let [x0, y0] = window.origin;
        let [sw, sh] = window.size;
        let (dw, dh) = (o.width as f32, o.height as f32);
        let at = |x: f32, y: f32| bilinear_within(x, y, window, |x, y| reader.rgb(x, y));
        // Source position of output position q at scale s: (q - k) * s -
        // (0.5 - k), half-pixel (k = 0) or asymmetric (k = 0.5).
        let k = match o.sampling {
            Sampling::HalfPixel => 0.0,
            Sampling::Asymmetric => 0.5,
        };
        let map = |q: f32, s: f32| (q - k) * s - (0.5 - k);
        match o.resize {
            Resize::Stretch => at(x0 + map(ox, sw / dw), y0 + map(oy, sh / dh)),
            Resize::Letterbox { pad } => {
                // Pixels whose centre falls outside the scaled source are
                // padding.
                let s = (sw / dw).max(sh / dh);
                let (cw, ch) = (sw / s, sh / s);
                let (qx, qy) = (ox - (dw - cw) * 0.5, oy - (dh - ch) * 0.5);
                if qx < 0.0 || qy < 0.0 || qx >= cw || qy >= ch {
                    pad.map(f32::from)
                } else {
                    at(x0 + map(qx, s), y0 + map(qy, s))
                }
            }
            Resize::CenterCrop => {
                let s = (sw / dw).min(sh / dh);
                let (sx, sy) = (x0 + (sw - dw * s) * 0.5, y0 + (sh - dh * s) * 0.5);
                at(sx + map(ox, s), sy + map(oy, s))
            }
        }
    }
}

/// Bilinear sample at continuous pixel coordinate (`x`, `y`) (pixel centres
/// at integers), clamped to the pixels `window` touches: the shader's
/// `bilinear`, step for step in f32.
#[inline]
fn bilinear_within(
    x: f32,
    y: f32,
    window: &SourceWindow,
    at: impl Fn(usize, usize) -> [f32; 3],
) -> [f32; 3] {
    // `SourceWindow` keeps first <= last, both inside the frame.
    let (first, last) = (window.first.map(|v| v as f32), window.last);
    let x = x.clamp(first[0], last[0] as f32);
    let y = y.clamp(first[1], last[1] as f32);
    let (px, py) = (x.floor(), y.floor());
    let (x0, y0) = (px as usize, py as usize);
    let x1 = (x0 + 1).min(last[0] as usize);
    let y1 = (y0 + 1).min(last[1] as usize);
    let (fx, fy) = (x - px, y - py);
    let top = mix_n(at(x0, y0), at(x1, y0), fx);
    let bottom = mix_n(at(x0, y1), at(x1, y1), fx);
    mix_n(top, bottom, fy)
}
