//! expand and tile: one copy kernel, each output coordinate taken modulo the
//! input's extent along its axis (1 for a broadcast axis, the input's own
//! extent for a tiled one). Also the element copy that gather shares with
//! it, in any element type: uint8 is packed four to a u32 word, so a uint8
//! output is written one word (four elements) per invocation and never
//! shared between invocations.

use super::lower::{check_rank, grid, kernel_params, Kernel, Lowering, MAX_RANK};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::Node;
use crate::ml::types::{strides, DataType};

const WG: u32 = 256;

kernel_params! {
    /// `struct Params` of broadcast.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        n: u32,
        threads: u32,
        rank: u32,
        _pad: u32,
        axes: [[u32; 4]; MAX_RANK],
    }
}

/// `fn store(t: u32)`: invocation t's share of `y`, each element `i` copied
/// from `x[source(i)]` (`source` is the kernel's own), and how many
/// invocations that takes for `n` elements.
pub(super) fn element_copy(dt: DataType, n: usize) -> (&'static str, usize) {
    if dt == DataType::Uint8 {
        (
            "fn store(t: u32) {\n    var word = 0u;\n    for (var k = 0u; k < 4u; k++) {\n        \
             let i = 4u * t + k;\n        if i < params.n {\n            let j = source(i);\n            \
             word |= ((x[j / 4u] >> (8u * (j % 4u))) & 255u) << (8u * k);\n        }\n    }\n    \
             y[t] = word;\n}",
            n.div_ceil(4),
        )
    } else {
        ("fn store(t: u32) { y[t] = x[source(t)]; }", n)
    }
}

/// Per folded axis (output extent, input extent, input stride): size-1
/// output axes dropped, neighbouring axes both copied whole and contiguous
/// in the input merged, as are neighbouring broadcast axes.
fn repeat_axes(in_shape: &[usize], out_shape: &[usize]) -> Vec<[usize; 3]> {
    let mut aligned = vec![1; out_shape.len() - in_shape.len()];
    aligned.extend(in_shape);
    let st = strides(&aligned);
    let mut merged: Vec<[usize; 3]> = Vec::new();
    for (k, &extent) in out_shape.iter().enumerate() {
        if extent == 1 {
            continue;
        }
        let (inner, stride) = (aligned[k], st[k]);
        if let Some(prev) = merged.last_mut() {
            let whole = prev[0] == prev[1] && extent == inner && prev[2] == stride * inner;
            let broadcast = prev[1] == 1 && inner == 1;
            if whole || broadcast {
                *prev = [prev[0] * extent, prev[1] * inner, stride];
                continue;
            }
        }
        merged.push([extent, inner, stride]);
    }
    merged
}

pub(super) fn repeat(l: &mut Lowering, node: &Node) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    let xd = l.ir.desc(x).clone();
    let out = l.ir.desc(y).clone();
    let n = out.element_count();
    let folded = repeat_axes(&xd.shape, &out.shape);
    let label = node.op.name();
    let (store, threads) = element_copy(out.data_type, n);
    let mut params = Params {
        n: n as u32,
        threads: threads as u32,
        rank: check_rank(label, out.rank(), folded.len())?,
        _pad: 0,
        axes: [[0; 4]; MAX_RANK],
    };
    for (slot, a) in params.axes.iter_mut().zip(&folded) {
        *slot = [a[0] as u32, a[1] as u32, a[2] as u32, 0];
    }
    l.kernel(Kernel {
        label: label.into(),
        source: include_str!("broadcast.wgsl"),
        spec: Specialization::new().code(store),
        output_type: out.data_type,
        input_type: out.data_type,
        activations: &[],
        params: Kernel::params(&params),
        table: None,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(threads, WG),
        workgroup_size: WG,
    })
}

#[cfg(test)]
mod tests {
    use super::repeat_axes;

    #[test]
    fn repeated_axes_fold() {
        // A row broadcast down 4 rows of 3 x 5: the whole row is one axis.
        assert_eq!(
            repeat_axes(&[1, 3, 5], &[4, 3, 5]),
            [[4, 1, 15], [15, 15, 1]]
        );
        // Scalar expanded: all axes are broadcast, one axis.
        assert_eq!(repeat_axes(&[], &[2, 3]), [[6, 1, 1]]);
        // Tiles never merge with their neighbours.
        assert_eq!(repeat_axes(&[2, 3], &[4, 3]), [[4, 2, 3], [3, 3, 1]]);
        assert_eq!(repeat_axes(&[2, 1, 3], &[2, 1, 3]), [[6, 6, 1]]);
    }
}
