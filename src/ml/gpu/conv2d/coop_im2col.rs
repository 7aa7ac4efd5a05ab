//! The im2col tensor-core conv2d: `conv2d_coop_im2col.wgsl` copies each
//! output pixel's input patch into one row of a scratch buffer (K = kh *
//! kw * icg halves), then the direct kernel (`conv2d_coop_direct.wgsl`)
//! runs the convolution as a 1x1 over that buffer's rows as one long row
//! of pixels (choose.rs decides when).
//!
//! Why: the other tensor-core kernels give a workgroup a run of 32 or 64
//! pixels of ONE output row, so a 7- or 14-pixel row (ResNet-50's last two
//! stages) fills 7 or 14 of its 32 and the products on the rest are
//! wasted: at batch 32 on an H200 its 3x3 stride-2 14x14x512 -> 7x7x512
//! took 511 us (14 TFLOP/s) and its 1x1 stride-2 14x14x1024 -> 7x7x2048
//! 424 us. Over the copy's rows every run is whole. The filter table is the
//! one the other kernels read: its rows go tap by tap, each tap's input
//! channels in order, as the copy's columns do.

use super::super::lower::{grid, Kernel, Lowering};
use super::coop_direct;
use super::params::{u32s, Conv, CoopTiles};
use crate::error::Result;
use crate::gpu::Specialization;

/// Invocations of a workgroup of the copy.
pub(in crate::ml::gpu) const WG: u32 = 256;

/// Bytes of the copy: `pixels` rows of `k` halves.
pub(in crate::ml::gpu) fn bytes(pixels: usize, k: usize) -> u64 {
    (pixels * k * 2) as u64
}

/// The copy's WGSL: one invocation per 8 channels of a pixel's tap.
pub(in crate::ml::gpu) fn source() -> String {
    format!(
        "{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d_coop_im2col.wgsl")
    )
}

/// The copy, then the direct kernel over it, for `c` on `tiles` (the
/// convolution's own with its pixels run as one row, as mod.rs's
/// `flat_tiles` makes them).
pub(super) fn emit(l: &mut Lowering, c: &Conv, tiles: CoopTiles) -> Result<()> {
    let k = c.kh * c.kw * c.icg;
    let scratch = l.scratch(bytes(c.pixels, k))?;
    let source = source();
    let copy = l.kernel_with_scratch(
        Kernel {
            label: "conv2d im2col".into(),
            source: &source,
            spec: Specialization::new(),
            output_type: c.yd.data_type,
            input_type: c.xd.data_type,
            activations: &[],
            params: Kernel::params(&c.params),
            table: None,
            inputs: vec![c.x],
            outputs: vec![],
            workgroups: grid(c.pixels * k / 8, WG),
            workgroup_size: WG,
        },
        scratch,
    );
    let main = copy.and_then(|()| {
        let tiles = over_rows(c, tiles, k);
        coop_direct::emit_over(l, c, tiles, scratch, k)
    });
    l.release_scratch(scratch);
    main
}

/// `tiles` (the convolution's own, its pixels run as one row: mod.rs's
/// `flat_tiles`) for the 1x1 over the copy: each pixel `k` channels, read
/// one after another (its row and image strides are never used: both
/// indices are always 0).
fn over_rows(c: &Conv, tiles: CoopTiles, k: usize) -> CoopTiles {
    let pixels = c.pixels;
    CoopTiles {
        params: super::params::Params {
            x_strides: u32s([pixels * k, 1, pixels * k, k]),
            stride: [1, 1],
            dilation: [1, 1],
            padding: [0, 0],
            filter_size: [1, 1],
            icg: k as u32,
            kdim: k as u32,
            upsample: [1, 1],
            ..tiles.params
        },
        ..tiles
    }
}
