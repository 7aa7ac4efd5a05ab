//! conv2d: an implicit-GEMM tiled kernel when each group has several output
//! channels (on tensor cores in float16 where the adapter has them: the
//! direct, staged and blocked kernels below), each pixel's input channels
//! split over lanes when a single group has up to 16 over a long NHWC
//! reduction (`conv2d_split.rs`), one invocation per output vec4 for a 1x1
//! over up to 16 NHWC input channels (`conv2d_pointwise.rs`), one small
//! convolution per output phase for an input read through a fused nearest
//! upsample (`conv2d_upsampled.rs`), one invocation per output pixel when a
//! single group has few outputs (up to 8), else (depthwise, narrow groups)
//! one invocation per output element. Layouts are
//! not specialised in the shader text: the lowering passes element strides
//! of the input (in N, C, H, W order) and of the filter (in O, I, H, W
//! order), so every input/filter layout pair shares one pipeline.

use super::conv2d_coop_blocked::Blocked;
use super::conv2d_coop_tile::Staged;
use super::conv2d_gemm_split as gemm_split;
use super::conv2d_gemm_vec as gemm_vec;
use super::conv2d_pointwise as pointwise;
use super::conv2d_split::{split_filter, Split};
use super::conv2d_upsampled::Upsampled;
use super::conv2d_winograd::{self as winograd, Winograd};
use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::fuse::{pixel_by_pixel, NARROW_MAX_OUTPUTS};
use crate::ml::graph_ir::{GraphIr, Node, OperandId};
use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions, InputLayout, Op};
use crate::ml::shape::{conv_filter_ochw, nchw};
use crate::ml::types::{strides, DataType, OperandDescriptor};

const WG: u32 = 64;

// Below GEMM_MIN_OUTPUTS output channels a group (depthwise, narrow
// groups) most of a 64-channel tile would be idle, and the direct kernel
// does better; up to NARROW_MAX_OUTPUTS in one group, `conv2d_narrow.wgsl`
// keeps each output pixel's channels in registers (`ml::fuse` holds both:
// its upsample fusion depends on them).

/// Output channels of a tile of either implicit-GEMM kernel.
const GEMM_TILE_CHANNELS: usize = 64;
/// Output pixels of a tile: 64 in `conv2d_gemm.wgsl`, 128 in
/// `conv2d_gemm_wide.wgsl`.
const GEMM_TILE_PIXELS: usize = 64;
const WIDE_TILE_PIXELS: usize = 128;
/// Output pixels of a `conv2d_coop_direct.wgsl` tile: a run of one row.
const DIRECT_TILE_PIXELS: usize = 64;
/// Below this many 64 x 64 tiles, and up to [`SMALL_MAX_REDUCTION`]
/// products per output, conv2d takes the direct kernel (one invocation per
/// output element) instead of a GEMM.
const SMALL_MAX_TILES: usize = 32;
const SMALL_MAX_REDUCTION: usize = 256;
/// The multiprocessors of a large GPU (an H100 has 132): the conv2d
/// kernels' choices count workgroups against it.
pub(super) const LARGE_GPU_MULTIPROCESSORS: usize = 132;
/// Wide tiles from this many of them on: two per multiprocessor of a large
/// GPU. Below it the 64 x 64 tiles keep more of a small GPU's
/// multiprocessors busy, which matters more than reuse there.
pub(super) const WIDE_MIN_TILES: usize = 2 * LARGE_GPU_MULTIPROCESSORS;

kernel_params! {
    /// `struct Params` of conv2d_params.wgsl, shared by the conv2d kernels.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    pub(super) struct Params {
        pub(super) x_strides: [u32; 4],
        pub(super) f_strides: [u32; 4],
        pub(super) stride: [u32; 2],
        pub(super) dilation: [u32; 2],
        pub(super) padding: [u32; 2],
        pub(super) filter_size: [u32; 2],
        pub(super) total: u32,
        pub(super) pixels: u32,
        pub(super) oc: u32,
        pub(super) ocg: u32,
        pub(super) oh: u32,
        pub(super) ow: u32,
        pub(super) ohw: u32,
        pub(super) nhwc: u32,
        pub(super) h: u32,
        pub(super) w: u32,
        pub(super) icg: u32,
        pub(super) kdim: u32,
        pub(super) channel_tiles: u32,
        pub(super) ocp: u32,
        pub(super) upsample: [u32; 2],
    }
}

/// A grid of `tiles` x `channel_tiles` x `groups` workgroups, the tiles
/// folded over x and y past the 65535 a dimension allows (a large image):
/// the kernels read tile wid.x + (wid.y / channel_tiles) * nwg.x, channel
/// tile wid.y % channel_tiles, group wid.z; tiles past the last return.
pub(super) fn folded(tiles: usize, channel_tiles: usize, groups: usize) -> [u32; 3] {
    let x = tiles.min(65535);
    [
        x as u32,
        (tiles.div_ceil(x) * channel_tiles) as u32,
        groups as u32,
    ]
}

pub(super) fn shape4(s: &[usize]) -> [usize; 4] {
    [s[0], s[1], s[2], s[3]]
}

/// `v` as u32 lanes (sizes and strides of a graph that passed the
/// builder's checks fit: elements stay below 2^31).
pub(super) fn u32s<const N: usize>(v: [usize; N]) -> [u32; N] {
    v.map(|x| x as u32)
}

/// Element strides of a 4-D activation tensor, in (n, c, h, w) order.
pub(super) fn activation_strides(layout: InputLayout, shape: [usize; 4]) -> [u32; 4] {
    let s = strides(&shape)
        .into_iter()
        .map(|v| v as u32)
        .collect::<Vec<_>>();
    match layout {
        InputLayout::Nchw => [s[0], s[1], s[2], s[3]],
        InputLayout::Nhwc => [s[0], s[3], s[1], s[2]],
    }
}

/// Element strides of a conv2d filter, in (o, i, h, w) order.
pub(super) fn filter_strides(layout: Conv2dFilterLayout, shape: [usize; 4]) -> [u32; 4] {
    let s = strides(&shape)
        .into_iter()
        .map(|v| v as u32)
        .collect::<Vec<_>>();
    match layout {
        Conv2dFilterLayout::Oihw => [s[0], s[1], s[2], s[3]],
        Conv2dFilterLayout::Hwio => [s[3], s[2], s[0], s[1]],
        Conv2dFilterLayout::Ohwi => [s[0], s[3], s[1], s[2]],
        Conv2dFilterLayout::Ihwo => [s[3], s[0], s[1], s[2]],
    }
}

