//! conv2d_gemm.wgsl with its reduction split over workgroups, and
//! conv2d_gemm_sum.wgsl adding up the runs (see the shaders' headers;
//! choose.rs decides when). The fused depthwise + pointwise kernel splits
//! its reduction the same way and shares the second pass
//! (conv2d/dwpw.rs).
//!
//! Why: a small map with many channels makes few 64 x 64 tiles, each
//! walking a long reduction alone. ResNet-50 from ONNX (NCHW) on an H100:
//! its 3x3 512 -> 512 on 7x7 ran as 8 workgroups over 4608 rows, 0.66 ms
//! for 0.23 GFLOP, and its 14x14 ones 16 workgroups, 0.33 ms: the three
//! stages' 3x3 convolutions were 4 of the model's 8 ms.

use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::{Node, OperandId};
use crate::ml::types::DataType;

use super::super::lower::{grid, Kernel, Lowering, ScratchId};
use super::params::{bindings_after, folded, Params, LARGE_GPU_MULTIPROCESSORS};

/// From this many 64 x 64 tiles an image the reduction is not split: half
/// the multiprocessors of a large GPU.
const MIN_TILES: usize = LARGE_GPU_MULTIPROCESSORS / 2;
/// Workgroups the splits aim for: two a multiprocessor.
const TARGET_WORKGROUPS: usize = 2 * LARGE_GPU_MULTIPROCESSORS;
/// Slices of 16 reduction rows a run has at least, so that its partial
/// sums (written and read once more) stay a small share of its work.
const MIN_SLICES: usize = 4;
const MAX_SPLITS: usize = 64;
const MIN_SPLITS: usize = 4;
/// Reduction rows of a slice (conv2d_gemm.wgsl's TK).
const SLICE: usize = 16;

/// Runs to cut a reduction of `kdim` rows into, for an image of
/// `image_tiles` tiles (counted per image, so that a batch splits as its
/// images do alone); 1: not split.
pub(super) fn splits(image_tiles: usize, kdim: usize) -> usize {
    splits_of(image_tiles, kdim, MIN_SLICES)
}

/// [`splits`] with runs of at least `min_slices` slices.
pub(super) fn splits_of(image_tiles: usize, kdim: usize, min_slices: usize) -> usize {
    if image_tiles >= MIN_TILES {
        return 1;
    }
    let splits = TARGET_WORKGROUPS
        .div_ceil(image_tiles.max(1))
        .min(kdim.div_ceil(SLICE) / min_slices)
        .min(MAX_SPLITS);
    // Fewer runs than MIN_SPLITS leave the reduction whole: two runs of a
    // 56x56 map's 144 rows (pose_detection.tflite) gained nothing.
    if splits < MIN_SPLITS {
        1
    } else {
        splits
    }
}

/// The partial sums' buffer: `splits` x the output's `total` elements,
/// float32.
pub(super) fn scratch_bytes(splits: usize, total: usize) -> u64 {
    (splits * total * 4) as u64
}

