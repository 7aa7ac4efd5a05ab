//! A fused depthwise + pointwise conv2d pair (`Op::DepthwisePointwise`,
//! made by `ml::fuse`) as one implicit-GEMM kernel whose A loader computes
//! the depthwise values: one kernel where there were two, and the depthwise
//! result is neither written nor read back.

use super::super::lower::{activation_fn, activation_helpers, kernel_params, Kernel, Lowering};
use super::gemm_split;
use super::params::{activation_strides, filter_strides, shape4, u32s};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::{Node, OperandId};
use crate::ml::ops::{DepthwisePointwiseOptions, InputLayout};
use crate::ml::shape::{conv_filter_ochw, nchw};

const TILE_PIXELS: usize = 64;
const TILE_CHANNELS: usize = 64;

kernel_params! {
    /// `struct Params` of conv2d_dwpw.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        x_strides: [u32; 4],
        f_strides: [u32; 4],
        stride: [u32; 2],
        dilation: [u32; 2],
        padding: [u32; 2],
        filter_size: [u32; 2],
        pixels: u32,
        oc: u32,
        c: u32,
        mult: u32,
        ow: u32,
        ohw: u32,
        nhwc: u32,
        h: u32,
        w: u32,
        pw_so: u32,
        pw_si: u32,
        channel_tiles: u32,
    }
}

