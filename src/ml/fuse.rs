//! Build-time fusion: an activation whose input is used only by it is folded
//! into the node that produces that input, so it runs in that kernel's
//! epilogue instead of as a separate pass over memory.

use super::graph_ir::GraphIr;
use super::ops::Op;

fn takes_epilogue(op: &Op) -> bool {
    matches!(
        op,
        Op::Conv2d(_)
            | Op::ConvTranspose2d(_)
            | Op::Matmul
            | Op::Gemm(_)
            | Op::Binary(_)
            | Op::Unary(_)
    )
}

pub(crate) fn fuse_activations(mut ir: GraphIr) -> GraphIr {
    let uses = ir.use_counts();
    let mut producer = vec![None; ir.operands.len()];
    let mut keep = vec![true; ir.nodes.len()];
    for i in 0..ir.nodes.len() {
        let Op::Unary(act) = ir.nodes[i].op else {
            for &o in &ir.nodes[i].outputs {
                producer[o] = Some(i);
            }
            continue;
        };
        let x = ir.nodes[i].inputs[0];
        let out = ir.nodes[i].outputs[0];
        let fusable = producer[x].filter(|&p| {
            keep[p]
                && uses[x] == 1
                && ir.nodes[p].outputs.len() == 1
                && takes_epilogue(&ir.nodes[p].op)
                && ir.desc(x).data_type.is_float()
        });
        match fusable {
            Some(p) => {
                let tail = std::mem::take(&mut ir.nodes[i].activations);
                let node = &mut ir.nodes[p];
                node.activations.push(act);
                node.activations.extend(tail);
                node.outputs[0] = out;
                producer[out] = Some(p);
                keep[i] = false;
            }
            None => producer[out] = Some(i),
        }
    }
    let mut k = keep.into_iter();
    ir.nodes.retain(|_| k.next().unwrap());
    ir
}
