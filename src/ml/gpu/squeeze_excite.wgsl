// A fused squeeze-and-excitation node: one workgroup per image averages each
// channel over the image, then applies the one or two fully connected layers
// (1x1 convolutions) to the means held in workgroup memory. Params:
// squeeze_excite.rs. The lowering generates the layers' bindings after x
// (`fn weight0(at)`, `bias0(o)`, `weight1(at)`, `bias1(o)`: 0 where absent),
// the output `y` after them, `act_hidden` (the first layer's activations
// when there are two), `TWO_LAYERS` and `MAX_CHANNELS`.

struct Params {
    // Pixels per image, and the input's channels.
    hw: u32,
    c: u32,
    // Element strides of a pixel and of a channel within an image.
    pixel_stride: u32,
    channel_stride: u32,
    // Channels averaged per pass (a power of two dividing WG), and the
    // pixel lanes each of them is split over (WG / cw).
    cw: u32,
    lanes: u32,
    // 1 where the input is NHWC: a pass's invocations then take channels
    // first, so that neighbours read neighbouring addresses.
    nhwc: u32,
    inv_hw: f32,
    images: u32,
    // Per layer: output channels, input channels, and the filter's element
    // strides of an output and of an input channel.
    layer0: vec4<u32>,
    layer1: vec4<u32>,
}

@group(0) @binding(1) var<storage, read> x: array<TI>;

var<workgroup> part: array<f32, WG>;
var<workgroup> means: array<f32, MAX_CHANNELS>;
var<workgroup> hidden: array<f32, MAX_CHANNELS>;

fn load(at: u32) -> f32 {
    return f32(x[at]);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    // The grid is folded past 65535 images; the whole workgroup leaves at once.
    let n = wid.x + wid.y * nwg.x;
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
    for (var c0 = 0u; c0 < c; c0 += cw) {
        let ch = c0 + cl;
        // Eight independent sums keep eight loads in flight per invocation:
        // one workgroup reads the whole image, so it is latency that bounds it.
        var s = vec4<f32>(0.0);
        var t = vec4<f32>(0.0);
        if ch < c {
            let at = base + ch * params.channel_stride;
            let l = lanes * ps;
            var a = at + r * ps;
            let end = at + hw * ps;
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
            var sum = 0.0;
            for (var q = 0u; q < lanes; q++) {
                sum += part[select(lid * lanes + q, q * cw + lid, params.nhwc != 0u)];
            }
            means[c0 + lid] = sum * params.inv_hw;
        }
        workgroupBarrier();
    }

    let l0 = params.layer0;
    for (var o = lid; o < l0.x; o += WG) {
        var acc = bias0(o);
        for (var i = 0u; i < l0.y; i++) {
            acc += weight0(o * l0.z + i * l0.w) * means[i];
        }
        if TWO_LAYERS {
            hidden[o] = act_hidden(acc);
        } else {
            y[n * l0.x + o] = T(act(acc));
        }
    }
    if TWO_LAYERS {
        workgroupBarrier();
        let l1 = params.layer1;
        for (var o = lid; o < l1.x; o += WG) {
            var acc = bias1(o);
            for (var i = 0u; i < l1.y; i++) {
                acc += weight1(o * l1.z + i * l1.w) * hidden[i];
            }
            y[n * l1.x + o] = T(act(acc));
        }
    }
}
