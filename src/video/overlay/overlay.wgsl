// Frame + draw list -> RGBA with boxes, labels and keypoints drawn, in one
// pass. Prepended (overlay/mod.rs): a frame reader (group 0). The draw list
// is a storage buffer of quads in painting order: solid rectangles (box
// edges, label backgrounds), glyphs (coverage from the R8 glyph atlas) and
// discs (keypoints). No switches besides the reader: the list and its
// length are values, so any number of items compiles nothing new.
//
// Each 16x16 workgroup is a tile of the output. Quads are taken 256 at a
// time into workgroup memory, each invocation testing one against the tile
// and setting its bit in `hits`; then every pixel paints the quads whose bit
// is set, lowest first, so painting order is the list's order and a pixel
// only looks at quads that touch its tile.

struct Quad {
    // Pixels covered: those whose centre is in [x0, x1) x [y0, y1), frame
    // pixels. Whole numbers for rectangles and glyphs; a disc's bounding
    // square.
    bounds: vec4<f32>,
    // Glyph: the atlas texel under the quad's top-left pixel (x, y).
    // Disc: centre x, y (frame pixels) and radius.
    extra: vec4<f32>,
    // RGBA8, red in the low byte (unpack4x8unorm's order).
    color: u32,
    kind: u32,
    _pad0: u32,
    _pad1: u32,
}

struct DrawList {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    quads: array<Quad>,
}

const KIND_FILL: u32 = 0u;
const KIND_GLYPH: u32 = 1u;
const KIND_DISC: u32 = 2u;

const TILE: u32 = 16u;
const CHUNK: u32 = 256u;

@group(1) @binding(0) var out: texture_storage_2d<rgba8unorm, write>;
@group(1) @binding(1) var<storage, read> list: DrawList;
@group(1) @binding(2) var atlas: texture_2d<f32>;

var<workgroup> chunk: array<Quad, CHUNK>;
var<workgroup> hits: array<atomic<u32>, 8>;

// How much of quad `q` covers pixel `p`, 0..1.
fn coverage(q: Quad, p: vec2<i32>) -> f32 {
    let c = vec2<f32>(p) + 0.5;
    if c.x < q.bounds.x || c.y < q.bounds.y || c.x >= q.bounds.z || c.y >= q.bounds.w {
        return 0.0;
    }
    switch q.kind {
        case KIND_GLYPH: {
            let t = vec2<i32>(q.extra.xy) + p - vec2<i32>(q.bounds.xy);
            return textureLoad(atlas, t, 0).r;
        }
        case KIND_DISC: {
            // Antialiased edge one pixel wide, centred on the radius.
            return clamp(q.extra.z + 0.5 - distance(c, q.extra.xy), 0.0, 1.0);
        }
        default: {
            return 1.0;
        }
    }
}

@compute @workgroup_size(16, 16)
fn main(
    @builtin(global_invocation_id) id: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
) {
    let size = frame_size();
    let p = vec2<i32>(id.xy);
    let inside = p.x < size.x && p.y < size.y;
    var rgb = vec3<f32>(0.0);
    if inside {
        rgb = frame_rgb(p) / 255.0;
    }
    let t0 = vec2<f32>(wg.xy * TILE);
    let t1 = t0 + f32(TILE);
    // A read-only storage value: uniform across the workgroup, so the
    // barriers below stay in uniform control flow.
    let count = list.count;
    let chunks = (count + CHUNK - 1u) / CHUNK;
    for (var c = 0u; c < chunks; c++) {
        if li < 8u {
            atomicStore(&hits[li], 0u);
        }
        workgroupBarrier();
        let i = c * CHUNK + li;
        if i < count {
            let q = list.quads[i];
            chunk[li] = q;
            if q.bounds.x < t1.x && q.bounds.z > t0.x && q.bounds.y < t1.y && q.bounds.w > t0.y {
                atomicOr(&hits[li / 32u], 1u << (li % 32u));
            }
        }
        workgroupBarrier();
        if inside {
            for (var w = 0u; w < 8u; w++) {
                var bits = atomicLoad(&hits[w]);
                while bits != 0u {
                    let b = firstTrailingBit(bits);
                    bits &= bits - 1u;
                    let q = chunk[w * 32u + b];
                    let color = unpack4x8unorm(q.color);
                    let a = coverage(q, p) * color.a;
                    if a > 0.0 {
                        rgb = mix(rgb, color.rgb, a);
                    }
                }
            }
        }
        // The next chunk overwrites `chunk` and `hits`.
        workgroupBarrier();
    }
    if inside {
        textureStore(out, p, vec4<f32>(rgb, 1.0));
    }
}
