// Frame + draw list -> RGBA with boxes, labels and keypoints drawn, in one
// pass. Prepended (overlay/mod.rs): a frame reader (group 0). The draw list
// is a storage buffer of quads in painting order: solid rectangles (box
// edges, label backgrounds), glyphs (coverage from the R8 glyph atlas),
// discs (keypoints), thick segments (rotated boxes, skeletons, analytics
// lines), polygons (zones) and masks (segmentation), each over the pixels
// of its bounds. Polygons' corners and masks' bits are in a second buffer,
// `shapes`. No switches besides the reader: the lists and their lengths
// are values, so any number of items compiles nothing new.
//
// Polygons are filled by the even-odd crossing test per pixel rather than
// triangulated: zones are concave as often as not, have a handful of
// corners, and the tile culling keeps the test to the pixels near them.
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
    // Segment: its ends (x0, y0, x1, y1), frame pixels.
    // Polygon: its corner count (x). Mask: its width in pixels (x).
    extra: vec4<f32>,
    // RGBA8, red in the low byte (unpack4x8unorm's order).
    color: u32,
    kind: u32,
    // Segment: half its thickness, pixels.
    width: f32,
    // Polygon: the index in `shapes` of its first corner (x, y as f32
    // bits). Mask: that of its first word of bits (row-major over its
    // bounds, 32 to a word, lowest bit first).
    data: u32,
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
const KIND_SEGMENT: u32 = 3u;
const KIND_POLYGON: u32 = 4u;
const KIND_MASK: u32 = 5u;

const TILE: u32 = 16u;
const CHUNK: u32 = 256u;

@group(1) @binding(0) var out: texture_storage_2d<rgba8unorm, write>;
@group(1) @binding(1) var<storage, read> list: DrawList;
@group(1) @binding(2) var atlas: texture_2d<f32>;
@group(1) @binding(3) var<storage, read> shapes: array<u32>;

var<workgroup> chunk: array<Quad, CHUNK>;
var<workgroup> hits: array<atomic<u32>, 8>;

fn corner(first: u32, i: u32) -> vec2<f32> {
    return bitcast<vec2<f32>>(vec2<u32>(shapes[first + 2u * i], shapes[first + 2u * i + 1u]));
}

// Whether `c` is inside the polygon of `n` corners from `first` (even-odd).
fn in_polygon(first: u32, n: u32, c: vec2<f32>) -> bool {
    var inside = false;
    var b = corner(first, n - 1u);
    for (var i = 0u; i < n; i++) {
        let a = corner(first, i);
        if (a.y > c.y) != (b.y > c.y) && c.x < (b.x - a.x) * (c.y - a.y) / (b.y - a.y) + a.x {
            inside = !inside;
        }
        b = a;
    }
    return inside;
}

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
        case KIND_SEGMENT: {
            // Round-capped, so that segments meeting at a corner join; the
            // same one-pixel antialiased edge as discs.
            let a = q.extra.xy;
            let ab = q.extra.zw - a;
            let t = clamp(dot(c - a, ab) / max(dot(ab, ab), 1e-12), 0.0, 1.0);
            return clamp(q.width + 0.5 - distance(c, a + t * ab), 0.0, 1.0);
        }
        case KIND_POLYGON: {
            let n = u32(q.extra.x);
            return select(0.0, 1.0, n >= 3u && in_polygon(q.data, n, c));
        }
        case KIND_MASK: {
            let d = vec2<u32>(p - vec2<i32>(q.bounds.xy));
            let k = d.y * u32(q.extra.x) + d.x;
            return f32((shapes[q.data + k / 32u] >> (k % 32u)) & 1u);
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
