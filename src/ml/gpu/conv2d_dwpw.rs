//! A fused depthwise + pointwise conv2d pair (`Op::DepthwisePointwise`,
//! made by `ml::fuse`) as one implicit-GEMM kernel whose A loader computes
//! the depthwise values: one kernel where there were two, and the depthwise
//! result is neither written nor read back.

use super::conv2d::{activation_strides, filter_strides, shape4, u32s};
use super::lower::{activation_fn, activation_helpers, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
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

pub(super) fn depthwise_pointwise(
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
    // Bindings after x and the depthwise filter, in the node's input order.
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
    declare(o.pointwise_bias, "pwb", "TI", "bias", "m", "0.0");
    declare(node.input_scale, "s", "TI", "in_scale", "c", "1.0");
    declare(node.residual, "r", "T", "residual", "i", "0.0");
    decls += &format!("@group(0) @binding({binding}) var<storage, read_write> y: array<T>;\n");
    let spec = activation_helpers(
        Specialization::new(),
        &o.depthwise_activations,
        &node.activations,
    );
    let spec = activation_fn(spec, "act_dw", "ACT_DW", &o.depthwise_activations).code(&decls);
    let pixel_tiles = pixels.div_ceil(TILE_PIXELS);
    let x_tiles = pixel_tiles.clamp(1, 65535);
    l.kernel(Kernel {
        label: "depthwisePointwise".into(),
        source: include_str!("conv2d_dwpw.wgsl"),
        spec,
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs: node.inputs.clone(),
        outputs: vec![y],
        workgroups: [
            x_tiles as u32,
            (pixel_tiles.div_ceil(x_tiles) * channel_tiles).max(1) as u32,
            1,
        ],
        workgroup_size: 256,
    })
}