/// A filter (`bytes` of `es`-byte values, in `o`'s filter layout) as the
/// kernels with a pre-transposed filter read it (`conv2d_gemm_vec.wgsl`,
/// and the tensor-core kernels through [`blocked_filter`]): for group g, tap
/// t = ky * kw + kx and input channel ci, at row g * rows + t * icg + ci, the
/// group's output channels in a row of `ocp` (zero past ocg, and rows past
/// taps * icg zero), packed little-endian into words.
fn transposed_filter(
    bytes: &[u8],
    es: usize,
    o: &Conv2dOptions,
    shape: [usize; 4],
    rows: usize,
    ocp: usize,
) -> Vec<u32> {
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
    let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
    let ocg = oc / o.groups;
    let taps = kh * kw;
    let mut table = vec![0u8; (o.groups * rows * ocp * es).next_multiple_of(4)];
    for g in 0..o.groups {
        for t in 0..taps {
            let (ky, kx) = (t / kw, t % kw);
            for ci in 0..icg {
                let row = (g * rows + t * icg + ci) * ocp;
                for m in 0..ocg {
                    let at = es * ((g * ocg + m) * fs[0] + ci * fs[1] + ky * fs[2] + kx * fs[3]);
                    table[es * (row + m)..es * (row + m + 1)].copy_from_slice(&bytes[at..at + es]);
                }
            }
        }
    }
    table
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// A filter (float16 `bytes` in `o`'s filter layout) as the tensor-core
/// kernels read it: for group g, tap t = ky * kw + kx and input channel ci
/// (input channels padded with zeros to `icp`, a multiple of 16), a row of
/// the group's output channels padded with zeros to `ocp` (a multiple of
/// 16), as in [`transposed_filter`]; then cut into 16 x 16 blocks, each
/// block's 256 halves contiguous (row-major), so that a cooperative load of
/// B reads one contiguous run instead of 16 rows `ocp` apart. Block
/// (t, ci / 16, m / 16) of group g starts at half
/// ((g * taps + t) * icp + ci) * ocp + 16 m.
fn blocked_filter(
    bytes: &[u8],
    o: &Conv2dOptions,
    shape: [usize; 4],
    icp: usize,
    ocp: usize,
) -> Vec<u32> {
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
    let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
    let ocg = oc / o.groups;
    debug_assert!(icp % 16 == 0 && icp >= icg && ocp % 16 == 0 && ocp >= ocg);
    let taps = kh * kw;
    let mut halves = vec![0u16; o.groups * taps * icp * ocp];
    for g in 0..o.groups {
        for t in 0..taps {
            for ci in 0..icg {
                // The row of (g, t, ci), and where its 16-row block starts.
                let r = (g * taps + t) * icp + ci;
                for m in 0..ocg {
                    let at = 2
                        * ((g * ocg + m) * fs[0]
                            + ci * fs[1]
                            + (t / kw) * fs[2]
                            + (t % kw) * fs[3]);
                    let block = (r / 16) * (ocp / 16) + m / 16;
                    halves[block * 256 + (r % 16) * 16 + m % 16] =
                        u16::from_le_bytes([bytes[at], bytes[at + 1]]);
                }
            }
        }
    }
    halves
        .chunks_exact(2)
        .map(|h| u32::from(h[0]) | u32::from(h[1]) << 16)
        .collect()
}

/// The implicit-GEMM kernels: rows are output pixels, columns a group's
/// output channels.
#[derive(Clone, Copy, Debug)]
enum Gemm {
    /// 64 x 64 tiles, 4 x 4 per invocation: small problems.
    Tile64,
    /// 128 x 64 tiles, 8 x 4 per invocation; with `along_k` (inputs whose
    /// channels are adjacent) the loaders of x run along the reduction.
    Wide { along_k: bool },
    /// 64 x 64 tiles of one output row on 16x16x16 cooperative matrices
    /// (tensor cores), float16 NHWC: A read straight from the input, B from
    /// the filter pre-transposed at build. An earlier kernel that staged
    /// im2col operands through workgroup memory lost to the plain f16 one
    /// (1.17 against 1.01 ms, 3x3 64->64 at 512x512 on an H100); this one
    /// takes 0.36.
    TensorCores {
        /// 16-channel blocks of a tile: 4 (64 channels), or 2 for groups
        /// of at most 32 outputs, which a 64-channel tile would leave half
        /// idle (ESRGAN-slim's 64 -> 32 3x3).
        blocks: u32,
        /// The group's outputs come in pairs (ocg even): each lane writes
        /// two adjacent channels as one vec2, so a subgroup's store is one
        /// whole 128-byte line of a 64-channel pixel.
        pairs: bool,
    },
}

impl Gemm {
    fn tile_pixels(self) -> usize {
        match self {
            Gemm::Tile64 => GEMM_TILE_PIXELS,
            Gemm::Wide { .. } => WIDE_TILE_PIXELS,
            Gemm::TensorCores { .. } => DIRECT_TILE_PIXELS,
        }
    }

    /// The kernel's WGSL: its directives, the shared params, epilogue and
    /// loaders, then its own body (the tensor-core kernel writes its own
    /// epilogue: its output may be bound as pairs).
    fn source(self) -> String {
        let params = include_str!("conv2d_params.wgsl");
        let store = include_str!("conv2d_gemm_store.wgsl");
        let loads = include_str!("conv2d_gemm_load.wgsl");
        match self {
            Gemm::Tile64 => format!("{params}{store}{}", include_str!("conv2d_gemm.wgsl")),
            Gemm::Wide { .. } => format!(
                "{params}{store}{loads}{}",
                include_str!("conv2d_gemm_wide.wgsl")
            ),
            Gemm::TensorCores { .. } => format!(
                "enable wgpu_cooperative_matrix;\n{params}{}{}",
                include_str!("conv2d_coop_epilogue.wgsl"),
                include_str!("conv2d_coop_direct.wgsl")
            ),
        }
    }

    fn spec(self, has_bias: bool, has_scale: bool, has_residual: bool) -> Specialization {
        let spec = match self {
            Gemm::Wide { along_k } => Specialization::new().bool("ALONG_K", along_k),
            // The whole reduction in one workgroup: its epilogue
            // (conv2d_gemm_split.rs makes the split variant).
            Gemm::Tile64 => Specialization::new().u32("SPLITS", 1).code(
                "fn emit(pp: u32, m: u32, step: u32, g: u32, v: vec4<f32>) {\n\
                 \x20   store4(pp, m, step, g, v);\n}",
            ),
            Gemm::TensorCores { .. } => Specialization::new(),
        };
        if let Gemm::TensorCores { blocks, pairs } = self {
            // No input scale (A is not touched between memory and the
            // tensor cores).
            debug_assert!(!has_scale);
            return tensor_core_bindings(spec, has_bias, has_residual, pairs, false)
                .u32("BN", blocks);
        }
        spec.code(&bias_and_output(has_bias, has_scale, has_residual))
    }
}

/// The tensor-core kernels' bindings after the input: any bias and
/// residual, the output and the filter rearranged at build, as the table
/// (no filter binding, no input scale). Where the group's outputs come in
/// pairs (`pairs`: ocg even, so every pair starts at an even element), the
/// output and residual are bound as vec2s: `store_pair` writes and
/// `residual_pair` reads two adjacent channels at once, so a subgroup moves
/// whole lines; otherwise they go one channel at a time, the second only
/// where it exists.
///
/// They start at binding 2 (x at 1); with `blocked_input`, at 1, and the
/// blocked copy of the input (conv2d_coop_blocked.rs) comes after the
/// output, as `xb`.
pub(super) fn tensor_core_bindings(
    spec: Specialization,
    has_bias: bool,
    has_residual: bool,
    pairs: bool,
    blocked_input: bool,
) -> Specialization {
    let pair_ty = if pairs { "vec2<T>" } else { "T" };
    let mut binding = if blocked_input { 1 } else { 2 };
    let mut code = String::new();
    if has_bias {
        code += &format!(
            "@group(0) @binding({binding}) var<storage, read> b: array<TI>;\n\
             fn bias(m: u32) -> f32 {{ return f32(b[m]); }}\n"
        );
        binding += 1;
    } else {
        code += "fn bias(m: u32) -> f32 { return 0.0; }\n";
    }
    if has_residual {
        code += &format!("@group(0) @binding({binding}) var<storage, read> r: array<{pair_ty}>;\n");
        // Unconditional loads (an address that is not to be read becomes
        // element 0, its value unused), so that a kernel's loads of a
        // whole block issue back to back, none behind a branch.
        code += if pairs {
            "fn residual_pair(at: u32, ok0: bool, ok1: bool) -> vec2<T> {\n\
             \x20   return r[select(0u, at / 2u, ok0)];\n}\n"
        } else {
            "fn residual_pair(at: u32, ok0: bool, ok1: bool) -> vec2<T> {\n\
             \x20   return vec2<T>(r[select(0u, at, ok0)], r[select(0u, at + 1u, ok1)]);\n}\n"
        };
        binding += 1;
    } else {
        code +=
            "fn residual_pair(at: u32, ok0: bool, ok1: bool) -> vec2<T> { return vec2<T>(0.0); }\n";
    }
    code +=
        &format!("@group(0) @binding({binding}) var<storage, read_write> y: array<{pair_ty}>;\n");
    code += if pairs {
        "fn store_pair(at: u32, v: vec2<f32>, ok0: bool, ok1: bool) {\n\
         \x20   if ok0 {\n        y[at / 2u] = vec2<T>(v);\n    }\n}\n"
    } else {
        "fn store_pair(at: u32, v: vec2<f32>, ok0: bool, ok1: bool) {\n\
         \x20   if ok0 {\n        y[at] = T(v.x);\n    }\n\
         \x20   if ok1 {\n        y[at + 1u] = T(v.y);\n    }\n}\n"
    };
    if blocked_input {
        binding += 1;
        code += &format!("@group(0) @binding({binding}) var<storage, read> xb: array<f16>;\n");
    }
    spec.code(&code).code(&format!(
        "@group(0) @binding({}) var<storage, read> wt: array<f16>;",
        binding + 1
    ))
}

/// Binding declarations for the optional bias, input-channel scale and
/// residual, then the output (bound after the input and the filter, in that
/// order), with `fn bias(m)`, `fn in_scale(c)` and `fn residual(i)` (0, 1
/// and 0 where absent).
pub(super) fn bias_and_output(has_bias: bool, has_scale: bool, has_residual: bool) -> String {
    bindings_after(3, has_bias, has_scale, has_residual, "T").0
}

/// A conv2d node's inputs for a kernel that takes its filter as the
/// kernel's table (rearranged at build): x, then any bias, input scale and
/// residual, in the order their bindings follow.
fn table_inputs(node: &Node) -> Vec<OperandId> {
    let mut inputs = vec![node.inputs[0]];
    inputs.extend(node.op_inputs().get(2));
    inputs.extend(node.input_scale());
    inputs.extend(node.residual());
    inputs
}

/// [`bias_and_output`] with its first binding at `binding` and the output's
/// elements of type `y_ty`, and the binding after the output.
pub(super) fn bindings_after(
    mut binding: u32,
    has_bias: bool,
    has_scale: bool,
    has_residual: bool,
    y_ty: &str,
) -> (String, u32) {
    let mut s = String::new();
    // (present, buffer, element type, accessor, index, value when absent)
    for (present, buf, ty, f, i, absent) in [
        (has_bias, "b", "TI", "bias", "m", "0.0"),
        (has_scale, "s", "TI", "in_scale", "c", "1.0"),
        (has_residual, "r", "T", "residual", "i", "0.0"),
    ] {
        if present {
            s += &format!(
                "@group(0) @binding({binding}) var<storage, read> {buf}: array<{ty}>;\n\
                 fn {f}({i}: u32) -> f32 {{ return f32({buf}[{i}]); }}\n"
            );
            binding += 1;
        } else {
            s += &format!("fn {f}({i}: u32) -> f32 {{ return {absent}; }}\n");
        }
    }
    s += &format!("@group(0) @binding({binding}) var<storage, read_write> y: array<{y_ty}>;\n");
    (s, binding + 1)
}

/// One conv2d node as every kernel choice reads it: its operands, its
/// geometry (per group, with any fused upsample applied to the input) and
/// the `Params` the kernels share.
struct Conv<'a> {
    node: &'a Node,
    o: &'a Conv2dOptions,
    x: OperandId,
    y: OperandId,
    xd: OperandDescriptor,
    fd: OperandDescriptor,
    yd: OperandDescriptor,
    /// The filter's bytes where it is a constant (every imported model).
    filter: Option<&'a [u8]>,
    kh: usize,
    kw: usize,
    icg: usize,
    ocg: usize,
    oh: usize,
    ow: usize,
    pixels: usize,
    total: usize,
    channel_tiles: usize,
    params: Params,
    has_bias: bool,
    has_scale: bool,
    has_residual: bool,
    /// Input and filter both float32 or both float16, the output either (a
    /// fused cast, `fuse/cast.rs`, which leaves no residual, read as the
    /// output's type): what the vector kernels need.
    floats: bool,
    /// Channels adjacent in NHWC.
    nhwc: bool,
}

