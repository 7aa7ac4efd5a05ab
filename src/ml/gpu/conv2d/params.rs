//! What the conv2d kernels share: the `Params` of conv2d_params.wgsl, the
//! bindings after the input, the tile sizes the lowering and `choose.rs`
//! count with, and one node's geometry as every kernel reads it.

use super::super::lower::{kernel_params, Kernel};
use crate::gpu::Specialization;
use crate::ml::graph_ir::{GraphIr, Node, OperandId};
use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions, InputLayout};
use crate::ml::shape::{conv_filter_ochw, nchw};
use crate::ml::types::{strides, OperandDescriptor};

/// Invocations of a workgroup of the one-invocation-per-output kernels.
pub(super) const WG: u32 = 64;

/// Output channels of a tile of either implicit-GEMM kernel.
pub(super) const GEMM_TILE_CHANNELS: usize = 64;
/// Output pixels of a tile: 64 in `conv2d_gemm.wgsl`, 128 in
/// `conv2d_gemm_wide.wgsl`.
pub(super) const GEMM_TILE_PIXELS: usize = 64;
pub(super) const WIDE_TILE_PIXELS: usize = 128;
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
    pub(in crate::ml::gpu) struct Params {
        pub(in crate::ml::gpu) x_strides: [u32; 4],
        pub(in crate::ml::gpu) f_strides: [u32; 4],
        pub(in crate::ml::gpu) stride: [u32; 2],
        pub(in crate::ml::gpu) dilation: [u32; 2],
        pub(in crate::ml::gpu) padding: [u32; 2],
        pub(in crate::ml::gpu) filter_size: [u32; 2],
        pub(in crate::ml::gpu) total: u32,
        pub(in crate::ml::gpu) pixels: u32,
        pub(in crate::ml::gpu) oc: u32,
        pub(in crate::ml::gpu) ocg: u32,
        pub(in crate::ml::gpu) oh: u32,
        pub(in crate::ml::gpu) ow: u32,
        pub(in crate::ml::gpu) ohw: u32,
        pub(in crate::ml::gpu) nhwc: u32,
        pub(in crate::ml::gpu) h: u32,
        pub(in crate::ml::gpu) w: u32,
        pub(in crate::ml::gpu) icg: u32,
        pub(in crate::ml::gpu) kdim: u32,
        pub(in crate::ml::gpu) channel_tiles: u32,
        pub(in crate::ml::gpu) ocp: u32,
        pub(in crate::ml::gpu) upsample: [u32; 2],
    }
}

/// A grid of `tiles` x `channel_tiles` x `groups` workgroups, the tiles
/// folded over x and y past the 65535 a dimension allows (a large image):
/// the kernels read tile wid.x + (wid.y / channel_tiles) * nwg.x, channel
/// tile wid.y % channel_tiles, group wid.z; tiles past the last return.
pub(in crate::ml::gpu) fn folded(tiles: usize, channel_tiles: usize, groups: usize) -> [u32; 3] {
    let x = tiles.min(65535);
    [
        x as u32,
        (tiles.div_ceil(x) * channel_tiles) as u32,
        groups as u32,
    ]
}

pub(in crate::ml::gpu) fn shape4(s: &[usize]) -> [usize; 4] {
    [s[0], s[1], s[2], s[3]]
}

/// `v` as u32 lanes (sizes and strides of a graph that passed the
/// builder's checks fit: elements stay below 2^31).
pub(in crate::ml::gpu) fn u32s<const N: usize>(v: [usize; N]) -> [u32; N] {
    v.map(|x| x as u32)
}

