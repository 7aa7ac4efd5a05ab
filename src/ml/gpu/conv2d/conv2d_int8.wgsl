// quantConv2d (ml/quant_conv.rs says the arithmetic): one invocation per
// output pixel and block of B output channels of one group. The input is
// quantized as it is loaded, four channels packed into a u32 (int8 bytes,
// pack4xI8), each packed word dotted with B filter words by dot4I8Packed
// and summed in i32, so an input value is loaded and quantized once per tap
// for B outputs. The specialisation declares the input binding x, the
// bias and output (fn bias(m), y), `const B`, `const INPUT_SUM` (a filter
// zero point is not 0, so Σ x is needed) and the table `wt` (int8.rs):
// the filter packed as [oc][kh][kw][words] words, four input channels a
// word (zero past the group's channels), then per output channel its scale
// (f32 bits), its zero-point correction (i32 bits) and filter zero point.
// The invocation index is the output pixel in (n, y, x) order and the
// block is workgroup z.

struct Params {
    // Element strides of the input and output, in (n, c, h, w) order.
    x_strides: vec4<u32>,
    y_strides: vec4<u32>,
    // (y, x) pairs.
    stride: vec2<u32>,
    dilation: vec2<u32>,
    // (top, left)
    padding: vec2<u32>,
    // (kh, kw)
    filter_size: vec2<u32>,
    h: u32,
    w: u32,
    oh: u32,
    ow: u32,
    // n * oh * ow.
    pixels: u32,
    icg: u32,
    ocg: u32,
    // Packed words per tap: icg / 4 rounded up.
    words: u32,
    // Output blocks of B channels per group.
    blocks: u32,
    // The input's quantization: x * inv_scale rounded, + zero, clamped to
    // [lo, hi], minus offset (128 for uint8) into int8.
    inv_scale: f32,
    zero: i32,
    lo: i32,
    hi: i32,
    offset: i32,
    // Where the table's per-channel arrays start.
    scales_at: u32,
    corrections_at: u32,
    zeros_at: u32,
}

fn quantize(v: f32) -> i32 {
    let q = round(v * params.inv_scale) + f32(params.zero);
    return i32(clamp(q, f32(params.lo), f32(params.hi))) - params.offset;
}

// Input channels c0..c0+3 of the group at element offset o of channel c0,
// quantized and packed; channels past the group's are 0.
fn load_word(o: u32, c0: u32) -> u32 {
    let s = params.x_strides.y;
    var q = vec4<i32>(0);
    for (var j = 0u; j < 4u; j++) {
        if c0 + j < params.icg {
            q[j] = quantize(f32(x[o + j * s]));
        }
    }
    return pack4xI8(q);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let p = flat_id(gid, nwg);
    if p >= params.pixels {
        return;
    }
    let ow = params.ow;
    let oh = params.oh;
    let ox = p % ow;
    let oy = (p / ow) % oh;
    let n = p / (ow * oh);
    let g = gid.z / params.blocks;
    let first = (gid.z % params.blocks) * B;
    let oc0 = g * params.ocg + first;
    // Lanes past the group's last channel read its filter and are not
    // written.
    let last = g * params.ocg + params.ocg - 1u;
    let h = i32(params.h);
    let w = i32(params.w);
    let kh = params.filter_size.x;
    let kw = params.filter_size.y;
    let words = params.words;
    let xs = params.x_strides;
    let zx = params.zero - params.offset;
    // A padded pixel holds the zero point in every channel of the group.
    let zx_byte = u32(zx) & 0xffu;
    var acc: array<i32, B>;
    var xsum = 0;
    let base = n * xs.x + g * params.icg * xs.y;
    for (var ky = 0u; ky < kh; ky++) {
        let iy = i32(oy * params.stride.x + ky * params.dilation.x) - i32(params.padding.x);
        for (var kx = 0u; kx < kw; kx++) {
            let ix = i32(ox * params.stride.y + kx * params.dilation.y) - i32(params.padding.y);
            let inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
            let at = base + u32(max(iy, 0)) * xs.z + u32(max(ix, 0)) * xs.w;
            let tap = ky * kw + kx;
            for (var k = 0u; k < words; k++) {
                let c0 = 4u * k;
                var v: u32;
                if inside {
                    v = load_word(at + c0 * xs.y, c0);
                } else {
                    let real = min(params.icg - c0, 4u);
                    v = (zx_byte * 0x01010101u) & (0xffffffffu >> (32u - 8u * real));
                }
                if INPUT_SUM {
                    xsum += dot4I8Packed(v, 0x01010101u);
                }
                for (var j = 0u; j < B; j++) {
                    let m = min(oc0 + j, last);
                    acc[j] += dot4I8Packed(v, wt[(m * kh * kw + tap) * words + k]);
                }
            }
        }
    }
    let ys = params.y_strides;
    let out = n * ys.x + oy * ys.z + ox * ys.w;
    for (var j = 0u; j < B; j++) {
        let m = oc0 + j;
        if first + j >= params.ocg {
            break;
        }
        let zw = bitcast<i32>(wt[params.zeros_at + m]);
        let total = acc[j] + bitcast<i32>(wt[params.corrections_at + m]) - zw * xsum;
        let v = f32(total) * bitcast<f32>(wt[params.scales_at + m]) + bias(m);
        y[out + m * ys.y] = T(act(v));
    }
}