impl<'a> Conv<'a> {
    fn new(ir: &'a GraphIr, node: &'a Node, o: &'a Conv2dOptions) -> Self {
        let (x, f, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
        let xd = ir.desc(x).clone();
        let fd = ir.desc(f).clone();
        let yd = ir.desc(y).clone();
        // A fused upsample: the conv sees the input sy x sx times as large.
        let up = node.input_upsample.unwrap_or([1, 1]);
        let [_, _, h, w] = nchw(o.input_layout, shape4(&xd.shape));
        let [h, w] = [h * up[0], w * up[1]];
        let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape4(&fd.shape));
        let [_, _, oh, ow] = nchw(o.input_layout, shape4(&yd.shape));
        let total = yd.element_count();
        let ocg = oc / o.groups;
        let pixels = total / oc;
        let channel_tiles = ocg.div_ceil(GEMM_TILE_CHANNELS);
        let params = Params {
            x_strides: activation_strides(o.input_layout, shape4(&xd.shape)),
            f_strides: filter_strides(o.filter_layout, shape4(&fd.shape)),
            stride: u32s(o.strides),
            dilation: u32s(o.dilations),
            padding: u32s([o.padding[0], o.padding[2]]),
            filter_size: u32s([kh, kw]),
            total: total as u32,
            pixels: pixels as u32,
            oc: oc as u32,
            ocg: ocg as u32,
            oh: oh as u32,
            ow: ow as u32,
            ohw: (oh * ow) as u32,
            nhwc: (o.input_layout == InputLayout::Nhwc) as u32,
            h: h as u32,
            w: w as u32,
            icg: icg as u32,
            kdim: (icg * kh * kw) as u32,
            channel_tiles: channel_tiles as u32,
            ocp: 0,
            upsample: u32s(up),
        };
        let has_residual = node.residual;
        let floats = xd.data_type == fd.data_type
            && xd.data_type.is_float()
            && yd.data_type.is_float()
            && (yd.data_type == xd.data_type || !has_residual);
        let nhwc = params.nhwc == 1 && params.x_strides[1] == 1;
        Conv {
            node,
            o,
            x,
            y,
            filter: ir.constant(f).map(|b| b.as_slice()),
            kh,
            kw,
            icg,
            ocg,
            oh,
            ow,
            pixels,
            total,
            channel_tiles,
            params,
            has_bias: node.op_inputs().len() > 2,
            has_scale: node.input_scale,
            has_residual,
            floats,
            nhwc,
            xd,
            fd,
            yd,
        }
    }