/// Element strides of a 4-D activation tensor, in (n, c, h, w) order.
pub(in crate::ml::gpu) fn activation_strides(layout: InputLayout, shape: [usize; 4]) -> [u32; 4] {
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
pub(in crate::ml::gpu) fn filter_strides(
    layout: Conv2dFilterLayout,
    shape: [usize; 4],
) -> [u32; 4] {
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
/// blocked copy of the input (conv2d/coop_blocked.rs) comes after the
/// output, as `xb`.
pub(in crate::ml::gpu) fn tensor_core_bindings(
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
    code += "fn out_pair(at: u32, p: u32, mo: u32, v: vec2<f32>, r: vec2<f32>, ok0: bool, ok1: bool) {\n\
             \x20   store_pair(at, vec2<f32>(finish(v.x, r.x), finish(v.y, r.y)), ok0, ok1);\n}\n";
    if blocked_input {
        binding += 1;
        code += &format!("@group(0) @binding({binding}) var<storage, read> xb: array<f16>;\n");
    }
    spec.code(&code).code(&format!(
        "@group(0) @binding({}) var<storage, read> wt: array<f16>;",
        binding + 1
    ))
}

/// The bindings of a tensor-core kernel's split-reduction first pass (x
/// at 1, the partial sums at 2, the filter table at 3), and `out_pair`
/// writing a pixel's two channels' sums unfinished into its split's run of
/// the partial sums, laid out as conv2d_gemm_sum.wgsl reads them
/// ([split][channel][pixel]); `split` is the kernel's.
pub(super) fn partial_bindings(spec: Specialization) -> Specialization {
    spec.code(
        "fn bias(m: u32) -> f32 { return 0.0; }\n\
         fn residual_pair(at: u32, ok0: bool, ok1: bool) -> vec2<T> { return vec2<T>(0.0); }\n\
         @group(0) @binding(2) var<storage, read_write> part: array<f32>;\n\
         fn out_pair(at: u32, p: u32, mo: u32, v: vec2<f32>, r: vec2<f32>, ok0: bool, ok1: bool) {\n\
         \x20   let e = split * params.total + mo * params.pixels + p;\n\
         \x20   if ok0 {\n        part[e] = v.x;\n    }\n\
         \x20   if ok1 {\n        part[e + params.pixels] = v.y;\n    }\n}\n\
         @group(0) @binding(3) var<storage, read> wt: array<f16>;",
    )
}

/// `fn finish(v, r)`, every conv2d kernel's last step on a sum `v` (bias
/// included) and its residual `r` (0 where none): the residual added before
/// the activations, or after them where it is late (`fuse/late_residual.rs`:
/// YOLO's bottleneck `x + silu(conv(y))`), so that any kernel takes a late
/// residual and none needs a pass of its own for the add.
pub(in crate::ml::gpu) fn finish(late: bool) -> &'static str {
    match late {
        false => "fn finish(v: f32, r: f32) -> f32 { return act(v + r); }",
        true => "fn finish(v: f32, r: f32) -> f32 { return act(v) + r; }",
    }
}

/// Binding declarations for the optional bias, input-channel scale and
/// residual, then the output (bound after the input and the filter, in that
/// order), with `fn bias(m)`, `fn in_scale(c)` and `fn residual(i)` (0, 1
/// and 0 where absent).
pub(in crate::ml::gpu) fn bias_and_output(
    has_bias: bool,
    has_scale: bool,
    has_residual: bool,
) -> String {
    bindings_after(3, has_bias, has_scale, has_residual, "T").0
}

/// A conv2d node's inputs for a kernel that takes its filter as the
/// kernel's table (rearranged at build): x, then any bias, input scale and
/// residual, in the order their bindings follow.
pub(super) fn table_inputs(node: &Node) -> Vec<OperandId> {
    let mut inputs = vec![node.inputs[0]];
    inputs.extend(node.op_inputs().get(2));
    inputs.extend(node.input_scale());
    inputs.extend(node.residual());
    inputs
}

/// [`bias_and_output`] with its first binding at `binding` and the output's
/// elements of type `y_ty`, and the binding after the output.
pub(in crate::ml::gpu) fn bindings_after(
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
pub(super) struct Conv<'a> {
    pub(super) node: &'a Node,
    pub(super) o: &'a Conv2dOptions,
    pub(super) x: OperandId,
    pub(super) y: OperandId,
    pub(super) xd: OperandDescriptor,
    pub(super) fd: OperandDescriptor,
    pub(super) yd: OperandDescriptor,
    /// The filter's bytes where it is a constant (every imported model).
    pub(super) filter: Option<&'a [u8]>,
    pub(super) kh: usize,
    pub(super) kw: usize,
    pub(super) icg: usize,
    pub(super) ocg: usize,
    pub(super) oh: usize,
    pub(super) ow: usize,
    pub(super) pixels: usize,
    pub(super) total: usize,
    pub(super) channel_tiles: usize,
    pub(super) params: Params,
    pub(super) has_bias: bool,
    pub(super) has_scale: bool,
    pub(super) has_residual: bool,
    /// Input and filter both float32 or both float16, the output either (a
    /// fused cast, `fuse/cast.rs`, which leaves no residual, read as the
    /// output's type): what the vector kernels need.
    pub(super) floats: bool,
}

impl<'a> Conv<'a> {
    pub(super) fn new(ir: &'a GraphIr, node: &'a Node, o: &'a Conv2dOptions) -> Self {
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
            xd,
            fd,
            yd,
        }
    }

    pub(super) fn flags(&self) -> (bool, bool, bool) {
        (self.has_bias, self.has_scale, self.has_residual)
    }

    pub(super) fn images(&self) -> usize {
        self.pixels / (self.oh * self.ow)
    }

    /// A kernel writing this node's output, with its activations and
    /// `finish` (where its residual goes): the fields every choice shares.
    pub(super) fn kernel<'s>(
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
            spec: spec.code(finish(self.node.late_residual)),
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
}