/// The two passes for a conv2d node: `tiles` = [pixel tiles, channel
/// tiles, groups] of 64 x 64; `has_scale`: a fused input scale (the bias
/// and residual come from the node, for the second pass).
pub(super) fn split_gemm(
    l: &mut Lowering,
    node: &Node,
    params: Params,
    splits: usize,
    [pixel_tiles, channel_tiles, groups]: [usize; 3],
    has_scale: bool,
) -> Result<()> {
    let (x, f, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let (xd, yd) = (l.ir.desc(x).clone(), l.ir.desc(y).clone());
    let total = params.total as usize;
    let scratch = l.scratch(scratch_bytes(splits, total))?;
    let conv_params = include_str!("conv2d_params.wgsl");
    // x, the filter and any input scale, then the partial sums.
    let mut inputs = vec![x, f];
    inputs.extend(node.input_scale());
    let mut code = String::new();
    if has_scale {
        code += "@group(0) @binding(3) var<storage, read> s: array<TI>;\n\
                 fn in_scale(c: u32) -> f32 { return f32(s[c]); }\n";
    } else {
        code += "fn in_scale(c: u32) -> f32 { return 1.0; }\n";
    }
    code += &format!(
        "@group(0) @binding({}) var<storage, read_write> part: array<f32>;\n",
        3 + has_scale as usize
    );
    code += "fn emit(pp: u32, m: u32, step: u32, g: u32, v: vec4<f32>) {\n\
             \x20   if pp >= params.pixels {\n        return;\n    }\n\
             \x20   for (var j = 0u; j < 4u; j++) {\n\
             \x20       let mj = m + step * j;\n\
             \x20       if mj < params.ocg {\n\
             \x20           part[split * params.total + (g * params.ocg + mj) * params.pixels + pp] = v[j];\n\
             \x20       }\n    }\n}\n";
    let partial = l.kernel_with_scratch(
        Kernel {
            label: "conv2d".into(),
            source: &format!("{conv_params}{}", include_str!("conv2d_gemm.wgsl")),
            spec: Specialization::new()
                .u32("SPLITS", splits as u32)
                .code(&code),
            output_type: yd.data_type,
            input_type: xd.data_type,
            activations: &[],
            params: Kernel::params(&params),
            table: None,
            inputs,
            outputs: vec![],
            workgroups: folded(pixel_tiles, channel_tiles, groups * splits),
            workgroup_size: 256,
        },
        scratch,
    );
    let sum = partial.and_then(|()| {
        let bias = node.op_inputs().get(2).copied();
        let io = (xd.data_type, yd.data_type);
        sum_pass(
            l,
            scratch,
            splits,
            params,
            (bias, node.residual(), y),
            io,
            node,
        )
    });
    l.release_scratch(scratch);
    sum
}

/// The second pass over `scratch`'s `splits` runs of partial sums
/// (conv2d_gemm_sum.wgsl) into `y`, with any `bias` (per output channel)
/// and `residual`, then `node`'s activations. `params` needs total,
/// pixels, oc, ohw and nhwc; `io` is the input and output data types.
pub(super) fn sum_pass(
    l: &mut Lowering,
    scratch: ScratchId,
    splits: usize,
    params: Params,
    (bias, residual, y): (Option<OperandId>, Option<OperandId>, OperandId),
    (input_type, output_type): (DataType, DataType),
    node: &Node,
) -> Result<()> {
    const WG: u32 = 256;
    let (bindings, next) = bindings_after(1, bias.is_some(), false, residual.is_some(), "T");
    l.kernel_with_scratch(
        Kernel {
            label: format!("{} sum", node.op.name()),
            source: &format!(
                "{}{}",
                include_str!("conv2d_params.wgsl"),
                include_str!("conv2d_gemm_sum.wgsl")
            ),
            spec: Specialization::new()
                .u32("SPLITS", splits as u32)
                .code(&bindings)
                .code(super::params::finish(node.late_residual))
                .code(&format!(
                    "@group(0) @binding({next}) var<storage, read> part: array<f32>;"
                )),
            output_type,
            input_type,
            activations: &node.activations,
            params: Kernel::params(&params),
            table: None,
            inputs: bias.into_iter().chain(residual).collect(),
            outputs: vec![y],
            workgroups: grid(params.total as usize, WG),
            workgroup_size: WG,
        },
        scratch,
    )
}

#[cfg(test)]
mod tests {
    use super::{splits, splits_of};

    #[test]
    fn few_tiles_over_long_reductions_split_into_runs_of_at_least_4_slices() {
        // ResNet-50's 3x3 on 7x7 (1 pixel tile x 8 channel tiles, 4608
        // rows): 33 runs, 264 workgroups.
        assert_eq!(splits(8, 4608), 33);
        // Its 14x14 (4 x 4 tiles, 2304 rows): 17.
        assert_eq!(splits(16, 2304), 17);
        // A short reduction: runs of 4 slices, 64 rows, at least 4 runs.
        assert_eq!(splits(8, 256), 4);
        assert_eq!(splits(8, 255), 4);
        assert_eq!(splits(8, 239), 1);
        assert_eq!(splits(49, 144), 1);
        // One tile over a very long one: at most 64.
        assert_eq!(splits(1, 65536), 64);
        // Enough tiles: no split.
        assert_eq!(splits(66, 4608), 1);
        assert_eq!(splits(65, 4608), 5);
        // The depthwise + pointwise kernel's runs of one slice:
        // MobileNetV3's 14x14 pair over 184 channels (4 x 2 tiles) in 12.
        assert_eq!(splits_of(8, 184, 1), 12);
        assert_eq!(splits_of(8, 48, 1), 1);
    }
}
