//! conv2d: `choose.rs` picks one of the kernels in this folder from the
//! convolution's numbers, and [`conv2d`] emits it. An implicit-GEMM tiled
//! kernel when each group has several output channels (on tensor cores in
//! float16 where the adapter has them: `coop_direct.rs`, `coop_tile.rs`,
//! `coop_blocked.rs`, `coop_im2col.rs`; else `winograd.rs`, `gemm_split.rs`, `gemm_vec.rs`,
//! `gemm.rs`), each pixel's input channels split over lanes when a single
//! group has up to 16 over a long NHWC reduction (`split.rs`), one
//! invocation per output vec4 for a 1x1 over up to 16 NHWC input channels
//! (`pointwise.rs`), one small convolution per output phase for an input
//! read through a fused nearest upsample (`upsampled.rs`), one invocation
//! per output pixel when a single group has few outputs (up to 8, or an
//! RGB stem's up to 16, `narrow.rs`), else (depthwise, narrow groups) one
//! invocation per output element (`direct.rs`). A quantized conv2d
//! (`Op::QuantConv2d`, through [`quant_conv2d`]) takes `int8.rs`: int8
//! products on `dot4I8Packed`.
//! Layouts are not specialised in the shader text:
//! the lowering passes element strides of the input (in N, C, H, W order)
//! and of the filter (in O, I, H, W order), so every input/filter layout
//! pair shares one pipeline. `params.rs` and `tables.rs` hold what the
//! kernels share; no kernel file imports another (but `dwpw.rs`, the fused
//! depthwise + pointwise op, shares `gemm_split.rs`'s second pass, and
//! `coop_im2col.rs` runs `coop_direct.rs`'s kernel over its copy).

mod choose;
mod coop_blocked;
mod coop_direct;
pub(super) mod coop_im2col;
mod coop_tile;
mod direct;
pub(super) mod dwpw;
mod gemm;
mod gemm_split;
mod gemm_vec;
mod int8;
mod narrow;
mod params;
mod pointwise;
mod split;
mod tables;
mod upsampled;
mod winograd;

pub(crate) use choose::{tensor_cores_fill, TC_CHANNELS};

#[cfg(test)]
pub(super) use coop_blocked::Blocked;
#[cfg(test)]
pub(super) use coop_im2col as im2col_copy;
#[cfg(test)]
pub(super) use params::Params;
pub(super) use params::{activation_strides, bias_and_output, shape4, u32s};

use super::lower::Lowering;
use crate::error::{Error, Result};
use crate::ml::graph_ir::Node;
use crate::ml::ops::{Conv2dOptions, InputLayout};
use crate::ml::quant_conv::QuantConv2dOptions;
use crate::ml::types::DataType;
use choose::{choose, ConvKernel, ConvShape, CoopTile, Refused, Target};
use params::{folded, Conv, CoopTiles};

/// Lowers a conv2d node: its numbers, the kernel [`choose`] picks for them
/// and the device, then that kernel.
pub(super) fn conv2d(l: &mut Lowering, node: &Node, o: &Conv2dOptions) -> Result<()> {
    let c = Conv::new(l.ir, node, o);
    let kernel = choose(&conv_shape(&c), &target(l)).map_err(|refused| {
        let needs = match refused {
            Refused::Upsample => "an upsampled input needs the narrow or direct kernel",
        };
        Error::invalid(format!("conv2d of {}: {needs}", l.ir.label(c.x)))
    })?;
    match kernel {
        ConvKernel::Direct { lanes } => direct::emit(l, &c, lanes),
        ConvKernel::Depthwise { kh, kw } => direct::emit_depthwise(l, &c, kh, kw),
        ConvKernel::Narrow => narrow::emit(l, &c),
        ConvKernel::Upsampled(phases) => upsampled::emit(l, &c, phases),
        ConvKernel::Pointwise { vec4_input } => pointwise::emit(l, &c, vec4_input),
        ConvKernel::Split(split) => split::emit(l, &c, split),
        ConvKernel::Winograd(wino) => winograd::emit(l, &c, wino),
        ConvKernel::SplitGemm { splits } => {
            let tiles = [
                c.pixels.div_ceil(params::GEMM_TILE_PIXELS),
                c.channel_tiles,
                o.groups,
            ];
            gemm_split::split_gemm(l, node, c.params, splits, tiles, c.has_scale)
        }
        ConvKernel::VecGemm(tile) => gemm_vec::emit(l, &c, tile),
        ConvKernel::Gemm64 => gemm::emit(l, &c, None),
        ConvKernel::GemmWide { along_k } => gemm::emit(l, &c, Some(along_k)),
        ConvKernel::CoopBlocked(blocked, tile) => {
            coop_blocked::emit(l, &c, blocked, coop_tiles(&c, tile))
        }
        ConvKernel::CoopStaged(staged, tile) => {
            coop_tile::emit(l, &c, staged, coop_tiles(&c, tile))
        }
        ConvKernel::CoopDirect(tile, false, splits) => {
            coop_direct::emit(l, &c, coop_tiles(&c, tile), splits)
        }
        ConvKernel::CoopDirect(tile, true, splits) => {
            coop_direct::emit(l, &c, flat_tiles(&c, tile), splits)
        }
        ConvKernel::CoopIm2col(tile) => coop_im2col::emit(l, &c, flat_tiles(&c, tile)),
        ConvKernel::Int8 { .. } => Err(Error::invalid(format!(
            "conv2d of {}: the int8 kernel takes quantized convolutions only",
            l.ir.label(c.x)
        ))),
    }
}

