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
    let ohw = params.ohw;
    let ow = params.ow;
    let r = p % ohw;
    let iy = i32((r / ow) * params.stride.x) - i32(params.padding.x);
    let ix = i32((r % ow) * params.stride.y) - i32(params.padding.y);
    let base = select(
        0xffffffffu,
        (p / ohw) * params.x_strides.x + c0 * params.x_strides.y,
        p < params.pixels,
    );
    return Origin(iy, ix, base);
}

// Sets the loaders' coordinates: output pixel `p` for x, channel `mm` of
// group `g` for the filter.
fn set_loaders(p: u32, g: u32, mm: u32) {
    c0 = g * params.icg;
    let o = origin(p);
    iy0 = o.iy;
    ix0 = o.ix;
    xbase = o.base;
    p_ok = o.base != 0xffffffffu;
    m_ok = mm < params.ocg;
    fbase = (g * params.ocg + mm) * params.f_strides.x;
}

// x at reduction rows k .. k + 3 of this invocation's pixel (0 outside
// the input or past the reduction).
fn load_a4(k: u32) -> vec4<f32> {
    let kdim = params.kdim;
    let icg = params.icg;
    let kw = params.filter_size.y;
    let h = i32(params.h);
    let w = i32(params.w);
    let dh = i32(params.dilation.x);
    let dw = i32(params.dilation.y);
    let xs = params.x_strides;
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
    let kdim = params.kdim;
    let icg = params.icg;
    let kw = params.filter_size.y;
    let fs = params.f_strides;
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

