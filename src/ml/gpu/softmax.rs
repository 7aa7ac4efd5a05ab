//! softmax along any axis.

use super::lower::{grid, kernel_params, Kernel, Lowering};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;

const WG: u32 = 64;
/// Rows up to this long, laid side by side (at least a workgroup of them
/// `inner` apart), take one invocation each: YOLOv8n's DFL softmax over 16
/// bins of 4 x 8400 boxes (axis 1 of 1x16x4x8400) read each row's 16
/// elements 33600 apart from 16 invocations, 16 cache lines a row, and took
/// 0.364 ms at batch 32 on an H200; one invocation a row reads 64
/// neighbouring rows' elements together.
const SHORT_ROW: usize = 256;

kernel_params! {
    /// `struct Params` of softmax.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        rows: u32,
        len: u32,
        inner: u32,
        row_threads: u32,
    }
}

pub(super) fn softmax(l: &mut Lowering, node: &Node, axis: usize) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let d = l.ir.desc(x).clone();
    let len = d.shape[axis];
    let inner: usize = d.shape[axis + 1..].iter().product();
    let rows = d.element_count() / len;
    let rt = row_threads(len, inner);
    let params = Params {
        rows: rows as u32,
        len: len as u32,
        inner: inner as u32,
        row_threads: rt,
    };
    l.kernel(Kernel {
        label: "softmax".into(),
        source: include_str!("softmax.wgsl"),
        spec: Specialization::new(),
        output_type: d.data_type,
        input_type: d.data_type,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(rows * rt as usize, WG),
        workgroup_size: WG,
    })
}

/// Invocations per row: one for short rows side by side (neighbouring
/// invocations then read neighbouring addresses), else enough to cover the
/// row once, at most a workgroup. A parameter, not a constant: it follows
/// the row length, and a new input size must not compile a new pipeline.
fn row_threads(len: usize, inner: usize) -> u32 {
    if inner >= WG as usize && len <= SHORT_ROW {
        return 1;
    }
    (len.next_power_of_two() as u32).min(WG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_rows_side_by_side_take_one_invocation_each() {
        // YOLOv8n's DFL: 16 bins, 4 x 8400 rows side by side.
        assert_eq!(row_threads(16, 4 * 8400), 1);
        assert_eq!(row_threads(SHORT_ROW, WG as usize), 1);
        // Too long a row, or rows not side by side: shared by invocations.
        assert_eq!(row_threads(SHORT_ROW + 1, 4096), WG);
        assert_eq!(row_threads(16, 1), 16);
        assert_eq!(row_threads(16, WG as usize - 1), 16);
        assert_eq!(row_threads(1000, 1), WG);
        assert_eq!(row_threads(3, 1), 4);
    }
}
