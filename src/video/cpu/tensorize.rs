//! Frame -> model input tensor on the CPU: `tensorize.wgsl` (colour
//! conversion, resize, normalisation) one output row per rayon task.

use rayon::prelude::*;

use super::bilinear;
use super::frame::{CpuFrame, Reader};
use crate::error::{Error, Result};
use crate::video::tensorize::check_options;
use crate::video::{ChannelOrder, OutputDtype, Resize, TensorLayout, TensorizeOptions};

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
        self.fill(frame, dst, |v| v)
    }

    /// [`Tensorizer::run`] for f16 options.
    pub fn run_f16(&self, frame: &CpuFrame, dst: &mut [half::f16]) -> Result<()> {
        self.dtype_is(OutputDtype::F16)?;
        self.fill(frame, dst, half::f16::from_f32)
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
            let mut rgb = self.sample(&reader, x as f32 + 0.5, y as f32 + 0.5);
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

    /// The frame's colour at output position (`ox`, `y`) (pixel centres at
    /// half integers): `sample` of `tensorize.wgsl`.
    fn sample(&self, reader: &Reader, ox: f32, oy: f32) -> [f32; 3] {
        let o = &self.options;
        let (fw, fh) = (reader.width(), reader.height());
        let (sw, sh) = (fw as f32, fh as f32);
        let (dw, dh) = (o.width as f32, o.height as f32);
        let at = |x: f32, y: f32| bilinear(x, y, fw, fh, |x, y| reader.rgb(x, y));
        match o.resize {
            Resize::Stretch => at(ox * (sw / dw) - 0.5, oy * (sh / dh) - 0.5),
            Resize::Letterbox { pad } => {
                // Pixels whose centre falls outside the scaled frame are padding.
                let s = (sw / dw).max(sh / dh);
                let (cw, ch) = (sw / s, sh / s);
                let (qx, qy) = (ox - (dw - cw) * 0.5, oy - (dh - ch) * 0.5);
                if qx < 0.0 || qy < 0.0 || qx >= cw || qy >= ch {
                    pad.map(f32::from)
                } else {
                    at(qx * s - 0.5, qy * s - 0.5)
                }
            }
            Resize::CenterCrop => {
                let s = (sw / dw).min(sh / dh);
                let (x0, y0) = ((sw - dw * s) * 0.5, (sh - dh * s) * 0.5);
                at(x0 + ox * s - 0.5, y0 + oy * s - 0.5)
            }
        }
    }
}
