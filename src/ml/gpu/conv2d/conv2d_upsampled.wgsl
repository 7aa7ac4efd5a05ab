// conv2d (stride and dilation 1, one group of up to 8 outputs) reading its
// input through a fused nearest upsample by SY x SX (conv2d_upsampled.rs
// says when it is chosen): ESRGAN's last conv, 3x3 12 -> 3 on its 12
// channels at 960x540 upsampled to 1920x1080.
//
// Output row oy = SY Y + a reads upsampled rows oy + ky - pt, that is input
// rows floor((a + ky - pt) / SY) + Y: for a given phase a the kh taps fall
// on a few input rows (2 for SY = 2, kh = 3), and the taps that fall on the
// same input row multiply the same values. The table holds, per output
// phase (a, b), those taps' weights summed at build, so each phase is a
// small convolution of the input itself (2x2 for ESRGAN: 4 taps for 9).
// One invocation computes the SY x SX output pixels of input pixel (Y, X),
// all phases from one FH x FW window of the input: each input vec4 is
// loaded once per invocation for the SY SX pixels it serves.
//
// conv2d_upsampled.rs generates what depends on the phases, with every
// index a constant, so that the window and the sums stay in registers (a
// loop over a phase's taps indexes them by values the compiler may not
// resolve, which puts them in memory): `fn window(q: Pixel, c4, s)`, the
// window's FH x FW vec4s of channels 4 c4 .. + 3, `fn accumulate(t, u,
// acc)`, every (phase, window pixel) pair's products, and `fn
// write(q, acc)`, every phase's outputs. ACC: the sums, SY SX OCG4 vec4s;
// PAIRS: the (phase, window pixel) pairs whose taps exist.
//
// Params: conv2d_params.wgsl (h, w: the upsampled extent; oh, ow: the
// output's). The specialisation declares x as vec4s (NHWC, channels in runs
// of 4), `fn in_scale(c)`, `fn bias(m)`, `fn residual(i)`, y and the table
// `wt`: for channel run c4, pair k and channel r of the run, OCG4 vec4s of
// output channels at ((c4 PAIRS + k) 4 + r) OCG4.

// An input pixel of the grid that covers the output, and the input's
// extent before the upsample.
struct Pixel {
    n: u32,
    y: i32,
    x: i32,
    ih: i32,
    iw: i32,
}

// Input channels 4 c4 .. + 3 at (y + dy, x + dx) of q, scaled by `s`;
// zero past the image.
fn load(q: Pixel, dy: i32, dx: i32, c4: u32, s: vec4<f32>) -> vec4<f32> {
    let iy = q.y + dy;
    let ix = q.x + dx;
    let xs = params.x_strides / 4u;
    let inside = iy >= 0 && iy < q.ih && ix >= 0 && ix < q.iw;
    let at = q.n * xs.x + u32(max(iy, 0)) * xs.z + u32(max(ix, 0)) * xs.w + c4;
    return select(vec4<f32>(0.0), vec4<f32>(x[at]) * s, inside);
}

// The products of input vec4 v with table entry t (4 rows of OCG4 vec4s),
// output vec4 j.
fn mv(v: vec4<f32>, t: u32, j: u32) -> vec4<f32> {
    return v.x * wt[t + j] + v.y * wt[t + OCG4 + j] + v.z * wt[t + 2u * OCG4 + j]
        + v.w * wt[t + 3u * OCG4 + j];
}

// Output channel m of phase (a, b) at q.
fn store(q: Pixel, a: u32, b: u32, m: u32, v: f32) {
    let oy = u32(q.y) * SY + a;
    let ox = u32(q.x) * SX + b;
    if oy < params.oh && ox < params.ow {
        let i = ((q.n * params.oh + oy) * params.ow + ox) * params.oc + m;
        y[i] = T(finish(v + bias(m), residual(i)));
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_id(gid, nwg);
    let gh = (params.oh + SY - 1u) / SY;
    let gw = (params.ow + SX - 1u) / SX;
    let images = params.pixels / params.ohw;
    if i >= images * gh * gw {
        return;
    }
    let q = Pixel(i / (gw * gh), i32((i / gw) % gh), i32(i % gw), i32(params.h / SY),
        i32(params.w / SX));
    var acc: array<vec4<f32>, ACC>;
    for (var c4 = 0u; c4 < params.icg / 4u; c4++) {
        let c = 4u * c4;
        let s = vec4<f32>(in_scale(c), in_scale(c + 1u), in_scale(c + 2u), in_scale(c + 3u));
        accumulate(c4 * PAIRS * 4u * OCG4, window(q, c4, s), &acc);
    }
    write(q, acc);
}
