//! ByteTrack's (and SORT's) motion model: a Kalman filter with constant
//! velocity on the box's centre, aspect ratio and height. The state is
//! (cx, cy, a, h) and their velocities per frame; the noise scales with the
//! box's height, as in ByteTrack's `kalman_filter.py`.

// Small fixed matrices, indexed as the formulas write them.
#![allow(clippy::needless_range_loop)]

use crate::tasks::Rect;

const STD_POSITION: f64 = 1.0 / 20.0;
const STD_VELOCITY: f64 = 1.0 / 160.0;

type Mat8 = [[f64; 8]; 8];
type Mat4 = [[f64; 4]; 4];

/// One box's motion estimate: its state mean and covariance.
#[derive(Clone, Debug)]
pub struct Kalman {
    mean: [f64; 8],
    cov: Mat8,
}

/// (cx, cy, a, h) of a box.
fn measure(r: &Rect) -> [f64; 4] {
    let (w, h) = (f64::from(r.w), f64::from(r.h).max(1e-6));
    [f64::from(r.x) + w / 2.0, f64::from(r.y) + h / 2.0, w / h, h]
}

fn diagonal<const N: usize>(std: [f64; N]) -> [[f64; N]; N] {
    let mut m = [[0.0; N]; N];
    for i in 0..N {
        m[i][i] = std[i] * std[i];
    }
    m
}

/// The inverse of a symmetric positive definite 4x4 matrix (Gauss-Jordan;
/// the projected covariance always is one: the measurement noise is added).
fn invert(m: &Mat4) -> Mat4 {
    let mut a = *m;
    let mut inv = diagonal([1.0; 4]);
    for col in 0..4 {
        let pivot = (col..4)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let p = a[col][col];
        let p = if p.abs() < 1e-12 { 1e-12 } else { p };
        for k in 0..4 {
            a[col][k] /= p;
            inv[col][k] /= p;
        }
        for row in 0..4 {
            if row != col {
                let f = a[row][col];
                for k in 0..4 {
                    a[row][k] -= f * a[col][k];
                    inv[row][k] -= f * inv[col][k];
                }
            }
        }
    }
    inv
}

impl Kalman {
    /// A new track at `rect`, standing still, uncertain of its velocity.
    pub fn new(rect: &Rect) -> Kalman {
        let z = measure(rect);
        let h = z[3];
        let (p, v) = (2.0 * STD_POSITION * h, 10.0 * STD_VELOCITY * h);
        Kalman {
            mean: [z[0], z[1], z[2], z[3], 0.0, 0.0, 0.0, 0.0],
            cov: diagonal([p, p, 1e-2, p, v, v, 1e-5, v]),
        }
    }

    /// The box of the current estimate.
    pub fn rect(&self) -> Rect {
        let [cx, cy, a, h, ..] = self.mean;
        let w = a * h;
        Rect::new(
            (cx - w / 2.0) as f32,
            (cy - h / 2.0) as f32,
            w as f32,
            h as f32,
        )
    }

    /// One frame later. A track that is not being seen stops growing or
    /// shrinking (ByteTrack zeroes its height velocity).
    pub fn predict(&mut self, seen: bool) {
        if !seen {
            self.mean[7] = 0.0;
        }
        let h = self.mean[3];
        let (p, v) = (STD_POSITION * h, STD_VELOCITY * h);
        for i in 0..4 {
            self.mean[i] += self.mean[i + 4];
        }
        // F P F^T with F = [[I, I], [0, I]].
        let c = self.cov;
        let mut next = c;
        for i in 0..8 {
            for j in 0..8 {
                let mut x = c[i][j];
                if i < 4 {
                    x += c[i + 4][j];
                }
                if j < 4 {
                    x += c[i][j + 4];
                }
                if i < 4 && j < 4 {
                    x += c[i + 4][j + 4];
                }
                next[i][j] = x;
            }
        }
        let q = [p, p, 1e-2, p, v, v, 1e-5, v];
        for i in 0..8 {
            next[i][i] += q[i] * q[i];
        }
        self.cov = next;
    }

    /// Corrects the estimate with the box `rect` seen now.
    pub fn update(&mut self, rect: &Rect) {
        let z = measure(rect);
        let h = self.mean[3];
        let r = [STD_POSITION * h, STD_POSITION * h, 1e-1, STD_POSITION * h];
        // S = H P H^T + R: the top-left 4x4 block of P.
        let mut s = [[0.0; 4]; 4];
        for i in 0..4 {
            for j in 0..4 {
                s[i][j] = self.cov[i][j];
            }
            s[i][i] += r[i] * r[i];
        }
        let s_inv = invert(&s);
        // K = P H^T S^-1: P's first 4 columns times S^-1.
        let mut k = [[0.0; 4]; 8];
        for i in 0..8 {
            for j in 0..4 {
                k[i][j] = (0..4).map(|l| self.cov[i][l] * s_inv[l][j]).sum();
            }
        }
        let innovation: Vec<f64> = (0..4).map(|i| z[i] - self.mean[i]).collect();
        for i in 0..8 {
            self.mean[i] += (0..4).map(|j| k[i][j] * innovation[j]).sum::<f64>();
        }
        // P -= K H P: K times P's first 4 rows.
        let c = self.cov;
        for i in 0..8 {
            for j in 0..8 {
                self.cov[i][j] -= (0..4).map(|l| k[i][l] * c[l][j]).sum::<f64>();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_moving_steadily_is_predicted_ahead() {
        let at = |t: f32| Rect::new(10.0 + 4.0 * t, 20.0 - 2.0 * t, 30.0, 60.0);
        let mut k = Kalman::new(&at(0.0));
        for t in 1..20 {
            k.predict(true);
            k.update(&at(t as f32));
        }
        k.predict(true);
        let p = k.rect();
        let want = at(20.0);
        assert!(
            (p.x - want.x).abs() < 0.5 && (p.y - want.y).abs() < 0.5,
            "{p:?}"
        );
        assert!(
            (p.w - 30.0).abs() < 0.5 && (p.h - 60.0).abs() < 0.5,
            "{p:?}"
        );
        // Unseen, it keeps going.
        for _ in 0..5 {
            k.predict(false);
        }
        let p = k.rect();
        assert!((p.x - at(25.0).x).abs() < 1.0, "{p:?}");
    }

    #[test]
    fn the_inverse_is_one() {
        let m = [
            [4.0, 1.0, 0.0, 0.5],
            [1.0, 3.0, 0.2, 0.0],
            [0.0, 0.2, 2.0, 0.1],
            [0.5, 0.0, 0.1, 1.0],
        ];
        let inv = invert(&m);
        for i in 0..4 {
            for j in 0..4 {
                let x: f64 = (0..4).map(|l| m[i][l] * inv[l][j]).sum();
                assert!((x - f64::from(u8::from(i == j))).abs() < 1e-9);
            }
        }
    }
}
