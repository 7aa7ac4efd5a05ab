//! Nodes whose results nothing reads (no node, no graph output) are left
//! out before any other pass. An importer may write such nodes: the ONNX
//! importer writes a QuantizeLinear -> DequantizeLinear pair before it knows
//! that the only reader, a convolution, takes the quantization into its own
//! int8 kernel (`models/onnx/ops/quant_conv.rs`), which reads the pair's
//! float input.

use super::super::graph_ir::GraphIr;

/// `ir` without the nodes none of whose outputs is read, directly or
/// through other such nodes.
pub(super) fn drop_unread(mut ir: GraphIr) -> GraphIr {
    let mut uses = ir.use_counts();
    let mut keep = vec![true; ir.nodes.len()];
    // Walking back, a node's readers are decided before it is.
    for (i, node) in ir.nodes.iter().enumerate().rev() {
        if node.outputs.iter().all(|&o| uses[o] == 0) {
            keep[i] = false;
            for &input in &node.inputs {
                uses[input] -= 1;
            }
        }
    }
    let mut k = keep.into_iter();
    ir.nodes.retain(|_| k.next().unwrap());
    ir
}
