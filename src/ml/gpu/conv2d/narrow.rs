//! `conv2d_narrow.wgsl`: one invocation per output pixel with all of its
//! output channels (one group of up to `ml::fuse::NARROW_MAX_OUTPUTS`, or
//! an RGB stem's up to `choose.rs`'s `STEM_MAX_OUTPUTS`) in
//! registers. The direct kernel, one invocation per output value, re-reads
//! every input value for each output channel, with scalar loads; a
//! 64-channel GEMM tile leaves all but `ocg` of its columns idle. ESRGAN's
//! last conv (12 -> 3, 3x3 at 1920x1080) took 1.3-1.6 ms on the direct
//! kernel on an H100: 2M pixels x 3 outputs, each reading 108 input values.
//! The filter travels as `tables::narrow_filter`'s table (a constant
//! filter, rearranged once at build): one vector load of it serves four
//! output channels, where the filter as it is took one scalar load each.

use super::super::lower::{grid, Lowering};
use super::params::{bindings_after, shape4, table_inputs, Conv, Params, WG};
use super::tables::narrow_filter;
use crate::error::Result;
use crate::gpu::Specialization;

pub(super) fn emit(l: &mut Lowering, c: &Conv) -> Result<()> {
    let (has_bias, has_scale, has_residual) = c.flags();
    let (table, row) = narrow_filter(
        c.filter.unwrap_or_default(),
        c.fd.data_type,
        c.o,
        shape4(&c.fd.shape),
    );
    // Channels adjacent (NHWC) in runs of 4: every run starts at a multiple
    // of 4 elements, so the input can be bound as vectors.
    let vec4 = c.params.x_strides[1] == 1 && c.icg % 4 == 0;
    let scales = "vec4<f32>(in_scale(c), in_scale(c + 1u), in_scale(c + 2u), in_scale(c + 3u))";
    let loads = if vec4 {
        format!(
            "@group(0) @binding(1) var<storage, read> x: array<vec4<TI>>;\n\
             fn load4(o: u32, c: u32) -> vec4<f32> {{ return vec4<f32>(x[o / 4u]) * {scales}; }}\n\
             fn load1(o: u32, c: u32) -> f32 {{ return f32(x[o / 4u][o % 4u]) * in_scale(c); }}\n"
        )
    } else {
        format!(
            "@group(0) @binding(1) var<storage, read> x: array<TI>;\n\
             fn load4(o: u32, c: u32) -> vec4<f32> {{\n\
             \x20   let s = params.x_strides.y;\n\
             \x20   return vec4<f32>(f32(x[o]), f32(x[o + s]), f32(x[o + 2u * s]), f32(x[o + 3u * s])) * {scales};\n\
             }}\n\
             fn load1(o: u32, c: u32) -> f32 {{ return f32(x[o]) * in_scale(c); }}\n"
        )
    };
    let source = format!(
        "{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d_narrow.wgsl")
    );
    // No filter binding: the table follows the output.
    let (bindings, next) = bindings_after(2, has_bias, has_scale, has_residual, "T");
    let spec = Specialization::new()
        .u32("OCG", c.ocg as u32)
        .u32("OCG4", c.ocg.div_ceil(4) as u32)
        .code(&loads)
        .code(&bindings)
        .code(&format!(
            "@group(0) @binding({next}) var<storage, read> wt: array<vec4<f32>>;"
        ));
    let params = Params {
        ocp: row as u32,
        ..c.params
    };
    let dispatch = (grid(c.pixels, WG), WG);
    l.kernel(c.kernel(
        &source,
        spec,
        &params,
        Some(table),
        table_inputs(c.node),
        dispatch,
    ))
}
