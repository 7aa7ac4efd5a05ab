//! concat along any axis: the operands' copies in one kernel, each element
//! of the dispatch copying one element of one operand into its slab of the
//! output (an H200 ran one 6 us kernel per operand before); none for an
//! operand its writer stored in place (`concat_writes.rs`), and into a
//! block of an outer concat's output where the concat is placed there.
//! Past the device's storage bindings (or [`MAX_PARTS`]), the operands go
//! to several kernels.

use super::lower::{grid, kernel_params, Kernel, Lowering};
use super::slice::refuse_uint8;
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::{Node, OperandId};

const WG: u32 = 256;
/// Operands one copy kernel takes (`parts` in concat.wgsl): YOLO's largest
/// concats have 4, and 8 is WebGPU's default storage-binding limit.
const MAX_PARTS: usize = 8;

kernel_params! {
    /// `struct Params` of concat.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        chunk_out: u32,
        _pad: [u32; 2],
        /// Per part: first element, chunk_in, offset, unused.
        parts: [[u32; 4]; MAX_PARTS],
    }
}

/// One operand's copy: the operand, its chunk_in and its offset in the
/// output.
type Part = (OperandId, usize, usize);

pub(super) fn concat(l: &mut Lowering, node: &Node, axis: usize) -> Result<()> {
    let y = node.outputs[0];
    refuse_uint8(l, y, "concat")?;
    let out = l.ir.desc(y).clone();
    let inner: usize = out.shape[axis + 1..].iter().product();
    let chunk_out = out.shape[axis] * inner;
    // Stored as a block of an outer concat's output (`concat_writes.rs`).
    let mut offset = l.placement.map_or(0, |p| p.offset as usize);
    let mut parts: Vec<Part> = Vec::new();
    for (k, &x) in node.inputs.iter().enumerate() {
        let chunk_in = l.ir.desc(x).shape[axis] * inner;
        // Its writer stored it in place (`concat_writes.rs`).
        if l.written.get(k) != Some(&true) && l.ir.desc(x).element_count() > 0 {
            parts.push((x, chunk_in, offset));
        }
        offset += chunk_in;
    }
    // The output takes one storage binding; a recording lowering assumes
    // WebGPU's default limit.
    let bindings = l
        .limits()
        .unwrap_or_default()
        .max_storage_buffers_per_shader_stage;
    let per_kernel = MAX_PARTS.min((bindings as usize).saturating_sub(1)).max(1);
    for run in parts.chunks(per_kernel) {
        copy(l, y, chunk_out, run)?;
    }
    Ok(())
}

/// One kernel copying `run`'s operands into `y`.
fn copy(l: &mut Lowering, y: OperandId, chunk_out: usize, run: &[Part]) -> Result<()> {
    let dt = l.ir.desc(y).data_type;
    let mut params = Params {
        n: 0,
        chunk_out: chunk_out as u32,
        _pad: [0; 2],
        parts: [[0; 4]; MAX_PARTS],
    };
    let mut code = String::new();
    let mut cases = String::new();
    for (k, &(x, chunk_in, offset)) in run.iter().enumerate() {
        params.parts[k] = [params.n, chunk_in as u32, offset as u32, 0];
        params.n += l.ir.desc(x).element_count() as u32;
        code += &format!(
            "@group(0) @binding({}) var<storage, read> x{k}: array<T>;\n",
            k + 1
        );
        cases += &format!("        case {k}u: {{ y[j] = x{k}[i]; }}\n");
    }
    code += &format!(
        "@group(0) @binding({}) var<storage, read_write> y: array<T>;\n",
        run.len() + 1
    );
    code += &format!(
        "fn copy(k: u32, i: u32, j: u32) {{\n    switch k {{\n{cases}        default: {{}}\n    }}\n}}"
    );
    let n = params.n as usize;
    l.kernel(Kernel {
        label: "concat".into(),
        source: include_str!("concat.wgsl"),
        spec: Specialization::new()
            .u32("PARTS", run.len() as u32)
            .code(&code),
        output_type: dt,
        input_type: dt,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: run.iter().map(|p| p.0).collect(),
        outputs: vec![y],
        workgroups: grid(n, WG),
        workgroup_size: WG,
    })
}
