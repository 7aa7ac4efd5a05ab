// conv2d as an implicit GEMM for float32 NHWC inputs with a constant filter
// and input group channels in runs of 4 (float16 too, read as vec4<f16>;
// sums, the workgroup tiles and the filter table are float32): rows are output pixels, columns a
// group's output channels, k = (ky * kw + kx) * icg + ci, as in
// conv2d_gemm_wide.wgsl, but with every memory access 16 bytes wide.
//
// - A (x): in NHWC the 4 input channels of one pixel at one tap are adjacent,
//   and a run of 4 along k never crosses a tap (icg % 4 == 0), so x is read
//   as vec4: one load, one bounds check and no division per 4 elements. Each
//   loader keeps one position along k (its channel run ci4 and tap kx, ky)
//   and carries it forward a slice at a time; the wide kernel divided per
//   element and checked bounds per element.
// - B (the filter): pre-transposed at build into a table `wt` of rows of the
//   group's output channels per k, [g][kpad][ocp] (kpad: k rounded up to a
//   slice, ocp: ocg rounded up to the tile; zero past both), so a slice of B
//   is contiguous vec4 loads with no checks at all.
// - Products: each invocation owns 8 pixels x 8 channels (two vec4 of
//   pixels, two vec4 of channels), so each step along k is four 16-byte
//   workgroup loads for 64 multiply-adds (the wide kernel: three for 32). A
//   subgroup covers 8 x 4 invocations of the tile, so its A loads are 8
//   adjacent vec4 and its B loads 4 (one shared-memory wavefront each).
// - Workgroup tiles are double-buffered: the next slice is read from memory
//   into registers before the current one is multiplied and stored into the
//   other buffer after, one barrier per slice.
// - The outputs of a pixel's 4 adjacent channels are written as one vec4 (y
//   is bound as array<vec4<T>>; ocg % 4 == 0), 64 bytes per pixel per
//   subgroup store.
//
// A slice is 8 reduction rows, so that both buffers of a 128 x 64 tile fit
// in 12.5 KiB of workgroup memory (WebGPU guarantees 16; with 16 rows they
// took 25).
//
// Set by the lowering: TM (pixels of a tile, 64 or 128), TN (channels, 64,
// or 32 for a group of up to 32 outputs, which left half of a 64-channel
// tile idle: ESRGAN's 64 -> 32), WG = TM * TN / 64, A_TILE and B_TILE (both
// buffers' vec4s).
// Params: conv2d_params.wgsl (ocp: the table's row length).

@group(0) @binding(1) var<storage, read> x: array<vec4<TI>>;

// The reduction rows of a slice.
const TK: u32 = 8u;
// A row of tile_a in vec4s: TM / 4 and one more, so that the loaders'
// scalar stores (16 pixels at each of two rows 4 apart) fall in distinct
// banks (4 rows are 16 banks past a multiple of 32).
const RS: u32 = TM / 4u + 1u;
// [buffer][k][pixel / 4], 2 x TK x RS: four pixels at one k in a vec4.
var<workgroup> tile_a: array<vec4<f32>, A_TILE>;
// [buffer][k][channel / 4], 2 x TK x TN / 4.
var<workgroup> tile_b: array<vec4<f32>, B_TILE>;
// The filter's loads per invocation per slice (TK x TN / 4 vec4): 1 or 2
// (128 / TM).
const NB: u32 = TK * TN / 4u / WG;
// x's (TM pixels x 2 vec4): 2 (TN 64) or 4 (TN 32), of pixels WG / 2 apart.
const NA: u32 = 2u * TM / WG;

// Writes 4 adjacent output channels m .. m + 3 of group g at pixel pp, if
// both exist (ocg is a multiple of 4, so the 4 exist or none does).
fn store_v4(pp: u32, m: u32, g: u32, v: vec4<f32>) {
    if pp >= params.pixels || m >= params.ocg {
        return;
    }
    let mo = g * params.ocg + m;
    let at = pp * params.oc + mo;
    let o = vec4<f32>(
        finish(v.x + bias(mo), residual(at)),
        finish(v.y + bias(mo + 1u), residual(at + 1u)),
        finish(v.z + bias(mo + 2u), residual(at + 2u)),
        finish(v.w + bias(mo + 3u), residual(at + 3u)),
    );
    y[at / 4u] = vec4<T>(o);
}

// The group's first input channel.
var<private> c0: u32;
// The loaders of x: each invocation's NA pixels (row and column of the
// window's origin, and the offset of its image and group in vec4s, u32 max
// past the last pixel), and its position along k.
var<private> oy: array<i32, NA>;
var<private> ox: array<i32, NA>;
var<private> ob: array<u32, NA>;
var<private> ci4: u32;
var<private> kx: u32;
var<private> ky: u32;

