//! A fused squeeze-and-excitation node (`Op::SqueezeExcite`, made by
//! `ml::fuse`) as one kernel: the channel means, summed by several
//! workgroups per image where the image is large, then the layers, run by
//! the last of them. Separately, the global pool and each 1x1 convolution
//! on one pixel were a kernel each, and on a large GPU a kernel costs its
//! dispatch and barrier (about 8 us on an H100) however little it computes.

use super::lower::{activation_fn, activation_helpers, grid, kernel_params, Kernel, Lowering};
use crate::error::{Error, Result};
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::ops::{InputLayout, SqueezeExciteOptions, SQUEEZE_EXCITE_MAX_CHANNELS};
use crate::ml::shape::{conv_filter_ochw, nchw};

const WG: u32 = 256;

/// Elements of the image each workgroup sums (when there are enough for
/// more than one): eight per invocation, one round of the kernel's eight
/// loads in flight. On an H100, one workgroup per image took 22 us for
/// selfie's 128x128x16 decoder image (and 5-10 us for its 16x16x128 ones).
const ELEMENTS_PER_WORKGROUP: usize = 8 * WG as usize;

/// The most workgroups per image: the last one adds up `c` sums from each.
const MAX_CHUNKS: usize = 256;

/// (workgroups per image, pixels each sums) for an image of `hw` pixels of
/// `c` channels.
pub(crate) fn chunks(hw: usize, c: usize) -> (usize, usize) {
    let mut chunk = ELEMENTS_PER_WORKGROUP.div_ceil(c.max(1)).max(1);
    if hw.div_ceil(chunk) > MAX_CHUNKS {
        chunk = hw.div_ceil(MAX_CHUNKS);
    }
    let chunk = chunk.min(hw.max(1));
    (hw.div_ceil(chunk).max(1), chunk)
}

kernel_params! {
    /// `struct Params` of squeeze_excite.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        hw: u32,
        c: u32,
        pixel_stride: u32,
        channel_stride: u32,
        cw: u32,
        lanes: u32,
        nhwc: u32,
        inv_hw: f32,
        images: u32,
        chunks: u32,
        chunk: u32,
        _pad: u32,
        layer0: [u32; 4],
        layer1: [u32; 4],
    }
}

pub(super) fn squeeze_excite(
    l: &mut Lowering,
    node: &Node,
    o: &SqueezeExciteOptions,
) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let yd = l.ir.desc(y).clone();
    let s = &xd.shape;
    let [n, c, h, w] = nchw(o.layout, [s[0], s[1], s[2], s[3]]);
    let hw = h * w;
    let nhwc = o.layout == InputLayout::Nhwc;
    // A pass covers whole channels' pixels in NCHW, whole pixels' channels
    // in NHWC, as far as a workgroup goes. At least two channels a pass:
    // with one (cw = 1), lavapipe summed only channel 0 of an image split
    // over several workgroups (the others came out 0), for a reason not
    // found in the kernel; two cost nothing where a pass is all pixels.
    let (cw, lanes) = if nhwc {
        let cw = c.next_power_of_two().clamp(2, WG as usize) as u32;
        (cw, WG / cw)
    } else {
        let lanes = hw.next_power_of_two().min(WG as usize / 2) as u32;
        (WG / lanes, lanes)
    };
    if o.layers.is_empty() || o.layers.len() > 2 {
        return Err(Error::invalid(format!(
            "{} layers, where the kernel takes one or two",
            o.layers.len()
        )));
    }
    let mut layer = [[0u32; 4]; 2];
    let mut decls = String::new();
    let mut binding = 2;
    let mut at = 1;
    for (k, (lo, slot)) in o.layers.iter().zip(&mut layer).enumerate() {
        let fs = &l.ir.desc(node.inputs[at]).shape;
        let [oc, ic, _, _] = conv_filter_ochw(lo.filter_layout, [fs[0], fs[1], fs[2], fs[3]]);
        if oc.max(ic) > SQUEEZE_EXCITE_MAX_CHANNELS {
            return Err(Error::invalid(format!(
                "layer {k} has {ic} -> {oc} channels, more than the kernel holds \
                 ({SQUEEZE_EXCITE_MAX_CHANNELS})"
            )));
        }
        let [so, si] = lo.filter_layout.pointwise_strides(oc, ic);
        *slot = [oc, ic, so, si].map(|v| v as u32);
        decls += &format!(
            "@group(0) @binding({binding}) var<storage, read> w{k}: array<TI>;\n\
             fn weight{k}(at: u32) -> f32 {{ return f32(w{k}[at]); }}\n"
        );
        binding += 1;
        if lo.bias {
            decls += &format!(
                "@group(0) @binding({binding}) var<storage, read> b{k}: array<TI>;\n\
                 fn bias{k}(o: u32) -> f32 {{ return f32(b{k}[o]); }}\n"
            );
            binding += 1;
        } else {
            decls += &format!("fn bias{k}(o: u32) -> f32 {{ return 0.0; }}\n");
        }
        at += 1 + lo.bias as usize;
    }
    if o.layers.len() == 1 {
        decls += "fn weight1(at: u32) -> f32 { return 0.0; }\n\
                  fn bias1(o: u32) -> f32 { return 0.0; }\n";
    }
    decls += &format!(
        "@group(0) @binding({binding}) var<storage, read_write> y: array<T>;\n\
         @group(0) @binding({}) var<storage, read_write> scratch: array<atomic<u32>>;\n",
        binding + 1
    );
    // The last layer's activations, then the node's own, are the kernel's
    // `act`; the first layer's of two are `act_hidden`.
    let (last, first) = o.layers.split_last().expect("one or two layers");
    let mut acts = last.activations.clone();
    acts.extend_from_slice(&node.activations);
    let hidden: &[_] = first.first().map_or(&[], |f| &f.activations);
    let spec = activation_helpers(Specialization::new(), hidden, &acts);
    let spec = activation_fn(spec, "act_hidden", "ACT_HIDDEN", hidden)
        .bool("TWO_LAYERS", o.layers.len() == 2)
        .u32("MAX_CHANNELS", SQUEEZE_EXCITE_MAX_CHANNELS as u32)
        .code(&decls);
    let (chunks, chunk) = self::chunks(hw, c);
    let params = Params {
        hw: hw as u32,
        c: c as u32,
        pixel_stride: if nhwc { c as u32 } else { 1 },
        channel_stride: if nhwc { 1 } else { hw as u32 },
        cw,
        lanes,
        nhwc: nhwc as u32,
        inv_hw: 1.0 / hw as f32,
        images: n as u32,
        chunks: chunks as u32,
        chunk: chunk as u32,
        _pad: 0,
        layer0: layer[0],
        layer1: layer[1],
    };
    l.kernel(Kernel {
        label: "squeezeExcite".into(),
        source: include_str!("squeeze_excite.wgsl"),
        spec,
        output_type: yd.data_type,
        input_type: xd.data_type,
        activations: &acts,
        params: Kernel::params(&params),
        // Counts at 0, sums empty (squeeze_excite.wgsl).
        table: Some(
            std::iter::repeat_n(0, n)
                .chain(std::iter::repeat_n(u32::MAX, n * chunks * c))
                .collect(),
        ),
        inputs: node.inputs.clone(),
        outputs: vec![y],
        workgroups: grid(n * chunks, 1),
        workgroup_size: WG,
    })
}
