//! gemm: y = alpha * A' B' + beta * c, with A' and B' optionally transposed
//! (read in place through strides) and c broadcast to [M, N]. Runs on the
//! tiled kernel in matmul.wgsl.

use super::lower::Lowering;
use super::matmul::{broadcast_strides, product, Product};
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::ops::GemmOptions;

pub(super) fn gemm(l: &mut Lowering, node: &Node, o: &GemmOptions) -> Result<()> {
    let (a, b, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let (m, n) = (l.ir.desc(y).shape[0], l.ir.desc(y).shape[1]);
    let k = if o.a_transpose {
        l.ir.desc(a).shape[0]
    } else {
        l.ir.desc(a).shape[1]
    };
    let a_strides = if o.a_transpose { (1, m) } else { (k, 1) };
    let b_strides = if o.b_transpose { (1, k) } else { (n, 1) };
    let c = node.inputs.get(2).map(|&c| {
        let s = broadcast_strides(&l.ir.desc(c).shape, &[m, n]);
        (c, s[0], s[1])
    });
    product(
        l,
        Product {
            label: "gemm",
            m,
            n,
            k,
            a: (a, a_strides.0, a_strides.1),
            b: (b, b_strides.0, b_strides.1),
            c,
            alpha: o.alpha,
            beta: o.beta,
            batch: (Vec::new(), Vec::new(), Vec::new()),
            node,
        },
    )
}