// Moves the loader's position `n` vec4s along k.
fn advance(n: u32) {
    let icg4 = params.icg / 4u;
    ci4 += n;
    while ci4 >= icg4 {
        ci4 -= icg4;
        kx += 1u;
        if kx == params.filter_size.y {
            kx = 0u;
            ky += 1u;
        }
    }
}

// The vec4 of x at input row iy, column ix of the pixel whose image and
// group start at ob, if it exists (else 0).
fn tap4(iy: i32, ix: i32, ob: u32, ok: bool) -> vec4<f32> {
    if ok && ob != 0xffffffffu && u32(iy) < params.h && u32(ix) < params.w {
        return vec4<f32>(x[ob + u32(iy) * (params.x_strides.z / 4u)
            + u32(ix) * (params.x_strides.w / 4u) + ci4]);
    }
    return vec4<f32>(0.0);
}

// This invocation's NA vec4 of x at its position along k (zero outside
// the input and past the reduction: ky == kh there), input-scaled.
fn load_x() -> array<vec4<f32>, NA> {
    let dy = i32(ky * params.dilation.x);
    let dx = i32(kx * params.dilation.y);
    let in_k = ky < params.filter_size.x;
    let c = c0 + 4u * ci4;
    let s = vec4<f32>(in_scale(c), in_scale(c + 1u), in_scale(c + 2u), in_scale(c + 3u));
    var a: array<vec4<f32>, NA>;
    for (var j = 0u; j < NA; j++) {
        a[j] = tap4(oy[j] + dy, ox[j] + dx, ob[j], in_k) * s;
    }
    return a;
}

// Stores the loaded vec4s of x into the buffer of tile_a at ab.
fn put_all(ab: u32, kq: u32, pl0: u32, a: array<vec4<f32>, NA>) {
    for (var j = 0u; j < NA; j++) {
        put_a(ab, kq, pl0 + j * (WG / 2u), a[j]);
    }
}

// Stores a vec4 of x (reduction rows 4 kq .. + 3 of pixel pl) into the
// buffer of tile_a at ab.
fn put_a(ab: u32, kq: u32, pl: u32, v: vec4<f32>) {
    let at = ab + 4u * kq * RS + pl / 4u;
    let q = pl % 4u;
    tile_a[at][q] = v.x;
    tile_a[at + RS][q] = v.y;
    tile_a[at + 2u * RS][q] = v.z;
    tile_a[at + 3u * RS][q] = v.w;
}

