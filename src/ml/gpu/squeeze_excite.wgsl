// A fused squeeze-and-excitation node: the mean of each channel over the
// image, then the one or two fully connected layers (1x1 convolutions) on
// the means held in workgroup memory. Params: squeeze_excite.rs. The
// lowering generates the layers' bindings after x (`fn weight0(at)`,
// `bias0(o)`, `weight1(at)`, `bias1(o)`: 0 where absent), the output `y`
// and the `scratch` buffer after them, `act_hidden` (the first layer's
// activations when there are two), `TWO_LAYERS` and `MAX_CHANNELS`.
//
// An image is split into `chunks` runs of pixels, one workgroup each, so
// that many workgroups read it (one workgroup alone is bound by memory
// latency: 22 us for 128x128x16 on an H100). Each writes its channel sums
// to `scratch` and counts itself in; the last of an image to count in
// (whichever it is) adds the sums up and runs the layers. WGSL has no
// device-scope fence, so nothing orders another workgroup's sums before
// its count: each sum is an atomic word that reads EMPTY until written,
// and the last workgroup waits for each (every other workgroup has already
// issued its writes when it counts in, so the wait ends), then empties the
// words and zeroes the count for the next dispatch. scratch: one count per
// image, then per image `chunks` x `c` sums (f32 bits). With one chunk the
// sums stay in workgroup memory and scratch is not touched.