/// The tensor-core kernels' shared layout: the filter padded to whole
/// 16 x 16 blocks and to whole channel tiles.
pub(super) struct CoopTiles {
    /// 16-channel blocks of a tile.
    pub(super) blocks: u32,
    pub(super) pairs: bool,
    pub(super) params: Params,
    pub(super) table: Vec<u32>,
    /// Output pixels of a row a workgroup takes (`run_for`).
    pub(super) run: usize,
    /// The blocked and direct kernels' grid: runs of `run` pixels of an
    /// output row, then channel tiles, then groups.
    pub(super) run_grid: [u32; 3],
}

/// Output pixels of a row's run (the shaders' TP).
pub(super) const RUN: usize = 64;
/// The short run: two 16-pixel blocks.
pub(super) const SHORT_RUN: usize = 32;

/// The pixels of an output row one tensor-core workgroup runs along for an
/// `ow`-pixel row: [`RUN`], or [`SHORT_RUN`] where that pads the row less.
/// A row is padded to whole runs, so a 20-pixel row (YOLO's 20x20 maps at
/// 640) fills 20 of 64 pixels and 20 of 32; 7, 14 and 28 (ResNet-50's
/// last stages) 11, 22 and 44% of a long run, twice that of a short one.
pub(super) fn run_for(ow: usize) -> usize {
    if ow.div_ceil(SHORT_RUN) * SHORT_RUN < ow.div_ceil(RUN) * RUN {
        SHORT_RUN
    } else {
        RUN
    }
}

/// x at binding 1 and `load4(at, c, ok)`: group channels c .. c + 3 from
/// element `at` of x, zero from icg on and where not `ok`, with no branch
/// (what is not to be read loads element 0 and is dropped). One 8-byte
/// vector where channels come in runs of 4 (every run then starts at a
/// multiple of 4 elements, and lies wholly inside the group or past it),
/// else one by one.
pub(super) fn load4(icg: usize) -> String {
    if icg % 4 == 0 {
        "@group(0) @binding(1) var<storage, read> x: array<vec4<f16>>;\n\
         fn load4(at: u32, c: u32, ok: bool) -> vec4<f16> {\n\
         \x20   let keep = ok & (c < params.icg);\n\
         \x20   return select(vec4<f16>(0.0), x[select(0u, at / 4u, keep)], keep);\n}\n"
            .to_string()
    } else {
        "@group(0) @binding(1) var<storage, read> x: array<f16>;\n\
         fn load4(at: u32, c: u32, ok: bool) -> vec4<f16> {\n\
         \x20   let keep = vec4<bool>(ok) & (vec4<u32>(c) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(params.icg));\n\
         \x20   let v = vec4<f16>(x[select(0u, at, keep.x)], x[select(0u, at + 1u, keep.y)],\n\
         \x20       x[select(0u, at + 2u, keep.z)], x[select(0u, at + 3u, keep.w)]);\n\
         \x20   return select(vec4<f16>(0.0), v, keep);\n}\n"
            .to_string()
    }
}