// The filter table's vec4 e of the slice from row `row0` (row e / (TN / 4),
// column e % (TN / 4)).
fn load_b(wbase: u32, ocp4: u32, row0: u32, e: u32) -> vec4<f32> {
    return wt[wbase + (row0 + e / (TN / 4u)) * ocp4 + e % (TN / 4u)];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.z;
    let channel_tiles = params.channel_tiles;
    let p0 = (wid.x + (wid.y / channel_tiles) * nwg.x) * TM;
    let m0 = (wid.y % channel_tiles) * TN;
    let lane = lid % 32u;
    let warp = lid / 32u;
    c0 = g * params.icg;

    // Loading role for x: k run kq (of the 2 in a slice) of pixels pl0 =
    // 16 warp + lane % 16 and pl0 + j WG / 2 (j < NA), so that a subgroup
    // reads 32 bytes of each of 16 pixels and its scalar stores into tile_a
    // fill all 32 banks.
    let kq = lane / 16u;
    let pl0 = 16u * warp + lane % 16u;
    for (var j = 0u; j < NA; j++) {
        let p = p0 + pl0 + j * (WG / 2u);
        let r = p % params.ohw;
        oy[j] = i32((r / params.ow) * params.stride.x) - i32(params.padding.x);
        ox[j] = i32((r % params.ow) * params.stride.y) - i32(params.padding.y);
        ob[j] = select(0xffffffffu, ((p / params.ohw) * params.x_strides.x + c0) / 4u,
            p < params.pixels);
    }
    ci4 = 0u;
    kx = 0u;
    ky = 0u;
    advance(kq);
    // Loading role for the filter: vec4s lid and (if NB is 2) lid + WG of a
    // slice.
    let kpad = (params.kdim + TK - 1u) / TK * TK;
    let ocp4 = params.ocp / 4u;
    let wbase = g * kpad * ocp4 + m0 / 4u;
    // Computing role: pixels 4 tx .. + 3 and TM / 2 + 4 tx .. + 3, channels
    // 4 ty .. + 3 and TN / 2 + 4 ty .. + 3; a subgroup is 8 tx x 4 ty.
    let tx = (warp % (TM / 64u)) * 8u + lane % 8u;
    let ty = (warp / (TM / 64u)) * 4u + lane / 8u;

    var c00 = vec4<f32>(0.0);
    var c01 = vec4<f32>(0.0);
    var c10 = vec4<f32>(0.0);
    var c11 = vec4<f32>(0.0);
    var c20 = vec4<f32>(0.0);
    var c21 = vec4<f32>(0.0);
    var c30 = vec4<f32>(0.0);
    var c31 = vec4<f32>(0.0);
    var c40 = vec4<f32>(0.0);
    var c41 = vec4<f32>(0.0);
    var c50 = vec4<f32>(0.0);
    var c51 = vec4<f32>(0.0);
    var c60 = vec4<f32>(0.0);
    var c61 = vec4<f32>(0.0);
    var c70 = vec4<f32>(0.0);
    var c71 = vec4<f32>(0.0);

    // Slice 0 into buffer 0.
    var na = load_x();
    var nb0 = load_b(wbase, ocp4, 0u, lid);
    var nb1 = vec4<f32>(0.0);
    if NB > 1u {
        nb1 = load_b(wbase, ocp4, 0u, lid + WG);
    }
    put_all(0u, kq, pl0, na);
    tile_b[lid] = nb0;
    if NB > 1u {
        tile_b[lid + WG] = nb1;
    }
    workgroupBarrier();
    let slices = kpad / TK;
    for (var s = 0u; s < slices; s++) {
        let cur = s % 2u;
        // The next slice into registers.
        let more = s + 1u < slices;
        if more {
            advance(2u);
            na = load_x();
            let row0 = (s + 1u) * TK;
            nb0 = load_b(wbase, ocp4, row0, lid);
            if NB > 1u {
                nb1 = load_b(wbase, ocp4, row0, lid + WG);
            }
        }
        let ab = cur * (TK * RS);
        let bb = cur * (TK * TN / 4u);
        for (var kk = 0u; kk < TK; kk++) {
            let a0 = tile_a[ab + kk * RS + tx];
            let a1 = tile_a[ab + kk * RS + TM / 8u + tx];
            let b0 = tile_b[bb + kk * (TN / 4u) + ty];
            let b1 = tile_b[bb + kk * (TN / 4u) + TN / 8u + ty];
            c00 += a0.x * b0;
            c01 += a0.x * b1;
            c10 += a0.y * b0;
            c11 += a0.y * b1;
            c20 += a0.z * b0;
            c21 += a0.z * b1;
            c30 += a0.w * b0;
            c31 += a0.w * b1;
            c40 += a1.x * b0;
            c41 += a1.x * b1;
            c50 += a1.y * b0;
            c51 += a1.y * b1;
            c60 += a1.z * b0;
            c61 += a1.z * b1;
            c70 += a1.w * b0;
            c71 += a1.w * b1;
        }
        // The next slice into the other buffer (last read before the
        // previous barrier).
        if more {
            let nab = (1u - cur) * (TK * RS);
            put_all(nab, kq, pl0, na);
            let nbb = (1u - cur) * (TK * TN / 4u);
            tile_b[nbb + lid] = nb0;
            if NB > 1u {
                tile_b[nbb + lid + WG] = nb1;
            }
        }
        workgroupBarrier();
    }

    let pa = p0 + 4u * tx;
    let pb = p0 + TM / 2u + 4u * tx;
    let ma = m0 + 4u * ty;
    let mb = m0 + TN / 2u + 4u * ty;
    store_v4(pa, ma, g, c00);
    store_v4(pa, mb, g, c01);
    store_v4(pa + 1u, ma, g, c10);
    store_v4(pa + 1u, mb, g, c11);
    store_v4(pa + 2u, ma, g, c20);
    store_v4(pa + 2u, mb, g, c21);
    store_v4(pa + 3u, ma, g, c30);
    store_v4(pa + 3u, mb, g, c31);
    store_v4(pb, ma, g, c40);
    store_v4(pb, mb, g, c41);
    store_v4(pb + 1u, ma, g, c50);
    store_v4(pb + 1u, mb, g, c51);
    store_v4(pb + 2u, ma, g, c60);
    store_v4(pb + 2u, mb, g, c61);
    store_v4(pb + 3u, ma, g, c70);
    store_v4(pb + 3u, mb, g, c71);
}