    fn flags(&self) -> (bool, bool, bool) {
        (self.has_bias, self.has_scale, self.has_residual)
    }

    fn images(&self) -> usize {
        self.pixels / (self.oh * self.ow)
    }

    /// A kernel writing this node's output, with its activations: the
    /// fields every choice shares.
    fn kernel<'s>(
        &'s self,
        source: &'s str,
        spec: Specialization,
        params: &Params,
        table: Option<Vec<u32>>,
        inputs: Vec<OperandId>,
        (workgroups, workgroup_size): ([u32; 3], u32),
    ) -> Kernel<'s> {
        Kernel {
            label: "conv2d".into(),
            source,
            spec,
            output_type: self.yd.data_type,
            input_type: self.xd.data_type,
            activations: &self.node.activations,
            params: Kernel::params(params),
            table,
            inputs,
            outputs: vec![self.y],
            workgroups,
            workgroup_size,
        }
    }

    /// The direct or narrow kernel (one invocation per output element or
    /// pixel), which take any convolution.
    fn pixel_kernel(&self, l: &mut Lowering) -> Result<()> {
        pixel_kernel(l, self.node, self.params, self.ocg, self.flags())
    }
}

/// Picks conv2d's kernel: the first of these that takes the node, in this
/// order (each choice says why it goes before the ones after it).
pub(super) fn conv2d(l: &mut Lowering, node: &Node, o: &Conv2dOptions) -> Result<()> {
    let c = Conv::new(l.ir, node, o);
    // Fusion leaves an upsample only on convolutions the upsampled, narrow
    // and direct kernels can take, which read through it; the others cannot.
    // A late residual (added after the activations, `fuse/late_residual.rs`)
    // only on the direct kernel, which fusion leaves it on (depthwise
    // convolutions of two or more channels).
    if node.late_residual {
        if c.params.oc as usize == c.ocg || !pixel_by_pixel(o.groups, c.ocg) {
            return Err(crate::error::Error::invalid(format!(
                "conv2d of {}: a residual after the activations needs the direct kernel",
                l.ir.label(c.x)
            )));
        }
        return c.pixel_kernel(l);
    }
    if let Some(up) = node.input_upsample {
        return upsampled(l, &c, up);
    }
    // Few outputs over a long reduction (ESRGAN's 64 -> 4 and 32 -> 12 3x3),
    // NHWC with channels in runs of 4 and a constant filter, in either float
    // type: the reduction split over lanes (conv2d_split.rs has the
    // estimates against the narrow kernel, the vec4 GEMM and, in float16,
    // the tensor cores, which pad 4 or 12 outputs to 64 columns).
    let split = Split::choose(o.groups, c.icg, c.ocg, c.kh, c.kw)
        .filter(|_| c.floats && c.nhwc)
        .map(|s| s.rows(c.kw, o.strides[1], o.dilations[1], c.ow));
    // Except on tensor cores in float16, where the staged kernel with a
    // 16-channel tile takes those of more than 4 outputs: ESRGAN-slim's
    // 32 -> 12 at 960x540 on an H100 took 0.132 ms there against 0.227;
    // its 64 -> 4 0.192 against 0.145 on the split kernel, which reads
    // rows for up to 4 outputs (0.182 without).
    let tensor_cores = c.xd.data_type == DataType::Float16
        && c.fd.data_type == DataType::Float16
        && l.target.f16_tensor_cores
        && !c.has_scale
        && o.input_layout == InputLayout::Nhwc;
    let few_staged = tensor_cores
        && split.is_some()
        && c.ocg > 4
        && !c.has_residual
        && c.icg % 16 == 0
        && Staged::choose(c.kh, c.kw, o.strides, o.dilations).is_some()
        && c.filter.is_some();
    let split = split.filter(|_| !few_staged);
    // A 1x1 over a few input channels (ESRGAN-slim's 4 -> 64 pieces of a
    // split concat) moves bytes: one invocation per output vec4
    // (conv2d_pointwise.rs).
    let pointwise = pointwise::takes(
        (c.kh, c.kw),
        o.padding,
        o.groups,
        c.icg,
        c.params.oc as usize,
        c.params.nhwc == 1,
    );
    if let (true, true, Some(bytes)) = (pointwise, c.floats, c.filter) {
        return pointwise_kernel(l, &c, bytes);
    }
    if let (Some(split), Some(bytes)) = (split, c.filter) {
        let table = split_filter(bytes, c.fd.data_type, o, shape4(&c.fd.shape));
        let spec = split.spec(c.has_bias, c.has_scale, c.has_residual);
        let workgroups = grid(c.pixels, split.tile_pixels() as u32);
        let dispatch = (workgroups, split.workgroup_size());
        let inputs = table_inputs(node);
        return l.kernel(c.kernel(
            &Split::source(),
            spec,
            &c.params,
            Some(table),
            inputs,
            dispatch,
        ));
    }
    // A small map with a short reduction (selfie's 1x1 convolutions on
    // 16x16 and 32x32 maps) fills only a few 64 x 64 tiles: 4 workgroups
    // on an H100's 132 multiprocessors, each walking the whole reduction
    // in slices behind barriers (23 us for 16x16x128 -> 32). One
    // invocation per output element spreads the same work over thousands.
    // Counted per image, so that a batch takes the kernels its images take
    // alone (batched streams then match unbatched ones bit for bit).
    let gemm_tiles = (c.oh * c.ow).div_ceil(GEMM_TILE_PIXELS) * c.channel_tiles * o.groups;
    if gemm_tiles < SMALL_MAX_TILES && c.icg * c.kh * c.kw <= SMALL_MAX_REDUCTION {
        return c.pixel_kernel(l);
    }
    if tensor_cores {
        if let Some(lowered) = tensor_core_kernels(l, &c, few_staged) {
            return lowered;
        }
    }
    if pixel_by_pixel(o.groups, c.ocg) {
        return c.pixel_kernel(l);
    }
    gemm_kernels(l, &c, gemm_tiles)
}