pub(in crate::ml::gpu) fn depthwise_pointwise(
    l: &mut Lowering,
    node: &Node,
    o: &DepthwisePointwiseOptions,
) -> Result<()> {
    let d = &o.depthwise;
    let (x, dwf, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(y).clone();
    let [_, _, h, w] = nchw(d.input_layout, shape4(&xd.shape));
    let fshape = shape4(&l.ir.desc(dwf).shape);
    let [c, _, kh, kw] = conv_filter_ochw(d.filter_layout, fshape);
    let [_, oc, oh, ow] = nchw(d.input_layout, shape4(&yd.shape));
    let pixels = yd.element_count() / oc;
    let [pw_so, pw_si] = o.pointwise_filter_layout.pointwise_strides(oc, c);
    let channel_tiles = oc.div_ceil(TILE_CHANNELS);
    let params = Params {
        x_strides: activation_strides(d.input_layout, shape4(&xd.shape)),
        f_strides: filter_strides(d.filter_layout, fshape),
        stride: u32s(d.strides),
        dilation: u32s(d.dilations),
        padding: u32s([d.padding[0], d.padding[2]]),
        filter_size: u32s([kh, kw]),
        pixels: pixels as u32,
        oc: oc as u32,
        c: c as u32,
        mult: (c / d.groups) as u32,
        ow: ow as u32,
        ohw: (oh * ow) as u32,
        nhwc: (d.input_layout == InputLayout::Nhwc) as u32,
        h: h as u32,
        w: w as u32,
        pw_so: pw_so as u32,
        pw_si: pw_si as u32,
        channel_tiles: channel_tiles as u32,
    };
    // Few tiles an image (a 14x14 map makes 8): the reduction over the
    // depthwise channels split over workgroups, in runs of a slice or more
    // (each slice computes 16 depthwise channels of 64 pixels), then added
    // up by conv2d/gemm_split.rs's second pass. On an H100: MediaPipe's
    // hand_landmark_lite 3.73 -> 0.63 ms, pose_detection 7.81 -> 1.38,
    // MobileNetV3-Large (ONNX) 1.19-1.87 -> 0.90.
    let image_tiles = (oh * ow).div_ceil(TILE_PIXELS) * channel_tiles;
    let total = pixels * oc;
    let splits = Some(gemm_split::splits_of(image_tiles, c, 1))
        .filter(|&s| l.can_bind(gemm_split::scratch_bytes(s, total)))
        .unwrap_or(1);
    // Bindings after x and the depthwise filter, in the node's input order;
    // split, the first pass binds those up to the pointwise filter and the
    // input scale, then the partial sums.
    let split = splits > 1;
    let mut decls = String::new();
    let mut binding = 3;
    let mut declare = |present: bool, buf: &str, ty: &str, f: &str, i: &str, absent: &str| {
        if present {
            decls += &format!(
                "@group(0) @binding({binding}) var<storage, read> {buf}: array<{ty}>;\n\
                 fn {f}({i}: u32) -> f32 {{ return f32({buf}[{i}]); }}\n"
            );
            binding += 1;
        } else {
            decls += &format!("fn {f}({i}: u32) -> f32 {{ return {absent}; }}\n");
        }
    };
    declare(o.depthwise_bias, "dwb", "TI", "dw_bias", "m", "0.0");
    declare(true, "pwf", "TI", "pw_weight", "at", "0.0");
    declare(o.pointwise_bias && !split, "pwb", "TI", "bias", "m", "0.0");
    declare(node.input_scale, "s", "TI", "in_scale", "c", "1.0");
    declare(node.residual && !split, "r", "T", "residual", "i", "0.0");
    if split {
        decls += &format!(
            "@group(0) @binding({binding}) var<storage, read_write> part: array<f32>;\n\
             fn store(pp: u32, mj: u32, v: f32) {{\n\
             \x20   if pp < params.pixels && mj < params.oc {{\n\
             \x20       part[(split * params.oc + mj) * params.pixels + pp] = v;\n    }}\n}}\n"
        );
    } else {
        decls += &format!(
            "@group(0) @binding({binding}) var<storage, read_write> y: array<T>;\n\
             fn store(pp: u32, mj: u32, v: f32) {{\n\
             \x20   if pp >= params.pixels || mj >= params.oc {{\n        return;\n    }}\n\
             \x20   let oc = params.oc;\n\
             \x20   let at = select((pp / params.ohw * oc + mj) * params.ohw + pp % params.ohw, \
             pp * oc + mj, params.nhwc != 0u);\n\
             \x20   y[at] = T(act(v + bias(mj) + residual(at)));\n}}\n"
        );
    }
    let spec = activation_helpers(
        Specialization::new(),
        &o.depthwise_activations,
        &node.activations,
    );
    let spec = activation_fn(spec, "act_dw", "ACT_DW", &o.depthwise_activations).code(&decls);
    let spec = spec.u32("SPLITS", splits as u32);
    let pixel_tiles = pixels.div_ceil(TILE_PIXELS);
    let x_tiles = pixel_tiles.clamp(1, 65535);
    let workgroups = [
        x_tiles as u32,
        (pixel_tiles.div_ceil(x_tiles) * channel_tiles).max(1) as u32,
        splits as u32,
    ];
    let kernel = |inputs: Vec<OperandId>, outputs: Vec<OperandId>, activations| Kernel {
        label: "depthwisePointwise".into(),
        source: include_str!("conv2d_dwpw.wgsl"),
        spec: spec.clone(),
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations,
        params: Kernel::params(&params),
        table: None,
        inputs,
        outputs,
        workgroups,
        workgroup_size: 256,
    };
    if !split {
        return l.kernel(kernel(node.inputs.clone(), vec![y], &node.activations));
    }
    // x, the depthwise filter and bias, the pointwise filter, the scale.
    let pwf_at = 2 + o.depthwise_bias as usize;
    let mut inputs = node.inputs[..=pwf_at].to_vec();
    inputs.extend(node.input_scale());
    let pointwise_bias = o.pointwise_bias.then(|| node.inputs[pwf_at + 1]);
    let scratch = l.scratch(gemm_split::scratch_bytes(splits, total))?;
    let partial = l.kernel_with_scratch(kernel(inputs, vec![], &[]), scratch);
    let sum = partial.and_then(|()| {
        // What the sum pass reads of conv2d's params.
        let sum_params = super::params::Params {
            total: total as u32,
            pixels: pixels as u32,
            oc: oc as u32,
            ohw: (oh * ow) as u32,
            nhwc: params.nhwc,
            ..bytemuck::Zeroable::zeroed()
        };
        let io = (xd.data_type, yd.data_type);
        let outs = (pointwise_bias, node.residual(), y);
        gemm_split::sum_pass(l, scratch, splits, sum_params, outs, io, node)
    });
    l.release_scratch(scratch);
    sum
}
