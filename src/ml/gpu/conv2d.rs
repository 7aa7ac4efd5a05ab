//! conv2d: an implicit-GEMM tiled kernel when each group has several output
//! channels, else (depthwise) one invocation per output element. Layouts are not specialised in
//! the shader text: the lowering passes element strides of the input (in
//! N, C, H, W order) and of the filter (in O, I, H, W order), so every
//! input/filter layout pair shares one pipeline.

use super::lower::{grid, Kernel, Lowering};
use crate::error::Result;
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

pub(super) fn shape4(s: &[usize]) -> [usize; 4] {
    [s[0], s[1], s[2], s[3]]
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

    fn source(self, has_bias: bool, has_scale: bool, has_residual: bool) -> String {
        let loads = include_str!("conv2d_gemm_load.wgsl");
        let (enable, loads, body) = match self {
            Gemm::Tile64 => ("", "", include_str!("conv2d_gemm.wgsl").to_string()),
            Gemm::Wide { along_k } => (
                "",
                loads,
                format!("const ALONG_K: bool = {along_k};\n")
                    + include_str!("conv2d_gemm_wide.wgsl"),
            ),
            Gemm::TensorCores => (
                "enable wgpu_cooperative_matrix;\n",
                loads,
                include_str!("conv2d_coop.wgsl").to_string(),
            ),
        };
        format!(
            "{enable}{}{}{loads}{body}",
            bias_and_output(has_bias, has_scale, has_residual),
            include_str!("conv2d_gemm_store.wgsl")
        )
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
    let mut params: Vec<u32> = [
        total,
        oc,
        oh,
        ow,
        (o.input_layout == InputLayout::Nhwc) as usize,
        h,
        w,
        icg,
        kh,
        kw,
        o.strides[0],
        o.strides[1],
        o.dilations[0],
        o.dilations[1],
        o.padding[0],
        o.padding[2],
        oc / o.groups,
    ]
    .iter()
    .map(|&v| v as u32)
    .collect();
    params.extend(activation_strides(o.input_layout, shape4(&xd.shape)));
    params.extend(filter_strides(o.filter_layout, shape4(&fd.shape)));
    let has_bias = node.op_inputs().len() > 2;
    let (has_scale, has_residual) = (node.input_scale, node.residual);
    let ocg = oc / o.groups;
    if ocg >= GEMM_MIN_CHANNELS {
        let pixels = total / oc;
        params[0] = pixels as u32;
        params[2] = (oh * ow) as u32;
        params.push((icg * kh * kw) as u32);
        // Pixel tiles of a large image can pass the 65535 workgroups a grid
        // dimension allows, so they are folded over x and (with the channel
        // tiles) y.
        let channel_tiles = ocg.div_ceil(GEMM_TILE_CHANNELS);
        let wide = pixels.div_ceil(WIDE_TILE_PIXELS) * channel_tiles * o.groups >= WIDE_MIN_TILES;
        let gemm = if !wide {
            Gemm::Tile64
        } else if xd.data_type == DataType::Float16
            && fd.data_type == DataType::Float16
            && l.gpu.has_f16_tensor_cores()
        {
            Gemm::TensorCores
        } else {
            // Channel stride 1: NHWC.
            Gemm::Wide {
                along_k: params[18] == 1,
            }
        };
        let pixel_tiles = pixels.div_ceil(gemm.tile_pixels());
        let x_tiles = pixel_tiles.min(65535);
        params.push(channel_tiles as u32);
        let source = gemm.source(has_bias, has_scale, has_residual);
        return l.kernel(Kernel {
            label: "conv2d".into(),
            source: &source,
            output_type: yd.data_type,
            input_type: xd.data_type,
            activations: &node.activations,
            params,
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
    let source = bias_and_output(has_bias, has_scale, has_residual) + include_str!("conv2d.wgsl");
    l.kernel(Kernel {
        label: "conv2d".into(),
        source: &source,
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params,
        inputs: node.inputs.clone(),
        outputs: vec![y],
        workgroups: grid(total, WG),
        workgroup_size: WG,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ml::gpu::lower::kernel_source;
    use wgpu::naga;

    /// Every implicit-GEMM kernel, in every binding combination and element
    /// type, is valid WGSL that translates to SPIR-V. The tensor-core kernel
    /// needs cooperative matrices, which lavapipe lacks: this is what CI can
    /// check of it without such a GPU (the device run checks its numbers).
    #[test]
    fn gemm_kernels_validate_and_translate_to_spirv() {
        let caps = naga::valid::Capabilities::SHADER_FLOAT16
            | naga::valid::Capabilities::COOPERATIVE_MATRIX;
        for gemm in [
            Gemm::Tile64,
            Gemm::Wide { along_k: false },
            Gemm::Wide { along_k: true },
            Gemm::TensorCores,
        ] {
            for flags in 0..8u8 {
                let [b, s, r] = [1, 2, 4].map(|bit| flags & bit != 0);
                let types: &[(DataType, DataType)] = match gemm {
                    Gemm::TensorCores => &[
                        (DataType::Float16, DataType::Float16),
                        (DataType::Float32, DataType::Float16),
                    ],
                    _ => &[
                        (DataType::Float32, DataType::Float32),
                        (DataType::Float16, DataType::Float16),
                    ],
                };
                for &(output_type, input_type) in types {
                    let body = gemm.source(b, s, r);
                    let src = kernel_source(&Kernel {
                        label: "conv2d".into(),
                        source: &body,
                        output_type,
                        input_type,
                        activations: &[],
                        params: vec![],
                        inputs: vec![],
                        outputs: vec![],
                        workgroups: [1, 1, 1],
                        workgroup_size: 256,
                    });
                    let what = format!("{gemm:?} bias {b} scale {s} residual {r} {output_type:?}");
                    let module = naga::front::wgsl::parse_str(&src)
                        .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(&src)));
                    let info =
                        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
                            .validate(&module)
                            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
                    naga::back::spv::write_vec(&module, &info, &Default::default(), None)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                }
            }
        }
    }
}
