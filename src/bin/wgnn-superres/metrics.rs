//! Image quality against a reference, as super-resolution papers report it:
//! PSNR and SSIM on the luma (BT.601 Y) channel, with `shave` border pixels
//! left out (the border has no neighbours to upscale from).

/// BT.601 luma of an RGBA image, row-major.
pub fn luma(rgba: &[u8]) -> Vec<f64> {
    rgba.chunks_exact(4)
        .map(|p| 0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64)
        .collect()
}

fn shaved(y: &[f64], w: usize, h: usize, shave: usize) -> (Vec<f64>, usize, usize) {
    let (sw, sh) = (w - 2 * shave, h - 2 * shave);
    let mut out = Vec::with_capacity(sw * sh);
    for row in shave..h - shave {
        out.extend_from_slice(&y[row * w + shave..row * w + w - shave]);
    }
    (out, sw, sh)
}

/// PSNR in dB (peak 255); infinite for identical images.
pub fn psnr(a: &[f64], b: &[f64]) -> f64 {
    let mse = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / a.len() as f64;
    10.0 * (255.0f64 * 255.0 / mse).log10()
}

/// Mean SSIM (Wang et al. 2004): 11x11 Gaussian window, sigma 1.5, K1 0.01,
/// K2 0.03, L 255, over the positions where the window fits.
pub fn ssim(a: &[f64], b: &[f64], w: usize, h: usize) -> f64 {
    const R: usize = 5;
    let g: Vec<f64> = (0..=2 * R)
        .map(|i| (-((i as f64 - R as f64).powi(2)) / (2.0 * 1.5 * 1.5)).exp())
        .collect();
    let norm: f64 = g.iter().sum::<f64>().powi(2);
    let (c1, c2) = ((0.01f64 * 255.0).powi(2), (0.03f64 * 255.0).powi(2));
    let mut total = 0.0;
    let mut n = 0usize;
    for y in R..h.saturating_sub(R) {
        for x in R..w.saturating_sub(R) {
            let (mut ma, mut mb, mut saa, mut sbb, mut sab) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for j in 0..=2 * R {
                for i in 0..=2 * R {
                    let k = g[i] * g[j] / norm;
                    let idx = (y + j - R) * w + x + i - R;
                    let (va, vb) = (a[idx], b[idx]);
                    ma += k * va;
                    mb += k * vb;
                    saa += k * va * va;
                    sbb += k * vb * vb;
                    sab += k * va * vb;
                }
            }
            let (va, vb, cov) = (saa - ma * ma, sbb - mb * mb, sab - ma * mb);
            total += ((2.0 * ma * mb + c1) * (2.0 * cov + c2))
                / ((ma * ma + mb * mb + c1) * (va + vb + c2));
            n += 1;
        }
    }
    total / n.max(1) as f64
}

/// (PSNR, SSIM) of `got` against `reference`, both RGBA `w` x `h`.
pub fn compare(got: &[u8], reference: &[u8], w: usize, h: usize, shave: usize) -> (f64, f64) {
    let (a, sw, sh) = shaved(&luma(got), w, h, shave);
    let (b, _, _) = shaved(&luma(reference), w, h, shave);
    (psnr(&a, &b), ssim(&a, &b, sw, sh))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_images_are_perfect() {
        let img: Vec<u8> = (0..32 * 24 * 4).map(|i| (i * 7 % 251) as u8).collect();
        let (p, s) = compare(&img, &img, 32, 24, 2);
        assert!(p.is_infinite());
        assert!((s - 1.0).abs() < 1e-12);
    }

    #[test]
    fn known_psnr_and_worse_ssim_for_noise() {
        // Every luma value off by exactly 5: MSE 25, PSNR = 10 log10(255^2 / 25).
        let a = vec![100.0; 400];
        let b = vec![105.0; 400];
        assert!((psnr(&a, &b) - 34.1514).abs() < 1e-3);
        let ramp: Vec<f64> = (0..400).map(|i| (i % 20 * 12) as f64).collect();
        let noisy: Vec<f64> = ramp
            .iter()
            .enumerate()
            .map(|(i, v)| v + if i % 3 == 0 { 40.0 } else { -20.0 })
            .collect();
        let s = ssim(&ramp, &noisy, 20, 20);
        assert!(s < 0.9 && s > 0.0, "{s}");
    }
}