/// Lowers a quantized conv2d (`Op::QuantConv2d`): the kernel [`choose`]
/// picks for its numbers.
pub(super) fn quant_conv2d(l: &mut Lowering, node: &Node, o: &QuantConv2dOptions) -> Result<()> {
    let c = &o.conv;
    let yd = l.ir.desc(node.outputs[0]);
    let [n, _, oh, ow] = crate::ml::shape::nchw(c.input_layout, shape4(&yd.shape));
    let [oc, icg, kh, kw] = o.filter_shape;
    let shape = ConvShape {
        nhwc: c.input_layout == InputLayout::Nhwc,
        channels_adjacent: c.input_layout == InputLayout::Nhwc,
        input_f16: l.ir.desc(node.inputs[0]).data_type == DataType::Float16,
        filter_f16: false,
        floats: false,
        groups: c.groups,
        icg,
        ocg: oc / c.groups,
        oc,
        kh,
        kw,
        strides: c.strides,
        dilations: c.dilations,
        padding: c.padding,
        oh,
        ow,
        images: n,
        has_bias: node.op_inputs().len() > 1,
        has_scale: false,
        has_residual: false,
        upsample: None,
        constant_filter: true,
        quantized: true,
    };
    match choose(&shape, &target(l)) {
        Ok(ConvKernel::Int8 { outputs }) => int8::emit(l, node, o, outputs),
        _ => Err(Error::invalid(format!(
            "quantConv2d of {}: no kernel computes it",
            l.ir.label(node.inputs[0])
        ))),
    }
}

/// The numbers [`choose`] reads of a conv2d node.
fn conv_shape(c: &Conv) -> ConvShape {
    let o = c.o;
    ConvShape {
        nhwc: o.input_layout == InputLayout::Nhwc,
        channels_adjacent: c.params.x_strides[1] == 1,
        input_f16: c.xd.data_type == DataType::Float16,
        filter_f16: c.fd.data_type == DataType::Float16,
        floats: c.floats,
        groups: o.groups,
        icg: c.icg,
        ocg: c.ocg,
        oc: c.params.oc as usize,
        kh: c.kh,
        kw: c.kw,
        strides: o.strides,
        dilations: o.dilations,
        padding: o.padding,
        oh: c.oh,
        ow: c.ow,
        images: c.images(),
        has_bias: c.has_bias,
        has_scale: c.has_scale,
        has_residual: c.has_residual,
        upsample: c.node.input_upsample,
        constant_filter: c.filter.is_some(),
        quantized: false,
    }
}

/// What [`choose`] reads of the device: a recording lowering (tests) has
/// no limits.
fn target(l: &Lowering) -> Target {
    let limits = l.limits();
    Target {
        f16_tensor_cores: l.target.f16_tensor_cores,
        max_binding: limits
            .as_ref()
            .map_or(u64::MAX, |l| l.max_storage_buffer_binding_size),
        max_invocations: limits
            .as_ref()
            .map_or(u32::MAX, |l| l.max_compute_invocations_per_workgroup),
        max_workgroup_x: limits
            .as_ref()
            .map_or(u32::MAX, |l| l.max_compute_workgroup_size_x),
        max_workgroup_bytes: limits
            .as_ref()
            .map_or(u32::MAX, |l| l.max_compute_workgroup_storage_size),
    }
}

/// [`coop_tiles`] for a 1x1 stride-1 NHWC convolution run over all its
/// images' pixels as one output row (`choose.rs`'s `flat_pixels`; and the
/// 1x1 over an im2col copy, `coop_im2col.rs`): one
/// image of 1 x pixels, whose pixel k is x's pixel k (x's strides stay: row
/// and image are always 0).
fn flat_tiles(c: &Conv, tile: CoopTile) -> CoopTiles {
    let pixels = c.pixels;
    let tiles = coop_tiles(c, tile);
    let run = tile.run(pixels);
    let channel_tiles = tiles.params.channel_tiles as usize;
    CoopTiles {
        params: params::Params {
            oh: 1,
            ow: pixels as u32,
            ohw: pixels as u32,
            h: 1,
            w: pixels as u32,
            ..tiles.params
        },
        run,
        run_grid: folded(pixels.div_ceil(run), channel_tiles, c.o.groups),
        ..tiles
    }
}

/// The tensor-core kernels' filter, padded to whole 16 x 16 blocks and to
/// whole channel tiles of `tile`, and their params and grid of row runs.
fn coop_tiles(c: &Conv, tile: CoopTile) -> CoopTiles {
    let tile_channels = 16 * tile.blocks as usize;
    let ocp = c.ocg.next_multiple_of(tile_channels);
    let channel_tiles = ocp / tile_channels;
    let run = tile.run(c.ow);
    let runs = c.images() * c.oh * c.ow.div_ceil(run);
    let bytes = c.filter.unwrap_or_default();
    let icp = c.icg.next_multiple_of(16);
    CoopTiles {
        blocks: tile.blocks,
        pairs: tile.pairs,
        params: params::Params {
            ocp: ocp as u32,
            channel_tiles: channel_tiles as u32,
            ..c.params
        },
        table: tables::blocked_filter(bytes, c.o, shape4(&c.fd.shape), icp, ocp),
        run,
        run_grid: folded(runs, channel_tiles, c.o.groups),
    }
}
