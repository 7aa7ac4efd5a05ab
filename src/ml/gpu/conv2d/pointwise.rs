//! `conv2d_pointwise.wgsl`: a 1x1 conv2d over a few input channels, one
//! invocation per output vec4 (see the shader's header; choose.rs decides
//! when it is chosen).
//!
//! Why, in bytes (ESRGAN-slim's 4 -> 64 1x1 with a 64-channel residual at
//! 960x540, float16, on an H100): it reads 4 MB of input and 66 MB of
//! residual and writes 66 MB, 0.045 ms at the memory's bandwidth, and does
//! 133 M multiply-adds. The vec4 GEMM took 0.145 ms for it (a 64 x 64 tile
//! walking a reduction of 4 through workgroup memory and barriers).

use super::super::lower::{grid, Lowering};
use super::params::{shape4, table_inputs, Conv, WG};
use super::tables::narrow_filter;
use crate::error::Result;
use crate::gpu::Specialization;

/// Input channels up to which the kernel is chosen: past 16 the products
/// (ICG per output) start to matter and a GEMM's reuse of each input
/// value across its tile pays.
pub(super) const MAX_INPUTS: usize = 16;

/// Whether the kernel takes a conv2d: 1x1 with no padding, one group of at
/// most [`MAX_INPUTS`] input channels, output channels in runs of 4, NHWC
/// out (`nhwc`). The caller checks what is not a size: a constant filter,
/// float types, no upsample or late residual.
pub(super) fn takes(
    (kh, kw): (usize, usize),
    padding: [usize; 4],
    groups: usize,
    icg: usize,
    oc: usize,
    nhwc: bool,
) -> bool {
    (kh, kw) == (1, 1)
        && padding == [0; 4]
        && groups == 1
        && (1..=MAX_INPUTS).contains(&icg)
        && oc % 4 == 0
        && nhwc
}

pub(super) fn source() -> String {
    format!(
        "{}{}",
        include_str!("conv2d_params.wgsl"),
        include_str!("conv2d_pointwise.wgsl")
    )
}

/// Its bindings after the params: x (as vec4s where `vec4_input`: channels
/// adjacent, `icg` a multiple of 4), then any bias, input scale and
/// residual, y, and the filter table; and its constants.
pub(super) fn spec(
    icg: usize,
    vec4_input: bool,
    (has_bias, has_scale, has_residual): (bool, bool, bool),
) -> Specialization {
    let mut code = String::new();
    let mut binding = 1;
    let scales = "vec4<f32>(in_scale(c), in_scale(c + 1u), in_scale(c + 2u), in_scale(c + 3u))";
    if vec4_input {
        code += &format!(
            "@group(0) @binding(1) var<storage, read> x: array<vec4<TI>>;\n\
             fn load4(o: u32, c: u32) -> vec4<f32> {{ return vec4<f32>(x[o / 4u + c / 4u]) * {scales}; }}\n"
        );
    } else {
        // Channels past icg read as zero (their table rows are zero too,
        // but an input there could be anything, an infinity included).
        code += &format!(
            "@group(0) @binding(1) var<storage, read> x: array<TI>;\n\
             fn in1(o: u32, c: u32) -> f32 {{\n\
             \x20   return select(0.0, f32(x[o + min(c, params.icg - 1u) * params.x_strides.y]), c < params.icg);\n\
             }}\n\
             fn load4(o: u32, c: u32) -> vec4<f32> {{\n\
             \x20   return vec4<f32>(in1(o, c), in1(o, c + 1u), in1(o, c + 2u), in1(o, c + 3u)) * {scales};\n\
             }}\n"
        );
    }
    binding += 1;
    if has_bias {
        code += &format!(
            "@group(0) @binding({binding}) var<storage, read> b: array<vec4<TI>>;\n\
             fn bias4(j: u32) -> vec4<f32> {{ return vec4<f32>(b[j]); }}\n"
        );
        binding += 1;
    } else {
        code += "fn bias4(j: u32) -> vec4<f32> { return vec4<f32>(0.0); }\n";
    }
    if has_scale {
        // Scales past icg are never used (their inputs are zero): clamped
        // so that the read stays inside the binding.
        code += &format!(
            "@group(0) @binding({binding}) var<storage, read> s: array<TI>;\n\
             fn in_scale(c: u32) -> f32 {{ return f32(s[min(c, params.icg - 1u)]); }}\n"
        );
        binding += 1;
    } else {
        code += "fn in_scale(c: u32) -> f32 { return 1.0; }\n";
    }
    if has_residual {
        code += &format!(
            "@group(0) @binding({binding}) var<storage, read> r: array<vec4<T>>;\n\
             fn residual4(i: u32) -> vec4<f32> {{ return vec4<f32>(r[i]); }}\n"
        );
        binding += 1;
    } else {
        code += "fn residual4(i: u32) -> vec4<f32> { return vec4<f32>(0.0); }\n";
    }
    code += &format!(
        "@group(0) @binding({binding}) var<storage, read_write> y: array<vec4<T>>;\n\
         @group(0) @binding({}) var<storage, read> wt: array<vec4<f32>>;\n",
        binding + 1
    );
    Specialization::new()
        .u32("ICG4", icg.div_ceil(4) as u32)
        .code(&code)
}

/// `table` (`narrow_filter`'s rows of `row` float32 values, one per input
/// channel of a 1x1) with zero rows up to a multiple of 4 input channels.
pub(super) fn pad_rows(mut table: Vec<u32>, icg: usize, row: usize) -> Vec<u32> {
    table.resize(icg.next_multiple_of(4) * row, 0);
    table
}

/// The kernel for `c` (a constant filter), reading x as vec4s where
/// `vec4_input`.
pub(super) fn emit(l: &mut Lowering, c: &Conv, vec4_input: bool) -> Result<()> {
    let bytes = c.filter.unwrap_or_default();
    let (table, row) = narrow_filter(bytes, c.fd.data_type, c.o, shape4(&c.fd.shape));
    l.kernel(c.kernel(
        &source(),
        spec(c.icg, vec4_input, c.flags()),
        &c.params,
        Some(pad_rows(table, c.icg, row)),
        table_inputs(c.node),
        (grid(c.total / 4, WG), WG),
    ))
}