/// An input read through a fused nearest upsample: one small convolution
/// of the input per output phase, where the filter is constant and
/// channels come in runs of 4 (conv2d_upsampled.rs), else the narrow or
/// direct kernel.
fn upsampled(l: &mut Lowering, c: &Conv, up: [usize; 2]) -> Result<()> {
    if !pixel_by_pixel(c.o.groups, c.ocg) {
        return Err(crate::error::Error::invalid(format!(
            "conv2d of {}: an upsampled input needs the narrow or direct kernel",
            l.ir.label(c.x)
        )));
    }
    let phases =
        Upsampled::choose(c.o, up, [c.kh, c.kw], c.icg, c.ocg, c.nhwc).filter(|_| c.floats);
    let (Some(phases), Some(bytes)) = (phases, c.filter) else {
        return c.pixel_kernel(l);
    };
    let table = phases.table(bytes, c.fd.data_type, c.o, shape4(&c.fd.shape));
    // The table follows the output (no filter binding).
    let (bindings, next) = bindings_after(2, c.has_bias, c.has_scale, c.has_residual, "T");
    let bindings =
        format!("{bindings}@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;\n");
    let workgroups = grid(phases.invocations(c.images(), c.oh, c.ow), WG);
    l.kernel(c.kernel(
        &Upsampled::source(),
        phases.spec(&bindings),
        &c.params,
        Some(table),
        table_inputs(c.node),
        (workgroups, WG),
    ))
}

/// `conv2d_pointwise.wgsl`: a 1x1 over few input channels, one invocation
/// per output vec4.
fn pointwise_kernel(l: &mut Lowering, c: &Conv, bytes: &[u8]) -> Result<()> {
    let (table, row) = narrow_filter(bytes, c.fd.data_type, c.o, shape4(&c.fd.shape));
    let vec4_input = c.nhwc && c.icg % 4 == 0;
    l.kernel(c.kernel(
        &pointwise::source(),
        pointwise::spec(c.icg, vec4_input, c.flags()),
        &c.params,
        Some(pointwise::pad_rows(table, c.icg, row)),
        table_inputs(c.node),
        (grid(c.total / 4, WG), WG),
    ))
}

/// The tensor-core kernels' shared layout: the filter padded to whole
/// 16 x 16 blocks and to whole channel tiles.
struct CoopTiles {
    /// 16-channel blocks of a tile.
    blocks: u32,
    pairs: bool,
    params: Params,
    table: Vec<u32>,
    /// The blocked and direct kernels' grid: runs of 64 pixels of an
    /// output row, then channel tiles, then groups.
    run_grid: [u32; 3],
}

/// Tensor cores where the adapter has them, for float16 NHWC convolutions
/// with a constant filter (rearranged here, once, into contiguous 16 x 16
/// blocks) and no input scale (A goes from memory to the tensor cores
/// untouched). Three kernels: stride 1 with several taps stages each
/// workgroup's input patch through workgroup memory once for all taps
/// (conv2d_coop_tile.rs), or copies the input into a padded, blocked
/// scratch layout whose A blocks are contiguous (conv2d_coop_blocked.rs);
/// the rest (strides, dilations, 1x1) read A blocks straight from x
/// (conv2d_coop_direct.wgsl), which needs input channels in runs of 16.
/// Outputs past a multiple of the tile are zero filter columns; groups
/// of up to 32 outputs take a 32-channel tile (ESRGAN-slim's 64->32 3x3
/// at 960x540 on an H100: 0.44 ms, 0.55 on the 64-channel one, with the
/// direct kernel), and up to 16 outputs a 16-channel tile on the staged
/// kernel (`few_staged`; the split kernel took the rest). None where none
/// of them takes the node.
fn tensor_core_kernels(l: &mut Lowering, c: &Conv, few_staged: bool) -> Option<Result<()>> {
    let (o, icg, ocg) = (c.o, c.icg, c.ocg);
    // The staged and blocked kernels pad input channels to 16 as they
    // stage or copy them, so they take any count (ESRGAN's RGB head).
    let staged = Staged::choose(c.kh, c.kw, o.strides, o.dilations);
    // A blocked copy past what one binding holds (a huge frame) leaves
    // the convolution to the other kernels.
    let images = c.images();
    let blocked = Blocked::choose(
        (c.kh, c.kw),
        o.strides,
        o.dilations,
        (c.oh, c.ow),
        o.groups,
        icg,
    )
    .filter(|b| l.can_bind(b.bytes(images)));
    // Fewer than 16 input channels are worth padding for a single
    // group onto at least 16 outputs (an RGB head), not for depthwise or
    // narrow groups, which would fill 1 of 16 rows and columns.
    let padded = blocked.is_some() && o.groups == 1 && ocg >= 16;
    let (Some(bytes), true) = (c.filter, padded || icg % 16 == 0) else {
        return None;
    };
    // 16-channel tiles only on the staged kernel (few_staged
    // above): the blocked and direct kernels load two B blocks.
    let blocks = if few_staged {
        1
    } else if ocg <= 32 {
        2
    } else {
        4
    };
    let tile_channels = 16 * blocks as usize;
    let ocp = ocg.next_multiple_of(tile_channels);
    let channel_tiles = ocp / tile_channels;
    let runs = images * c.oh * c.ow.div_ceil(DIRECT_TILE_PIXELS);
    let tiles = CoopTiles {
        blocks,
        pairs: ocg % 2 == 0,
        params: Params {
            ocp: ocp as u32,
            channel_tiles: channel_tiles as u32,
            ..c.params
        },
        table: blocked_filter(bytes, o, shape4(&c.fd.shape), icg.next_multiple_of(16), ocp),
        run_grid: folded(runs, channel_tiles, o.groups),
    };
    // Blocked where a residual is fused (ESRGAN-slim's GFF_2, 3x3
    // 64 -> 64 at 960x540: 0.52 ms with the copy, 0.71-0.78 staged)
    // or a group has fewer than 16 input channels (its RGB head:
    // 0.16 against 0.19-0.21), and where the staged patch does not
    // fit; staged otherwise (the plain 3x3 64 -> 64: 0.43 against
    // 0.47 blocked with its copy), all on an H100.
    let blocked = blocked.filter(|_| c.has_residual || icg < 16 || staged.is_none());
    if let Some(blocked) = blocked {
        return Some(blocked_kernels(l, c, &blocked, tiles));
    }
    let CoopTiles {
        blocks,
        pairs,
        params,
        table,
        run_grid,
    } = tiles;
    let inputs = table_inputs(c.node);
    if let Some(staged) = staged {
        let tiles = Staged::tiles(images, c.oh, c.ow);
        let bindings = tensor_core_bindings(
            Specialization::new(),
            c.has_bias,
            c.has_residual,
            pairs,
            false,
        );
        let spec = staged.spec(bindings.u32("BN", blocks), icg);
        let dispatch = (
            folded(tiles, channel_tiles, o.groups),
            staged.workgroup_size(),
        );
        return Some(l.kernel(c.kernel(
            &Staged::source(),
            spec,
            &params,
            Some(table),
            inputs,
            dispatch,
        )));
    }
    let gemm = Gemm::TensorCores { blocks, pairs };
    let spec = gemm
        .spec(c.has_bias, false, c.has_residual)
        .u32("ICG", icg as u32)
        .u32("KH", c.kh as u32)
        .u32("KW", c.kw as u32);
    let source = gemm.source();
    Some(l.kernel(c.kernel(&source, spec, &params, Some(table), inputs, (run_grid, 32))))
}

