//! conv2d: an implicit-GEMM tiled kernel when each group has several output
//! channels, else (depthwise) one invocation per output element. Layouts are
//! not specialised in the shader text: the lowering passes element strides
//! of the input (in N, C, H, W order) and of the filter (in O, I, H, W
//! order), so every input/filter layout pair shares one pipeline.

use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{Conv2dFilterLayout, Conv2dOptions, InputLayout};
use crate::ml::shape::{conv_filter_ochw, nchw};
use crate::ml::types::{strides, DataType};

const WG: u32 = 64;

/// Output channels per group from which the implicit-GEMM kernel is used:
/// below it (depthwise, narrow groups) most of a 64-channel tile would be
/// idle, and the direct kernel does better.
const GEMM_MIN_CHANNELS: usize = 4;
/// Output channels of a tile of either implicit-GEMM kernel.
const GEMM_TILE_CHANNELS: usize = 64;
/// Output pixels of a tile: 64 in `conv2d_gemm.wgsl`, 128 in
/// `conv2d_gemm_wide.wgsl`.
const GEMM_TILE_PIXELS: usize = 64;
const WIDE_TILE_PIXELS: usize = 128;
/// Wide tiles from this many of them on: two per multiprocessor of a large
/// GPU (an H100 has 132). Below it the 64 x 64 tiles keep more of a small
/// GPU's multiprocessors busy, which matters more than reuse there.
const WIDE_MIN_TILES: usize = 264;

kernel_params! {
    /// `struct Params` of conv2d_params.wgsl, shared by the four kernels.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        x_strides: [u32; 4],
        f_strides: [u32; 4],
        stride: [u32; 2],
        dilation: [u32; 2],
        padding: [u32; 2],
        filter_size: [u32; 2],
        total: u32,
        pixels: u32,
        oc: u32,
        ocg: u32,
        oh: u32,
        ow: u32,
        ohw: u32,
        nhwc: u32,
        h: u32,
        w: u32,
        icg: u32,
        kdim: u32,
        channel_tiles: u32,
        _pad: [u32; 3],
    }
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

fn filter_strides(layout: Conv2dFilterLayout, shape: [usize; 4]) -> [u32; 4] {
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

/// The implicit-GEMM kernels: rows are output pixels, columns a group's
/// output channels.
#[derive(Clone, Copy, Debug)]
enum Gemm {
    /// 64 x 64 tiles, 4 x 4 per invocation: small problems.
    Tile64,
    /// 128 x 64 tiles, 8 x 4 per invocation; with `along_k` (inputs whose
    /// channels are adjacent) the loaders of x run along the reduction.
    Wide { along_k: bool },
    /// 128 x 64 tiles on 16x16x16 cooperative matrices, float16 only.
    TensorCores,
}

impl Gemm {
    fn tile_pixels(self) -> usize {
        match self {
            Gemm::Tile64 => GEMM_TILE_PIXELS,
            Gemm::Wide { .. } | Gemm::TensorCores => WIDE_TILE_PIXELS,
        }
    }

    /// The kernel's WGSL: its directives, the shared params, epilogue and
    /// loaders, then its own body.
    fn source(self) -> String {
        let loads = include_str!("conv2d_gemm_load.wgsl");
        let (enable, loads, body) = match self {
            Gemm::Tile64 => ("", "", include_str!("conv2d_gemm.wgsl")),
            Gemm::Wide { .. } => ("", loads, include_str!("conv2d_gemm_wide.wgsl")),
            Gemm::TensorCores => (
                "enable wgpu_cooperative_matrix;\n",
                loads,
                include_str!("conv2d_coop.wgsl"),
            ),
        };
        format!(
            "{enable}{}{}{loads}{body}",
            include_str!("conv2d_params.wgsl"),
            include_str!("conv2d_gemm_store.wgsl")
        )
    }

    fn spec(self, has_bias: bool, has_scale: bool, has_residual: bool) -> Specialization {
        let spec = match self {
            Gemm::Wide { along_k } => Specialization::new().bool("ALONG_K", along_k),
            Gemm::Tile64 | Gemm::TensorCores => Specialization::new(),
        };
        spec.code(&bias_and_output(has_bias, has_scale, has_residual))
    }
}

/// Binding declarations for the optional bias, input-channel scale and
/// residual, then the output (bound after the input and the filter, in that
/// order), with `fn bias(m)`, `fn in_scale(c)` and `fn residual(i)` (0, 1
/// and 0 where absent).
pub(super) fn bias_and_output(has_bias: bool, has_scale: bool, has_residual: bool) -> String {
    let mut binding = 3;
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
    s + &format!("@group(0) @binding({binding}) var<storage, read_write> y: array<T>;\n")
}

pub(super) fn conv2d(l: &mut Lowering, node: &Node, o: &Conv2dOptions) -> Result<()> {
    let (x, f, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let fd = l.ir.desc(f).clone();
    let yd = l.ir.desc(y).clone();
    let [_, _, h, w] = nchw(o.input_layout, shape4(&xd.shape));
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
        _pad: [0; 3],
    };
    let has_bias = node.op_inputs().len() > 2;
    let (has_scale, has_residual) = (node.input_scale, node.residual);
    if ocg >= GEMM_MIN_CHANNELS {
        // Pixel tiles of a large image can pass the 65535 workgroups a grid
        // dimension allows, so they are folded over x and (with the channel
        // tiles) y.
        let wide = pixels.div_ceil(WIDE_TILE_PIXELS) * channel_tiles * o.groups >= WIDE_MIN_TILES;
        let gemm = if !wide {
            Gemm::Tile64
        } else if xd.data_type == DataType::Float16
            && fd.data_type == DataType::Float16
            && l.target.f16_tensor_cores
        {
            Gemm::TensorCores
        } else {
            // Channel stride 1: NHWC.
            Gemm::Wide {
                along_k: params.x_strides[1] == 1,
            }
        };
        let pixel_tiles = pixels.div_ceil(gemm.tile_pixels());
        let x_tiles = pixel_tiles.min(65535);
        let source = gemm.source();
        return l.kernel(Kernel {
            label: "conv2d".into(),
            source: &source,
            spec: gemm.spec(has_bias, has_scale, has_residual),
            output_type: yd.data_type,
            input_type: xd.data_type,
            activations: &node.activations,
            params: Kernel::params(&params),
            table: None,
            inputs: node.inputs.clone(),
            outputs: vec![y],
            workgroups: [
                x_tiles as u32,
                (pixel_tiles.div_ceil(x_tiles) * channel_tiles) as u32,
                o.groups as u32,
            ],
            workgroup_size: 256,
        });
    }
    let source = format!(
        "{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d.wgsl")
    );
    l.kernel(Kernel {
        label: "conv2d".into(),
        source: &source,
        spec: Specialization::new().code(&bias_and_output(has_bias, has_scale, has_residual)),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: node.inputs.clone(),
        outputs: vec![y],
        workgroups: grid(total, WG),
        workgroup_size: WG,
    })
}
