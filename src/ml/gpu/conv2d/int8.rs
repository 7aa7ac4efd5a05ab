//! `conv2d_int8.wgsl`: a quantized conv2d (`Op::QuantConv2d`) computing in
//! int8: the input quantized as it is loaded and packed four channels to a
//! u32, the filter packed likewise at build, each pair of words multiplied
//! and summed by WGSL's `dot4I8Packed` into an i32 (naga's
//! `packed_4x8_integer_dot_product` language extension, which every wgpu
//! 30 device takes: on Vulkan it is `OpSDot` where the device has
//! VK_KHR_shader_integer_dot_product, core in 1.3, and four bit-field
//! extracts and multiplies otherwise), then scaled into float
//! (`ml/quant_conv.rs`). One invocation computes `outputs` channels of a
//! pixel, so that each input word is loaded and quantized once for them.

use super::super::lower::{grid, kernel_params, Kernel, Lowering};
use super::params::{activation_strides, bindings_after, shape4, u32s, WG};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::quant_conv::QuantConv2dOptions;
use crate::ml::shape::nchw;

kernel_params! {
    /// `struct Params` of conv2d_int8.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    pub(in crate::ml::gpu) struct Params {
        pub(in crate::ml::gpu) x_strides: [u32; 4],
        pub(in crate::ml::gpu) y_strides: [u32; 4],
        pub(in crate::ml::gpu) stride: [u32; 2],
        pub(in crate::ml::gpu) dilation: [u32; 2],
        pub(in crate::ml::gpu) padding: [u32; 2],
        pub(in crate::ml::gpu) filter_size: [u32; 2],
        pub(in crate::ml::gpu) h: u32,
        pub(in crate::ml::gpu) w: u32,
        pub(in crate::ml::gpu) oh: u32,
        pub(in crate::ml::gpu) ow: u32,
        pub(in crate::ml::gpu) pixels: u32,
        pub(in crate::ml::gpu) icg: u32,
        pub(in crate::ml::gpu) ocg: u32,
        pub(in crate::ml::gpu) words: u32,
        pub(in crate::ml::gpu) blocks: u32,
        pub(in crate::ml::gpu) inv_scale: f32,
        pub(in crate::ml::gpu) zero: i32,
        pub(in crate::ml::gpu) lo: i32,
        pub(in crate::ml::gpu) hi: i32,
        pub(in crate::ml::gpu) offset: i32,
        pub(in crate::ml::gpu) scales_at: u32,
        pub(in crate::ml::gpu) corrections_at: u32,
        pub(in crate::ml::gpu) zeros_at: u32,
        pub(in crate::ml::gpu) _pad: [u32; 3],
    }
}

/// The kernel's table: the filter packed as [oc][kh][kw][words], four
/// input channels of the group a word (zero past them), then per output
/// channel its scale, its zero-point correction and its filter zero point,
/// and where those three start.
fn table(o: &QuantConv2dOptions) -> (Vec<u32>, [u32; 3]) {
    let [oc, icg, kh, kw] = o.filter_shape;
    let taps = kh * kw;
    let words = icg.div_ceil(4);
    let mut t = vec![0u32; oc * taps * words];
    for m in 0..oc {
        for i in 0..icg {
            for tap in 0..taps {
                let v = o.filter[(m * icg + i) * taps + tap] as u8 as u32;
                t[(m * taps + tap) * words + i / 4] |= v << (8 * (i % 4));
            }
        }
    }
    let scales_at = t.len() as u32;
    t.extend(o.channel_scales().iter().map(|s| s.to_bits()));
    let corrections_at = t.len() as u32;
    t.extend(o.corrections().iter().map(|&c| c as u32));
    let zeros_at = t.len() as u32;
    t.extend(o.filter_zero.iter().map(|&z| z as u32));
    (t, [scales_at, corrections_at, zeros_at])
}

/// Emits the kernel for `node`, `outputs` channels an invocation.
pub(super) fn emit(
    l: &mut Lowering,
    node: &Node,
    o: &QuantConv2dOptions,
    outputs: u32,
) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let (xd, yd) = (l.ir.desc(x).clone(), l.ir.desc(y).clone());
    let c = &o.conv;
    let [_, _, h, w] = nchw(c.input_layout, shape4(&xd.shape));
    let [_, _, oh, ow] = nchw(c.input_layout, shape4(&yd.shape));
    let [oc, icg, kh, kw] = o.filter_shape;
    let ocg = oc / c.groups;
    let pixels = yd.element_count() / oc;
    let blocks = ocg.div_ceil(outputs as usize);
    let (table, [scales_at, corrections_at, zeros_at]) = table(o);
    let (lo, hi, offset) = o.input_range();
    let params = Params {
        x_strides: activation_strides(c.input_layout, shape4(&xd.shape)),
        y_strides: activation_strides(c.input_layout, shape4(&yd.shape)),
        stride: u32s(c.strides),
        dilation: u32s(c.dilations),
        padding: u32s([c.padding[0], c.padding[2]]),
        filter_size: u32s([kh, kw]),
        h: h as u32,
        w: w as u32,
        oh: oh as u32,
        ow: ow as u32,
        pixels: pixels as u32,
        icg: icg as u32,
        ocg: ocg as u32,
        words: icg.div_ceil(4) as u32,
        blocks: blocks as u32,
        inv_scale: o.inv_scale(),
        zero: o.input_zero,
        lo,
        hi,
        offset,
        scales_at,
        corrections_at,
        zeros_at,
        _pad: [0; 3],
    };
    let has_bias = node.op_inputs().len() > 1;
    let (bindings, next) = bindings_after(2, has_bias, false, false, "T");
    let spec = Specialization::new()
        .u32("B", outputs)
        .bool("INPUT_SUM", o.needs_input_sum())
        .code("@group(0) @binding(1) var<storage, read> x: array<TI>;")
        .code(&bindings)
        .code(&format!(
            "@group(0) @binding({next}) var<storage, read> wt: array<u32>;"
        ));
    let [gx, gy, _] = grid(pixels, WG);
    l.kernel(Kernel {
        label: "quantConv2d".into(),
        source: include_str!("conv2d_int8.wgsl"),
        spec,
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &node.activations,
        params: Kernel::params(&params),
        table: Some(table),
        inputs: node.op_inputs().to_vec(),
        outputs: vec![y],
        workgroups: [gx, gy, (blocks * c.groups) as u32],
        workgroup_size: WG,
    })
}
