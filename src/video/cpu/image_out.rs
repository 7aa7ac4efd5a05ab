//! Model output image -> RGBA rows on the CPU: `image_out.wgsl` (clamped,
//! opaque, bicubic when the region is larger than the tensor), one output
//! row per rayon task.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::video::ImageRegion;

/// Weights of the taps at -1, 0, 1, 2 for a sample `t` in [0, 1) past tap 0:
/// Keys' cubic with a = -0.5, written as the shader writes it.
fn cubic(t: f32) -> [f32; 4] {
    let a = -0.5f32;
    let t2 = t * t;
    let t3 = t2 * t;
    [
        a * t3 - 2.0 * a * t2 + a * t,
        (a + 2.0) * t3 - (a + 3.0) * t2 + 1.0,
        -(a + 2.0) * t3 + (2.0 * a + 3.0) * t2 - a * t,
        -a * t3 + a * t2,
    ]
}

/// 0..255 -> the byte an `rgba8unorm` store of value / 255 keeps (NaN: 0).
#[inline]
fn to_u8(v: f32) -> u8 {
    ((v / 255.0).clamp(0.0, 1.0) * 255.0).round() as u8
}

/// Writes `src`, `size.1` rows of `size.0` RGB f32 values (an NHWC
/// [1, H, W, 3] image, nominally 0..255), into `region` of the RGBA rows in
/// `out` (`out_stride` bytes apart), resampled bicubically when the region
/// is larger. Bytes outside the region are left as they are.
pub fn write_image(
    src: &[f32],
    size: (u32, u32),
    out: &mut [u8],
    out_stride: usize,
    region: ImageRegion,
) -> Result<()> {
    let (w, h) = (size.0 as usize, size.1 as usize);
    let (x0, rw, rh) = (
        region.x0 as usize,
        region.width as usize,
        region.height as usize,
    );
    if w == 0 || h == 0 || rw == 0 || rh == 0 {
        return Err(Error::invalid(format!(
            "image out: empty tensor ({w}x{h}) or region ({rw}x{rh})"
        )));
    }
    if src.len() < 3 * w * h {
        return Err(Error::invalid(format!(
            "image out: a [1, {h}, {w}, 3] tensor needs {} values, the source has {}",
            3 * w * h,
            src.len()
        )));
    }
    let row_end = 4 * (x0 + rw);
    let needed = (rh - 1)
        .checked_mul(out_stride)
        .and_then(|n| n.checked_add(row_end));
    if out_stride < row_end || needed.is_none_or(|n| out.len() < n) {
        return Err(Error::invalid(format!(
            "image out: region {region:?} does not fit in {} bytes of rows {out_stride} apart",
            out.len()
        )));
    }
    let texel = |x: i64, y: i64| -> [f32; 3] {
        let cx = x.clamp(0, w as i64 - 1) as usize;
        let cy = y.clamp(0, h as i64 - 1) as usize;
        let i = (cy * w + cx) * 3;
        [src[i], src[i + 1], src[i + 2]]
    };
    let same = (w, h) == (rw, rh);
    let sample = |x: usize, y: usize| -> [f32; 3] {
        if same {
            return texel(x as i64, y as i64);
        }
        let sx = (x as f32 + 0.5) * w as f32 / rw as f32 - 0.5;
        let sy = (y as f32 + 0.5) * h as f32 / rh as f32 - 0.5;
        let (fx, fy) = (sx.floor(), sy.floor());
        let (wx, wy) = (cubic(sx - fx), cubic(sy - fy));
        let (bx, by) = (fx as i64 - 1, fy as i64 - 1);
        let mut rgb = [0.0f32; 3];
        for (j, wj) in wy.iter().enumerate() {
            let y = by + j as i64;
            let taps = [0, 1, 2, 3].map(|i| texel(bx + i, y));
            for (c, v) in rgb.iter_mut().enumerate() {
                let row = taps[0][c] * wx[0]
                    + taps[1][c] * wx[1]
                    + taps[2][c] * wx[2]
                    + taps[3][c] * wx[3];
                *v += row * wj;
            }
        }
        rgb
    };
    out.par_chunks_mut(out_stride)
        .take(rh)
        .enumerate()
        .for_each(|(y, row)| {
            for (x, px) in row[4 * x0..row_end].chunks_exact_mut(4).enumerate() {
                let [r, g, b] = sample(x, y);
                px.copy_from_slice(&[to_u8(r), to_u8(g), to_u8(b), 255]);
            }
        });
    Ok(())
}