struct Params {
    // Pixels per image, and the input's channels.
    hw: u32,
    c: u32,
    // Element strides of a pixel and of a channel within an image.
    pixel_stride: u32,
    channel_stride: u32,
    // Channels summed per pass (a power of two dividing WG), and the
    // pixel lanes each of them is split over (WG / cw).
    cw: u32,
    lanes: u32,
    // 1 where the input is NHWC: a pass's invocations then take channels
    // first, so that neighbours read neighbouring addresses.
    nhwc: u32,
    inv_hw: f32,
    images: u32,
    // Workgroups per image, and the pixels each sums (the last fewer).
    chunks: u32,
    chunk: u32,
    // Per layer: output channels, input channels, and the filter's element
    // strides of an output and of an input channel.
    layer0: vec4<u32>,
    layer1: vec4<u32>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;

var<workgroup> part: array<f32, WG>;
var<workgroup> means: array<f32, MAX_CHANNELS>;
var<workgroup> hidden: array<f32, MAX_CHANNELS>;
var<workgroup> last: u32;

// A sum slot not written since it was last read: a NaN no sum is stored as
// (`settle` keeps written values below it).
const EMPTY: u32 = 0xffffffffu;

fn load(at: u32) -> f32 {
    return f32(x[at]);
}

// Sum slot `at`, read as `v`: waits until it has been written, then
// empties it for the next dispatch.
fn settle(at: u32, v: u32) -> f32 {
    var bits = v;
    while bits == EMPTY {
        bits = atomicLoad(&scratch[at]);
    }
    atomicStore(&scratch[at], EMPTY);
    return bitcast<f32>(bits);
}

// The channel sums of pass `c0` in `part` (`lanes` values per channel)
// added up: invocation `lid` < cw holds channel c0 + lid's total.
fn lane_total(lid: u32) -> f32 {
    var sum = 0.0;
    for (var q = 0u; q < params.lanes; q++) {
        sum += part[select(lid * params.lanes + q, q * params.cw + lid, params.nhwc != 0u)];
    }
    return sum;
}

// Invocations that share one output of layer `l` (outputs, inputs, ...):
// a power of two, as many as the workgroup has for each output, at most
// the inputs.
fn spread(l: vec4<u32>) -> u32 {
    let per_output = 1u << u32(firstLeadingBit(max(WG / max(l.x, 1u), 1u)));
    return min(per_output, 1u << u32(firstLeadingBit(max(l.y, 1u))));
}

// The sum of `v` over the `g` invocations lid - lid % g .. (g a power of
// two), valid at the first of them. Every invocation calls it (it holds
// barriers), with the same g.
fn group_sum(lid: u32, g: u32, v: f32) -> f32 {
    workgroupBarrier();
    part[lid] = v;
    for (var s = g / 2u; s > 0u; s /= 2u) {
        workgroupBarrier();
        if lid % g < s {
            part[lid] += part[lid + s];
        }
    }
    workgroupBarrier();
    return part[lid];
}

// Output o's weighted sum (before its bias) of layer k (0: the means in,
// 1: the hidden values in), split over the `g` invocations of its group;
// valid at the group's first. Every invocation calls it (barriers), with
// the same k and g; those past the layer's outputs add nothing.
fn dense(k: u32, l: vec4<u32>, g: u32, o: u32, lid: u32) -> f32 {
    var acc = 0.0;
    if o < l.x {
        for (var i = lid % g; i < l.y; i += g) {
            let at = o * l.z + i * l.w;
            if k == 0u {
                acc += weight0(at) * means[i];
            } else {
                acc += weight1(at) * hidden[i];
            }
        }
    }
    return group_sum(lid, g, acc);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    // The grid is folded past 65535 workgroups; a whole workgroup leaves at once.
    let chunks = params.chunks;
    let flat = wid.x + wid.y * nwg.x;
    let n = flat / chunks;
    let k = flat % chunks;
    if n >= params.images {
        return;
    }
    let c = params.c;
    let hw = params.hw;
    let cw = params.cw;
    let lanes = params.lanes;
    let ps = params.pixel_stride;
    var cl = lid % cw;
    var r = lid / cw;
    if params.nhwc == 0u {
        r = lid % lanes;
        cl = lid / lanes;
    }
    let base = n * c * hw;
    let p0 = k * params.chunk;
    let p1 = min(p0 + params.chunk, hw);
    let sums = params.images + n * chunks * c;
    for (var c0 = 0u; c0 < c; c0 += cw) {
        let ch = c0 + cl;
        // Eight independent sums keep eight loads in flight per invocation:
        // it is latency that bounds a workgroup reading its pixels.
        var s = vec4<f32>(0.0);
        var t = vec4<f32>(0.0);
        if ch < c {
            let at = base + ch * params.channel_stride;
            let l = lanes * ps;
            var a = at + (p0 + r) * ps;
            let end = at + p1 * ps;
            for (; a + 7u * l < end; a += 8u * l) {
                s += vec4<f32>(load(a), load(a + l), load(a + 2u * l), load(a + 3u * l));
                t += vec4<f32>(load(a + 4u * l), load(a + 5u * l), load(a + 6u * l),
                    load(a + 7u * l));
            }
            for (; a < end; a += l) {
                s.x += load(a);
            }
        }
        s += t;
        part[lid] = (s.x + s.y) + (s.z + s.w);
        workgroupBarrier();
        if lid < cw && c0 + lid < c {
            let sum = lane_total(lid);
            if chunks == 1u {
                means[c0 + lid] = sum * params.inv_hw;
            } else {
                atomicStore(&scratch[sums + k * c + c0 + lid], min(bitcast<u32>(sum), EMPTY - 1u));
            }
        }
        workgroupBarrier();
    }

    if chunks > 1u {
        if lid == 0u {
            last = u32(atomicAdd(&scratch[n], 1u) == chunks - 1u);
        }
        if workgroupUniformLoad(&last) == 0u {
            return;
        }
        // The last of the image: every chunk's sums, `lanes` invocations
        // per channel, four slots read before any is waited on.
        for (var c0 = 0u; c0 < c; c0 += cw) {
            let ch = c0 + cl;
            var s = 0.0;
            if ch < c {
                var q = r;
                let at = sums + ch;
                for (; q + 3u * lanes < chunks; q += 4u * lanes) {
                    let a = array<u32, 4>(at + q * c, at + (q + lanes) * c,
                        at + (q + 2u * lanes) * c, at + (q + 3u * lanes) * c);
                    let v0 = atomicLoad(&scratch[a[0]]);
                    let v1 = atomicLoad(&scratch[a[1]]);
                    let v2 = atomicLoad(&scratch[a[2]]);
                    let v3 = atomicLoad(&scratch[a[3]]);
                    s += (settle(a[0], v0) + settle(a[1], v1)) + (settle(a[2], v2) + settle(a[3], v3));
                }
                for (; q < chunks; q += lanes) {
                    s += settle(at + q * c, atomicLoad(&scratch[at + q * c]));
                }
            }
            part[lid] = s;
            workgroupBarrier();
            if lid < cw && c0 + lid < c {
                means[c0 + lid] = lane_total(lid) * params.inv_hw;
            }
            workgroupBarrier();
        }
        if lid == 0u {
            atomicStore(&scratch[n], 0u);
        }
    }
    workgroupBarrier();

    // The layers: output o's sum is split over `spread` neighbouring
    // invocations and added up in `part`, so that no invocation runs a long
    // chain of loads and multiply-adds. With one invocation an output,
    // selfie's 16x16x128 squeeze (128 -> 32 -> 128) took 0.017 ms on an
    // H200, mostly its layers; split, 0.013.
    let l0 = params.layer0;
    let g0 = spread(l0);
    for (var o0 = 0u; o0 < l0.x; o0 += WG / g0) {
        let o = o0 + lid / g0;
        let sum = dense(0u, l0, g0, o, lid);
        if o < l0.x && lid % g0 == 0u {
            if TWO_LAYERS {
                hidden[o] = act_hidden(sum + bias0(o));
            } else {
                y[n * l0.x + o] = T(act(sum + bias0(o)));
            }
        }
    }
    if TWO_LAYERS {
        workgroupBarrier();
        let l1 = params.layer1;
        let g1 = spread(l1);
        for (var o0 = 0u; o0 < l1.x; o0 += WG / g1) {
            let o = o0 + lid / g1;
            let sum = dense(1u, l1, g1, o, lid);
            if o < l1.x && lid % g1 == 0u {
                y[n * l1.x + o] = T(act(sum + bias1(o)));
            }
        }
    }
}