/// conv2d_coop_blocked.rs: the input copied into the blocked scratch
/// layout, then the tensor-core kernel over it.
fn blocked_kernels(l: &mut Lowering, c: &Conv, blocked: &Blocked, tiles: CoopTiles) -> Result<()> {
    let images = c.images();
    let scratch = l.scratch(blocked.bytes(images))?;
    let copy = l.kernel_with_scratch(
        Kernel {
            label: "conv2d blocks".into(),
            source: &Blocked::copy_source(),
            spec: Blocked::copy_spec(c.icg),
            output_type: c.yd.data_type,
            input_type: c.xd.data_type,
            activations: &[],
            params: Kernel::params(&tiles.params),
            table: None,
            inputs: vec![c.x],
            outputs: vec![],
            workgroups: grid(
                blocked.copy_invocations(images, c.icg),
                Blocked::copy_workgroup_size(),
            ),
            workgroup_size: Blocked::copy_workgroup_size(),
        },
        scratch,
    );
    let bindings = tensor_core_bindings(
        Specialization::new(),
        c.has_bias,
        c.has_residual,
        tiles.pairs,
        true,
    );
    let main = copy.and_then(|()| {
        let spec = Blocked::spec(bindings.u32("BN", tiles.blocks), (c.kh, c.kw), c.icg);
        let inputs = table_inputs(c.node)[1..].to_vec();
        let source = Blocked::source();
        let dispatch = (tiles.run_grid, 32);
        let kernel = c.kernel(
            &source,
            spec,
            &tiles.params,
            Some(tiles.table),
            inputs,
            dispatch,
        );
        l.kernel_with_scratch(kernel, scratch)
    });
    l.release_scratch(scratch);
    main
}

/// The GEMM-shaped kernels, for groups of more outputs than the narrow
/// kernel holds (tensor cores took what they could above).
fn gemm_kernels(l: &mut Lowering, c: &Conv, gemm_tiles: usize) -> Result<()> {
    let o = c.o;
    // A 3x3 at stride 1 with a constant filter and enough channels and
    // workgroups, in either layout: Winograd F(2x2, 3x3), 2.25x fewer
    // multiply-adds (conv2d_winograd.rs). Counted per image, as above.
    let winograd = Winograd::choose(o, [c.kh, c.kw], c.icg, c.ocg, [c.oh, c.ow])
        .filter(|_| c.floats)
        .filter(|w| l.fits_workgroup(w.workgroup_size(), w.workgroup_bytes()))
        .filter(|_| l.can_bind(Winograd::table_bytes(o.groups, c.icg, c.ocg)));
    if let (Some(wino), Some(bytes)) = (winograd, c.filter) {
        let table = Winograd::table(bytes, c.fd.data_type, o, shape4(&c.fd.shape));
        let ocp = Winograd::row(c.ocg);
        let channel_tiles = ocp / winograd::CHANNELS;
        let blocks = c.images() * wino.blocks(c.oh, c.ow);
        let params = Params {
            ocp: ocp as u32,
            channel_tiles: channel_tiles as u32,
            ..c.params
        };
        let spec = wino.spec(c.params.nhwc == 0, c.has_bias, c.has_scale, c.has_residual);
        let dispatch = (
            folded(blocks, channel_tiles, o.groups),
            wino.workgroup_size(),
        );
        let inputs = table_inputs(c.node);
        return l.kernel(c.kernel(
            &Winograd::source(),
            spec,
            &params,
            Some(table),
            inputs,
            dispatch,
        ));
    }
    // Few 64 x 64 tiles an image over a long reduction (ResNet's 3x3 on
    // 7x7 and 14x14 maps), in either layout: the reduction split over
    // workgroups (conv2d_gemm_split.rs), whichever tile a batch would take,
    // so that a batch adds up each output as its image alone does. The
    // vec4 GEMM below keeps each tile's reduction in one workgroup: on an
    // H100 a 7x7 512 -> 512 3x3 in NHWC took 0.411 ms there, 0.043 split.
    let splits = gemm_split::splits(gemm_tiles, c.icg * c.kh * c.kw);
    if splits > 1 && l.can_bind(gemm_split::scratch_bytes(splits, c.total)) {
        let tiles = [
            c.pixels.div_ceil(GEMM_TILE_PIXELS),
            c.channel_tiles,
            o.groups,
        ];
        return gemm_split::split_gemm(l, c.node, c.params, splits, tiles, c.has_scale);
    }
    // Wider outputs over a short reduction (an RGB stem; in NCHW, a
    // 4-channel piece of a split concat, which in NHWC took the pointwise
    // kernel above) stay on the GEMM kernels: the narrow kernel in runs of 8
    // channels measured 3x slower on an H100 (ESRGAN-slim's 3 -> 64 3x3 at
    // 960x540: 0.77 against 0.24 ms; its 4 -> 64 1x1 pieces 1.8 ms each).
    let vec4s = c.icg % 4 == 0 && c.ocg % 4 == 0;
    if let (Some(bytes), true) = (c.filter, c.floats && vec4s && c.params.nhwc == 1) {
        return vec_gemm_kernel(l, c, bytes);
    }
    // Pixel tiles of a large image can pass the 65535 workgroups a grid
    // dimension allows, so they are folded over x and (with the channel
    // tiles) y.
    let wide = c.pixels.div_ceil(WIDE_TILE_PIXELS) * c.channel_tiles * o.groups >= WIDE_MIN_TILES;
    let gemm = if !wide {
        Gemm::Tile64
    } else {
        // Channel stride 1: NHWC.
        Gemm::Wide {
            along_k: c.params.x_strides[1] == 1,
        }
    };
    let pixel_tiles = c.pixels.div_ceil(gemm.tile_pixels());
    let source = gemm.source();
    let spec = gemm.spec(c.has_bias, c.has_scale, c.has_residual);
    let dispatch = (folded(pixel_tiles, c.channel_tiles, o.groups), 256);
    l.kernel(c.kernel(
        &source,
        spec,
        &c.params,
        None,
        c.node.inputs.clone(),
        dispatch,
    ))
}

