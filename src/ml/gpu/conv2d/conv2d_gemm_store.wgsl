// The epilogue shared by the implicit-GEMM conv2d kernels: bias, residual
// and activations, then the write in the output's layout.

// Writes the sum `v` for output pixel `pp` (image n, position rr) and
// channel `mj` of group `g`; both must exist.
fn write_output(pp: u32, n: u32, rr: u32, mj: u32, g: u32, v: f32) {
    let oc = params.oc;
    let mo = g * params.ocg + mj;
    let at = select((n * oc + mo) * params.ohw + rr, pp * oc + mo, params.nhwc != 0u);
    y[at] = T(finish(v + bias(mo), residual(at)));
}

// Writes the sum `v` for output pixel `pp` and channel `mj` of group `g`,
// if both exist.
fn store_output(pp: u32, mj: u32, g: u32, v: f32) {
    if pp < params.pixels && mj < params.ocg {
        write_output(pp, pp / params.ohw, pp % params.ohw, mj, g, v);
    }
}

// Writes pixel `pp`'s channels m + step * j, j = 0..3, from a 4-wide block,
// dividing the pixel index once for the four.
fn store4(pp: u32, m: u32, step: u32, g: u32, v: vec4<f32>) {
    if pp >= params.pixels {
        return;
    }
    let n = pp / params.ohw;
    let rr = pp % params.ohw;
    for (var j = 0u; j < 4u; j++) {
        let mj = m + step * j;
        if mj < params.ocg {
            write_output(pp, n, rr, mj, g, v[j]);
        }
    }
}
