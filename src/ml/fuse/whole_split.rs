//! A concat of a whole split, its parts in order along the split's axis,
//! reads the split's input instead: concat(split(x)[0], ..., split(x)[m-1],
//! rest) == concat(x, rest), for any run of consecutive operands that is
//! every part of one split in order. The split is left copying only the
//! parts something else still reads (the GPU split runs no copy for an
//! unread part), and is gone where nothing does. YOLOv8's head C2f blocks
//! (cv1 -> split(a, b) -> m(b) -> concat(a, b, m) -> cv2) ran two split
//! copies each on an H200 where a and b are, in order, all of cv1's output.

use super::unread::drop_unread;
use crate::ml::graph_ir::{GraphIr, OperandId};
use crate::ml::ops::Op;

/// `ir` with each such run of a concat's operands replaced by the split's
/// input, and the splits nothing reads any more left out.
pub(super) fn concat_whole_splits(mut ir: GraphIr) -> GraphIr {
    let producer = ir.producers();
    let mut changed = false;
    for c in 0..ir.nodes.len() {
        let Op::Concat { axis } = ir.nodes[c].op else {
            continue;
        };
        let inputs = &ir.nodes[c].inputs;
        let mut merged = Vec::with_capacity(inputs.len());
        let mut k = 0;
        while k < inputs.len() {
            match whole_split(&ir, &producer, &inputs[k..], axis) {
                Some((x, parts)) => {
                    merged.push(x);
                    k += parts;
                }
                None => {
                    merged.push(inputs[k]);
                    k += 1;
                }
            }
        }
        if merged.len() != inputs.len() {
            ir.nodes[c].inputs = merged;
            changed = true;
        }
    }
    if changed {
        drop_unread(ir)
    } else {
        ir
    }
}

/// The input of the split whose parts, all of them in order, start
/// `operands`, and how many parts it has; None if they do not.
fn whole_split(
    ir: &GraphIr,
    producer: &[Option<usize>],
    operands: &[OperandId],
    axis: usize,
) -> Option<(OperandId, usize)> {
    let split = &ir.nodes[producer[operands[0]]?];
    let Op::Split { axis: a, .. } = split.op else {
        return None;
    };
    let parts = split.outputs.len();
    let whole = a == axis
        && split.activations.is_empty()
        && operands.len() >= parts
        && operands[..parts] == split.outputs[..];
    whole.then(|| (split.inputs[0], parts))
}

#[cfg(test)]
mod tests {
    //! What the rewrite makes of small graphs, built and fused on the CPU
    //! context; both contexts' values for such graphs are checked in
    //! tests/ml/ops_tensor.rs.

    use super::super::concat::tests::{f32_desc, fused_outputs, ops};
    use crate::ml::graph_ir::GraphIr;
    use crate::ml::ops::Op;

    /// x [1, 4, 3, 2] split in two along axis 1, then concat(`order` of
    /// the parts and z [1, 2, 3, 2]) along `axis`; with `read_part`, part
    /// 1 is read by a relu too.
    fn graph(axis: usize, order: &[usize], read_part: bool) -> GraphIr {
        fused_outputs(|b| {
            let x = b.input("x", f32_desc(&[1, 4, 3, 2]))?;
            let z = b.input("z", f32_desc(&[1, 2, 3, 2]))?;
            let parts = b.split(&x, 2, 1)?;
            let mut operands: Vec<_> = order.iter().map(|&k| &parts[k]).collect();
            operands.push(&z);
            let mut ys = vec![b.concat(&operands, axis)?];
            if read_part {
                ys.push(b.relu(&parts[1])?);
            }
            Ok(ys)
        })
    }

    fn concat_inputs(ir: &GraphIr) -> usize {
        let c = ir.nodes.iter().find(|n| matches!(n.op, Op::Concat { .. }));
        c.unwrap().inputs.len()
    }

    #[test]
    fn a_concat_of_a_whole_split_reads_its_input() {
        let ir = graph(1, &[0, 1], false);
        assert_eq!(ops(&ir), ["concat"]);
        assert_eq!(ir.nodes[0].inputs, [ir.inputs[0].1, ir.inputs[1].1]);
        // Part 1 still read: the split stays for it.
        let ir = graph(1, &[0, 1], true);
        assert_eq!(ops(&ir), ["split", "concat", "relu"]);
        assert_eq!(ir.nodes[1].inputs, [ir.inputs[0].1, ir.inputs[1].1]);
    }

    #[test]
    fn other_concats_of_parts_stay() {
        for (what, ir) in [
            ("out of order", graph(1, &[1, 0], false)),
            ("one part", graph(1, &[1], false)),
            ("another axis", graph(3, &[0, 1], false)),
        ] {
            let parts = ir.nodes.iter().filter(|n| n.op.name() == "split").count();
            assert_eq!(parts, 1, "{what}: {:?}", ops(&ir));
            assert!(concat_inputs(&ir) >= 2, "{what}: {:?}", ops(&ir));
        }
    }
}