/// NHWC with a constant filter (every imported model) and group channels
/// in runs of 4, float32 (or float16 where tensor cores did not take it):
/// the implicit GEMM with vec4 loads of x along the reduction and of the
/// filter pre-transposed here, once (in float32), and 8 x 8 outputs per
/// invocation (conv2d_gemm_vec.wgsl).
fn vec_gemm_kernel(l: &mut Lowering, c: &Conv, bytes: &[u8]) -> Result<()> {
    let tile = gemm_vec::VecTile::choose(c.pixels, c.ocg, c.o.groups);
    let ocp = tile.row(c.ocg);
    let rows = (c.kh * c.kw * c.icg).next_multiple_of(gemm_vec::SLICE);
    let widened: Vec<u8>;
    let bytes = if c.fd.data_type == DataType::Float16 {
        widened = bytes
            .chunks_exact(2)
            .flat_map(|h| {
                half::f16::from_le_bytes([h[0], h[1]])
                    .to_f32()
                    .to_le_bytes()
            })
            .collect();
        &widened
    } else {
        bytes
    };
    let table = transposed_filter(bytes, 4, c.o, shape4(&c.fd.shape), rows, ocp);
    let channel_tiles = ocp / tile.channels;
    let pixel_tiles = c.pixels.div_ceil(tile.pixels);
    let params = Params {
        ocp: ocp as u32,
        channel_tiles: channel_tiles as u32,
        ..c.params
    };
    let spec = tile.spec(c.has_bias, c.has_scale, c.has_residual);
    let dispatch = (
        folded(pixel_tiles, channel_tiles, c.o.groups),
        tile.workgroup_size(),
    );
    let inputs = table_inputs(c.node);
    l.kernel(c.kernel(
        &gemm_vec::VecTile::source(),
        spec,
        &params,
        Some(table),
        inputs,
        dispatch,
    ))
}

/// The narrow kernel for one group of up to [`NARROW_MAX_OUTPUTS`]
/// outputs and a constant filter, else the direct one.
fn pixel_kernel(
    l: &mut Lowering,
    node: &Node,
    params: Params,
    ocg: usize,
    (has_bias, has_scale, has_residual): (bool, bool, bool),
) -> Result<()> {
    let constant_filter = l.ir.constant(node.inputs[1]).is_some();
    if params.oc as usize == ocg && ocg <= NARROW_MAX_OUTPUTS && constant_filter {
        return narrow(l, node, params, ocg, has_bias, (has_scale, has_residual));
    }
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let (xd, yd) = (l.ir.desc(x).clone(), l.ir.desc(y).clone());
    let total = params.total as usize;
    // Depthwise, its taps compiled in (`conv2d_depthwise.wgsl`), for
    // filters up to 7x7 (more would unroll into long shaders).
    let [kh, kw] = params.filter_size;
    let depthwise = params.icg == 1 && ocg == 1 && params.upsample == [1, 1] && kh * kw <= 49;
    // Otherwise one output a lane, or for outputs over 32 or more input
    // channels (no fused upsample) each sum over LANES invocations
    // (`conv2d.wgsl`).
    let lanes = match params.icg >= 32 && params.upsample == [1, 1] {
        true => LANES,
        false => 1,
    };
    let (body, spec, invocations) = match depthwise {
        true => (
            include_str!("conv2d_depthwise.wgsl"),
            Specialization::new().u32("KH", kh).u32("KW", kw),
            total,
        ),
        false => (
            include_str!("conv2d.wgsl"),
            Specialization::new().u32("LANES", lanes),
            total * lanes as usize,
        ),
    };
    let source = format!("{}{}", include_str!("conv2d_params.wgsl"), body);
    l.kernel(Kernel {
        label: "conv2d".into(),
        source: &source,
        spec: spec
            .code(&bias_and_output(has_bias, has_scale, has_residual))
            .code(match node.late_residual {
                false => "fn store(v: f32, i: u32) -> f32 { return act(v + residual(i)); }",
                true => "fn store(v: f32, i: u32) -> f32 { return act(v) + residual(i); }",
            }),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: node.inputs.clone(),
        outputs: vec![y],
        workgroups: grid(invocations, WG),
        workgroup_size: WG,
    })
}

/// Invocations sharing one output's sum in `conv2d.wgsl` over many input
/// channels.
const LANES: u32 = 8;

/// `conv2d_narrow.wgsl`: one invocation per output pixel with all of its
/// `ocg` (up to [`NARROW_MAX_OUTPUTS`]) output channels in registers. The
/// direct kernel, one invocation per output value, re-reads every input value for each output channel, with scalar
/// loads; a 64-channel GEMM tile leaves all but `ocg` of its columns idle.
/// ESRGAN's last conv (12 -> 3, 3x3 at 1920x1080) took 1.3-1.6 ms on the
/// direct kernel on an H100: 2M pixels x 3 outputs, each reading 108 input
/// values. The filter travels as [`narrow_filter`]'s table (a constant
/// filter, rearranged once at build): one vector load of it serves four
/// output channels, where the filter as it is took one scalar load each.
fn narrow(
    l: &mut Lowering,
    node: &Node,
    params: Params,
    ocg: usize,
    has_bias: bool,
    (has_scale, has_residual): (bool, bool),
) -> Result<()> {
    let Op::Conv2d(o) = &node.op else {
        unreachable!("the narrow kernel lowers conv2d nodes")
    };
    let (x, f) = (node.inputs[0], node.inputs[1]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(node.outputs[0]).clone();
    let fd = l.ir.desc(f).clone();
    debug_assert!(ocg <= NARROW_MAX_OUTPUTS && params.oc as usize == ocg);
    let bytes = l.ir.constant(f).cloned().unwrap_or_default();
    let (table, row) = narrow_filter(&bytes, fd.data_type, o, shape4(&fd.shape));
    // Channels adjacent (NHWC) in runs of 4: every run starts at a multiple
    // of 4 elements, so the input can be bound as vectors.
    let vec4 = params.x_strides[1] == 1 && params.icg % 4 == 0;
    let scales = "vec4<f32>(in_scale(c), in_scale(c + 1u), in_scale(c + 2u), in_scale(c + 3u))";
    let loads = if vec4 {
        format!(
            "@group(0) @binding(1) var<storage, read> x: array<vec4<TI>>;\n\
             fn load4(o: u32, c: u32) -> vec4<f32> {{ return vec4<f32>(x[o / 4u]) * {scales}; }}\n\
             fn load1(o: u32, c: u32) -> f32 {{ return f32(x[o / 4u][o % 4u]) * in_scale(c); }}\n"
        )
    } else {
        format!(
            "@group(0) @binding(1) var<storage, read> x: array<TI>;\n\
             fn load4(o: u32, c: u32) -> vec4<f32> {{\n\
             \x20   let s = params.x_strides.y;\n\
             \x20   return vec4<f32>(f32(x[o]), f32(x[o + s]), f32(x[o + 2u * s]), f32(x[o + 3u * s])) * {scales};\n\
             }}\n\
             fn load1(o: u32, c: u32) -> f32 {{ return f32(x[o]) * in_scale(c); }}\n"
        )
    };
    let source = format!(
        "{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d_narrow.wgsl")
    );
    // No filter binding: the table follows the output.
    let (bindings, next) = bindings_after(2, has_bias, has_scale, has_residual, "T");
    let inputs = table_inputs(node);
    l.kernel(Kernel {
        label: "conv2d".into(),
        source: &source,
        spec: Specialization::new()
            .u32("OCG", ocg as u32)
            .u32("OCG4", ocg.div_ceil(4) as u32)
            .code(&loads)
            .code(&bindings)
            .code(&format!(
                "@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;"
            )),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&Params {
            ocp: row as u32,
            ..params
        }),
        table: Some(table),
        inputs,
        outputs: vec![node.outputs[0]],
        workgroups: grid(params.pixels as usize, WG),
        workgroup_size: WG,
    })
}

