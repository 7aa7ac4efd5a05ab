// The loaders of the 128-pixel implicit-GEMM kernels (conv2d_gemm_wide.wgsl,
// conv2d_coop.wgsl): each invocation fetches runs of four reduction rows of
// one pixel (A) and of one output channel (B), carrying ci -> kx -> ky along
// the run rather than dividing per element. Needs `x`, `filt`, `in_scale`.

// A position in the reduction: input channel, filter column and row.
struct Tap {
    ci: u32,
    kx: u32,
    ky: u32,
}

fn tap_of(k: u32, icg: u32, kw: u32) -> Tap {
    let kk = k / icg;
    return Tap(k % icg, kk % kw, kk / kw);
}

fn next_tap(t: Tap, icg: u32, kw: u32) -> Tap {
    var n = Tap(t.ci + 1u, t.kx, t.ky);
    if n.ci == icg {
        n.ci = 0u;
        n.kx += 1u;
        if n.kx == kw {
            n.kx = 0u;
            n.ky += 1u;
        }
    }
    return n;
}

// The loaders' fixed coordinates (see main).
var<private> iy0: i32;
var<private> ix0: i32;
var<private> xbase: u32;
var<private> p_ok: bool;
var<private> fbase: u32;
var<private> m_ok: bool;
// The group's first input channel.
var<private> c0: u32;

// Where output pixel p's window starts in x: (iy, ix, offset of its image
// and group), the offset u32 max past the last pixel.
struct Origin {
    iy: i32,
    ix: i32,
    base: u32,
}

fn origin(p: u32) -> Origin {
    let ohw = params[2];
    let ow = params[3];
    let r = p % ohw;
    let iy = i32((r / ow) * params[10]) - i32(params[14]);
    let ix = i32((r % ow) * params[11]) - i32(params[15]);
    let base = select(0xffffffffu, (p / ohw) * params[17] + c0 * params[18], p < params[0]);
    return Origin(iy, ix, base);
}

// Sets the loaders' coordinates: output pixel `p` for x, channel `mm` of
// group `g` for the filter.
fn set_loaders(p: u32, g: u32, mm: u32) {
    c0 = g * params[7];
    let o = origin(p);
    iy0 = o.iy;
    ix0 = o.ix;
    xbase = o.base;
    p_ok = o.base != 0xffffffffu;
    m_ok = mm < params[16];
    fbase = (g * params[16] + mm) * params[21];
}

// x at reduction rows k .. k + 3 of this invocation's pixel (0 outside
// the input or past the reduction).
fn load_a4(k: u32) -> vec4<f32> {
    let kdim = params[25];
    let icg = params[7];
    let kw = params[9];
    let h = i32(params[5]);
    let w = i32(params[6]);
    let dh = i32(params[12]);
    let dw = i32(params[13]);
    let xs = vec4<u32>(params[17], params[18], params[19], params[20]);
    var v = vec4<f32>(0.0);
    var t = tap_of(min(k, kdim), icg, kw);
    for (var q = 0u; q < 4u; q++) {
        let iy = iy0 + i32(t.ky) * dh;
        let ix = ix0 + i32(t.kx) * dw;
        if k + q < kdim && p_ok && iy >= 0 && iy < h && ix >= 0 && ix < w {
            v[q] = f32(x[xbase + u32(iy) * xs.z + u32(ix) * xs.w + t.ci * xs.y])
                * in_scale(c0 + t.ci);
        }
        t = next_tap(t, icg, kw);
    }
    return v;
}

// The filter at reduction rows k .. k + 3 of this invocation's channel.
fn load_b4(k: u32) -> vec4<f32> {
    let kdim = params[25];
    let icg = params[7];
    let kw = params[9];
    let fs = vec4<u32>(params[21], params[22], params[23], params[24]);
    var v = vec4<f32>(0.0);
    var t = tap_of(min(k, kdim), icg, kw);
    for (var q = 0u; q < 4u; q++) {
        if m_ok && k + q < kdim {
            v[q] = f32(filt[fbase + t.ci * fs.y + t.ky * fs.z + t.kx * fs.w]);
        }
        t = next_tap(t, icg, kw);
    }
    return v;
}

