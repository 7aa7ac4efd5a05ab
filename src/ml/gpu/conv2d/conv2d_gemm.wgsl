// conv2d as an implicit GEMM, for convolutions with enough output channels
// per group to fill a tile: rows are output pixels (P = n * oh * ow), columns
// the group's output channels, and the reduction runs over
// k = (ky * kw + kx) * icg + ci. A workgroup of 256 computes a 64 x 64 tile,
// each invocation a 4 x 4 block, staging 16-deep slices of both operands in
// workgroup memory so that every loaded value is used 64 times.
// Params: conv2d_params.wgsl.
// Workgroup grid: (pixel tiles, pixel tiles folded past 65535 x channel
// tiles, groups x SPLITS); tiles past the last pixel compute nothing but
// still meet every barrier. WG must be 256.
//
// With SPLITS > 1 (few tiles over a long reduction: a 7x7 map's 3x3 over
// 512 channels makes 8 tiles, each walking 4608 rows) the reduction is cut
// into SPLITS runs of whole slices, one workgroup each, and `emit` writes
// the partial sums for conv2d_gemm_sum.wgsl to add up; otherwise it is the
// epilogue (conv2d_gemm_store.wgsl's store4). The lowering sets SPLITS and
// emit.

@group(0) @binding(1) var<storage, read> x: array<TI>;
@group(0) @binding(2) var<storage, read> filt: array<TI>;

const TM: u32 = 64u;
const TN: u32 = 64u;
const TK: u32 = 16u;

var<workgroup> tile_a: array<f32, 1024>; // [k][pixel], TK x TM
var<workgroup> tile_b: array<f32, 1024>; // [k][channel], TK x TN

// This workgroup's run of the reduction (0 without splits).
var<private> split: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let npix = params.pixels;
    let ohw = params.ohw;
    let ow = params.ow;
    let h = i32(params.h);
    let w = i32(params.w);
    let icg = params.icg;
    let kw = params.filter_size.y;
    let pt = i32(params.padding.x);
    let pl = i32(params.padding.y);
    let ocg = params.ocg;
    let xs = params.x_strides;
    let fs = params.f_strides;
    let kdim = params.kdim;
    let g = wid.z / SPLITS;
    split = wid.z % SPLITS;
    // Whole slices a run; the last may be shorter.
    let run = ((kdim + TK - 1u) / TK + SPLITS - 1u) / SPLITS * TK;
    let k_begin = split * run;
    let k_end = min(kdim, k_begin + run);
    let channel_tiles = params.channel_tiles;
    let p0 = (wid.x + (wid.y / channel_tiles) * nwg.x) * TM;
    let m0 = (wid.y % channel_tiles) * TN;

    // Loading role: column `col` of both tiles, rows row0 .. row0 + 3.
    let col = lid % TM;
    let row0 = (lid / TM) * 4u;
    let p = p0 + col;
    let p_ok = p < npix;
    let r = p % ohw;
    let iy0 = i32((r / ow) * params.stride.x) - pt;
    let ix0 = i32((r % ow) * params.stride.y) - pl;
    let xbase = (p / ohw) * xs.x + g * icg * xs.y;
    let mm = m0 + col;
    let m_ok = mm < ocg;
    let fbase = (g * ocg + mm) * fs.x;

    // Computing role: pixels tx + 16 i, channels ty + 16 j. The 4 x 4 block
    // lives in four vec4 registers, never in an indexed array: drivers put
    // dynamically indexed arrays in local memory, which made this kernel 100x
    // slower on an H100.
    let tx = lid % 16u;
    let ty = lid / 16u;
    let dh = i32(params.dilation.x);
    let dw = i32(params.dilation.y);
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);

    for (var k0 = k_begin; k0 < k_end; k0 += TK) {
        for (var q = 0u; q < 4u; q++) {
            let row = row0 + q;
            let k = k0 + row;
            var a = 0.0;
            var b = 0.0;
            if k < k_end {
                let ci = k % icg;
                let kk = k / icg;
                let kx = kk % kw;
                let ky = kk / kw;
                let iy = iy0 + i32(ky) * dh;
                let ix = ix0 + i32(kx) * dw;
                if p_ok && iy >= 0 && iy < h && ix >= 0 && ix < w {
                    a = f32(x[xbase + u32(iy) * xs.z + u32(ix) * xs.w + ci * xs.y])
                        * in_scale(g * icg + ci);
                }
                if m_ok {
                    b = f32(filt[fbase + ci * fs.y + ky * fs.z + kx * fs.w]);
                }
            }
            tile_a[row * TM + col] = a;
            tile_b[row * TN + col] = b;
        }
        workgroupBarrier();
        for (var kl = 0u; kl < TK; kl++) {
            let ra = kl * TM + tx;
            let rb = kl * TN + ty;
            let av = vec4<f32>(tile_a[ra], tile_a[ra + 16u], tile_a[ra + 32u], tile_a[ra + 48u]);
            let bv = vec4<f32>(tile_b[rb], tile_b[rb + 16u], tile_b[rb + 32u], tile_b[rb + 48u]);
            acc0 += av.x * bv;
            acc1 += av.y * bv;
            acc2 += av.z * bv;
            acc3 += av.w * bv;
        }
        workgroupBarrier();
    }

    emit(p0 + tx, m0 + ty, 16u, g, acc0);
    emit(p0 + tx + 16u, m0 + ty, 16u, g, acc1);
    emit(p0 + tx + 32u, m0 + ty, 16u, g, acc2);
    emit(p0 + tx + 48u, m0 + ty, 16u, g, acc3);
}