/// Element `at` of a float16 or float32 constant's little-endian `bytes`,
/// as float32 (the filter tables the lowering builds are float32).
pub(super) fn float_at(bytes: &[u8], dt: DataType, at: usize) -> f32 {
    match dt {
        DataType::Float16 => half::f16::from_le_bytes([bytes[2 * at], bytes[2 * at + 1]]).to_f32(),
        _ => f32::from_le_bytes([
            bytes[4 * at],
            bytes[4 * at + 1],
            bytes[4 * at + 2],
            bytes[4 * at + 3],
        ]),
    }
}

/// A filter (`bytes` of `dt`, in `o`'s filter layout, one group) as
/// `conv2d_narrow.wgsl` reads it: for tap t = ky * kw + kx and input
/// channel ci a row of float32 values holding the output channels, rounded
/// up to 4 with zeros. Returns the table (float32 bits) and the row's
/// length.
fn narrow_filter(
    bytes: &[u8],
    dt: DataType,
    o: &Conv2dOptions,
    shape: [usize; 4],
) -> (Vec<u32>, usize) {
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape);
    let fs = filter_strides(o.filter_layout, shape).map(|v| v as usize);
    let row = oc.next_multiple_of(4);
    let value = |at: usize| float_at(bytes, dt, at);
    let mut t = vec![0u32; kh * kw * icg * row];
    for ky in 0..kh {
        for kx in 0..kw {
            for ci in 0..icg {
                let start = ((ky * kw + kx) * icg + ci) * row;
                for m in 0..oc {
                    let at = m * fs[0] + ci * fs[1] + ky * fs[2] + kx * fs[3];
                    t[start + m] = value(at).to_bits();
                }
            }
        }
    }
    (t, row)
}

#[cfg(test)]
mod tests {
    use super::{blocked_filter, transposed_filter};
    use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions};

    /// Each filter value is its own OIHW index; the table must hold, for
    /// group g, tap t and input channel ci, the group's output channels in
    /// a row of 64, zero past them, and zero rows past the reduction: in
    /// float16 (the tensor-core kernel's, rows exactly the reduction) and
    /// float32 (conv2d_gemm_vec.wgsl's, rows padded to its 8-row slice).
    #[test]
    fn the_transposed_filter_is_rows_of_output_channels_per_tap_and_input_channel() {
        let (oc, icg, k, groups): (usize, usize, usize, usize) = (6, 2, 3, 2);
        let ocg = oc / groups;
        let kdim = k * k * icg;
        for (es, rows) in [(2, kdim), (4, kdim.next_multiple_of(8))] {
            for layout in [Conv2dFilterLayout::Oihw, Conv2dFilterLayout::Ohwi] {
                let shape = match layout {
                    Conv2dFilterLayout::Oihw => [oc, icg, k, k],
                    _ => [oc, k, k, icg],
                };
                let value =
                    |o: usize, i: usize, y: usize, x: usize| ((o * icg + i) * k + y) * k + x;
                let mut bytes = vec![0u8; es * oc * icg * k * k];
                for o in 0..oc {
                    for i in 0..icg {
                        for y in 0..k {
                            for x in 0..k {
                                let at = es
                                    * match layout {
                                        Conv2dFilterLayout::Oihw => value(o, i, y, x),
                                        _ => ((o * k + y) * k + x) * icg + i,
                                    };
                                let v = value(o, i, y, x) as f32;
                                if es == 2 {
                                    let h = half::f16::from_f32(v).to_le_bytes();
                                    bytes[at..at + 2].copy_from_slice(&h);
                                } else {
                                    bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
                                }
                            }
                        }
                    }
                }
                let o = Conv2dOptions {
                    groups,
                    filter_layout: layout,
                    ..Conv2dOptions::new()
                };
                let words = transposed_filter(&bytes, es, &o, shape, rows, 64);
                let values: Vec<f32> = if es == 2 {
                    words
                        .iter()
                        .flat_map(|w| [*w as u16, (*w >> 16) as u16])
                        .map(|h| half::f16::from_bits(h).to_f32())
                        .collect()
                } else {
                    words.iter().map(|w| f32::from_bits(*w)).collect()
                };
                assert_eq!(values.len(), groups * rows * 64);
                for g in 0..groups {
                    for row in 0..rows {
                        let (t, ci) = (row / icg, row % icg);
                        for m in 0..64 {
                            let got = values[(g * rows + row) * 64 + m];
                            let want = if m < ocg && row < kdim {
                                value(g * ocg + m, ci, t / k, t % k) as f32
                            } else {
                                0.0
                            };
                            assert_eq!(got, want, "{es} {layout:?} g{g} row{row} m{m}");
                        }
                    }
                }
            }
        }
    }

    /// Each block of the tensor-core table holds the rows-of-outputs
    /// table's 16 x 16 block, row-major, blocks in (group, row block,
    /// column block) order; input channels past a multiple of 16 are zero
    /// rows.
    #[test]
    fn the_blocked_filter_holds_contiguous_16x16_blocks_of_the_transposed_one() {
        let k = 3usize;
        for (oc, icg, groups, ocp) in [(40usize, 32usize, 2usize, 32usize), (64, 3, 1, 64)] {
            let bytes: Vec<u8> = (0..oc * icg * k * k)
                .flat_map(|i| half::f16::from_f32((i % 2039 + 1) as f32).to_le_bytes())
                .collect();
            let o = Conv2dOptions {
                groups,
                ..Conv2dOptions::new()
            };
            let shape = [oc, icg, k, k];
            let icp = icg.next_multiple_of(16);
            let halves = |words: Vec<u32>| -> Vec<u16> {
                words
                    .iter()
                    .flat_map(|w| [*w as u16, (*w >> 16) as u16])
                    .collect()
            };
            // The rows-of-outputs table with the same padded rows.
            let plain = halves(transposed_filter(&bytes, 2, &o, shape, k * k * icg, ocp));
            let blocked = halves(blocked_filter(&bytes, &o, shape, icp, ocp));
            assert_eq!(blocked.len(), groups * k * k * icp * ocp);
            for g in 0..groups {
                for t in 0..k * k {
                    for ci in 0..icp {
                        let r = (g * k * k + t) * icp + ci;
                        for m in 0..ocp {
                            let at =
                                ((r / 16) * (ocp / 16) + m / 16) * 256 + (r % 16) * 16 + m % 16;
                            let want = match ci < icg {
                                true => plain[(g * k * k * icg + t * icg + ci) * ocp + m],
                                false => 0,
                            };
                            assert_eq!(blocked[at], want, "{icg}: row {r} column {m}");
                        }
                    }
                }
            }
            // The kernels' address of block (t, ci / 16, m / 16) of group g.
            let (g, t, ci, m) = (groups - 1, 4, 0, 16);
            let at = ((g * k * k + t) * icp + ci) * ocp + 16 * m;
            assert_eq!(
                blocked[at],
                plain[(g * k * k * icg + t * icg + ci) * ocp + m]
            );
        }
    }
}
