//! The precision a float32 graph computes in: wgnn's extension to WebNN
//! (which has no such switch). [`Precision::F16`] rewrites a float32 graph
//! at build, before fusion, to compute in float16 while its declared inputs
//! and outputs stay float32, so a caller's tensors do not change:
//!
//! - float32 constants become float16 constants (converted once, here);
//! - a float32 graph input is cast to float16 right after entry, and a
//!   float32 graph output is computed in float16 and cast back at the end;
//! - every node that computes floats runs in float16, except those whose
//!   results float16 cannot hold or whose exact float32 inputs decide an
//!   index or a flag (see [`keeps_float32`]): they keep float32, with casts
//!   around them.
//!
//! The kernels of both back ends load float16 values into float32 registers
//! and accumulate there; only what is stored between nodes is rounded to
//! float16. The CPU context does the same (float16 held as f32 rounded to
//! float16 precision), so an f16 graph gives the GPU's results there too,
//! without the speed.

use std::collections::HashMap;
use std::sync::Arc;

use super::graph_ir::{GraphIr, Node, OperandId, OperandInfo, OperandKind};
use super::ops::{Op, ReduceKind};
use super::types::{DataType, OperandDescriptor};
use crate::error::{Error, Result};

/// Which precision a float32 model computes in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Precision {
    /// float16 where it is fast and close enough, else float32: decided per
    /// model and device by [`crate::models::Model::build_with`].
    Auto,
    /// float32 throughout, as written.
    #[default]
    F32,
    /// float16 between nodes, float32 inputs and outputs.
    F16,
}

impl Precision {
    pub const NAMES: [&'static str; 3] = ["auto", "f32", "f16"];

    pub fn name(self) -> &'static str {
        match self {
            Precision::Auto => "auto",
            Precision::F32 => "f32",
            Precision::F16 => "f16",
        }
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Precision {
    type Err = Error;

    fn from_str(s: &str) -> Result<Precision> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Precision::Auto),
            "f32" | "float32" | "fp32" => Ok(Precision::F32),
            "f16" | "float16" | "fp16" => Ok(Precision::F16),
            _ => Err(Error::invalid(format!(
                "precision '{s}' is not one of auto, f32, f16"
            ))),
        }
    }
}

/// Options of [`GraphBuilder::build_with`](super::GraphBuilder::build_with).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// [`Precision::F32`] or [`Precision::F16`]; `Auto` needs a probe input
    /// and is resolved by [`crate::models::Model::build_with`].
    pub precision: Precision,
}

/// Whether `node` keeps float32 in a float16 graph: sums, products and
/// norms can pass float16's largest value (65504) where their inputs do
/// not, and arg-min/max, comparisons and casts to integers turn exact
/// values into indices or flags that a rounding could change.
///
/// Every variant is named, so a new op does not compile until it is decided.
fn keeps_float32(ir: &GraphIr, node: &Node) -> bool {
    match &node.op {
        Op::Reduce { kind, .. } => match kind {
            ReduceKind::Sum | ReduceKind::SumSquare | ReduceKind::Product | ReduceKind::L2 => true,
            ReduceKind::Mean | ReduceKind::Max | ReduceKind::Min | ReduceKind::LogSumExp => false,
        },
        Op::ArgMinMax { .. } | Op::Compare(_) | Op::LogicalNot => true,
        Op::Cast => !ir.desc(node.outputs[0]).data_type.is_float(),
        // Convolutions, products, pools and softmax sum in float32 inside
        // their kernels; the rest move, pick or map values one by one.
        Op::Conv2d(_)
        | Op::ConvTranspose2d(_)
        | Op::Pool2d(..)
        | Op::Resample2d(_)
        | Op::Concat { .. }
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::Slice { .. }
        | Op::Pad { .. }
        | Op::Split { .. }
        | Op::Binary(_)
        | Op::Unary(_)
        | Op::Prelu
        | Op::Softmax { .. }
        | Op::Matmul
        | Op::Gemm(_)
        | Op::Where
        | Op::Identity
        | Op::Gather { .. }
        | Op::Expand
        | Op::Tile { .. }
        | Op::BatchNormalization { .. }
        | Op::SqueezeExcite(_)
        | Op::DepthwisePointwise(_)
        | Op::QuantConv2d(_) => false,
    }
}

/// The same descriptor with float32 turned into float16.
fn halved(desc: &OperandDescriptor) -> OperandDescriptor {
    match desc.data_type {
        DataType::Float32 => OperandDescriptor::new(DataType::Float16, desc.shape.clone()),
        _ => desc.clone(),
    }
}

/// Little-endian float32 bytes as little-endian float16 bytes (round to
/// nearest even; out-of-range values become infinities, as a cast does).
fn f32_bytes_to_f16(bytes: &[u8]) -> Vec<u8> {
    bytes
        .chunks_exact(4)
        .flat_map(|c| {
            half::f16::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes()
        })
        .collect()
}

/// Rewrites `ir` (as the builder wrote it, unfused) to compute in float16.
/// Inputs and outputs keep their names, order and descriptors.
pub(crate) fn to_float16(ir: &GraphIr) -> GraphIr {
    Rewrite::new(ir).run()
}

struct Rewrite<'a> {
    old: &'a GraphIr,
    new: GraphIr,
    /// Each old operand in the type its producer gives it in the new graph
    /// (constants are placed per requested type instead).
    natural: Vec<Option<OperandId>>,
    /// (old operand, type) -> new operand of that type: converted
    /// constants and cast results, made once and shared by every reader.
    typed: HashMap<(OperandId, DataType), OperandId>,
}

impl<'a> Rewrite<'a> {
    fn new(old: &'a GraphIr) -> Self {
        Rewrite {
            old,
            new: GraphIr::default(),
            natural: vec![None; old.operands.len()],
            typed: HashMap::new(),
        }
    }

    fn push(&mut self, desc: OperandDescriptor, kind: OperandKind, label: String) -> OperandId {
        self.new.operands.push(OperandInfo { desc, kind, label });
        self.new.operands.len() - 1
    }

    fn run(mut self) -> GraphIr {
        let old = self.old;
        for (name, id) in &old.inputs {
            let info = &old.operands[*id];
            let new = self.push(info.desc.clone(), OperandKind::Input, info.label.clone());
            self.natural[*id] = Some(new);
            self.new.inputs.push((name.clone(), new));
        }
        for node in &old.nodes {
            let f32_node = keeps_float32(old, node);
            let inputs = node
                .inputs
                .iter()
                .map(|&i| {
                    let d = old.desc(i);
                    let want = if f32_node { d.clone() } else { halved(d) };
                    self.fetch(i, want.data_type)
                })
                .collect();
            let outputs = node
                .outputs
                .iter()
                .map(|&o| {
                    let info = &old.operands[o];
                    let desc = if f32_node {
                        info.desc.clone()
                    } else {
                        halved(&info.desc)
                    };
                    let new = self.push(desc, OperandKind::Computed, info.label.clone());
                    self.natural[o] = Some(new);
                    new
                })
                .collect();
            self.new.nodes.push(Node {
                op: node.op.clone(),
                inputs,
                outputs,
                activations: node.activations.clone(),
                input_scale: node.input_scale,
                residual: node.residual,
                late_residual: node.late_residual,
                input_upsample: node.input_upsample,
            });
        }
        for (name, id) in &old.outputs {
            let new = self.fetch(*id, old.desc(*id).data_type);
            self.new.outputs.push((name.clone(), new));
        }
        self.new
    }

    /// Old operand `id` as a new operand of type `want`: a constant
    /// converted (once), or a computed value or input cast (once).
    fn fetch(&mut self, id: OperandId, want: DataType) -> OperandId {
        if let Some(&new) = self.typed.get(&(id, want)) {
            return new;
        }
        let info = &self.old.operands[id];
        let new = match &info.kind {
            OperandKind::Constant(bytes) => {
                let desc = OperandDescriptor::new(want, info.desc.shape.clone());
                let bytes = if info.desc.data_type == want {
                    bytes.clone()
                } else {
                    // Only float32 constants are ever asked for in another
                    // type (float16), by `halved`.
                    debug_assert_eq!(
                        (info.desc.data_type, want),
                        (DataType::Float32, DataType::Float16)
                    );
                    Arc::new(f32_bytes_to_f16(bytes))
                };
                let label = format!("{} ({})", info.label, want);
                self.push(desc, OperandKind::Constant(bytes), label)
            }
            _ => {
                let natural = self.natural[id].expect("operands are computed before they are read");
                if self.new.desc(natural).data_type == want {
                    return natural;
                }
                let desc = OperandDescriptor::new(want, info.desc.shape.clone());
                let label = format!("cast #{} of {} to {want}", self.new.nodes.len(), info.label);
                let out = self.push(desc, OperandKind::Computed, label);
                self.new.nodes.push(Node {
                    op: Op::Cast,
                    inputs: vec![natural],
                    outputs: vec![out],
                    activations: Vec::new(),
                    input_scale: false,
                    residual: false,
                    late_residual: false,
                    input_upsample: None,
                });
                out
            }
        };
        self.typed.insert((id, want), new);
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print() {
        for p in [Precision::Auto, Precision::F32, Precision::F16] {
            assert_eq!(p.to_string().parse::<Precision>().unwrap(), p);
        }
        assert_eq!(" FP16 ".parse::<Precision>().unwrap(), Precision::F16);
        assert_eq!("float32".parse::<Precision>().unwrap(), Precision::F32);
        let e = "f8".parse::<Precision>().unwrap_err().to_string();
        assert_eq!(e, "precision 'f8' is not one of auto, f32, f16");
        assert_eq!(Precision::default(), Precision::F32);
    }

    #[test]
    fn constants_convert_with_rounding_and_overflow() {
        let v = [1.0f32, -2.5, 65504.0, 70000.0, 1e-8, 0.1];
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let out = f32_bytes_to_f16(&bytes);
        let back: Vec<f32> = out
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        assert_eq!(back[..3], [1.0, -2.5, 65504.0]);
        assert_eq!(back[3], f32::INFINITY);
        assert_eq!(back[4], 0.0);
        assert!((back[5] - 0.1).abs() < 1e-4 && back[5] != 0.1);
    }
}

#[cfg(test)]
mod graph_tests {
    use super::*;
    use crate::ml::{Context, GraphBuilder};

    /// x (f32) -> conv2d (f32 filter) -> relu -> reduceSum -> y0; argMax -> y1.
    #[test]
    fn casts_sit_at_the_edges_and_around_float32_nodes() {
        let ctx = Context::cpu();
        let b = GraphBuilder::new(&ctx);
        let x = b.input("x", OperandDescriptor::f32([1, 2, 3, 3])).unwrap();
        let w = b
            .constant_f32(&[2, 2, 1, 1], &[1.0, 0.5, -1.0, 2.0])
            .unwrap();
        let c = b
            .conv2d(&x, &w, None, crate::ml::Conv2dOptions::new())
            .unwrap();
        let r = b.relu(&c).unwrap();
        let s = b.reduce_sum(&r, Some(&[2, 3]), false).unwrap();
        let m = b.arg_max(&r, 1, false, false).unwrap();
        let g = b
            .build_with(
                &[("y0", &s), ("y1", &m), ("y2", &r)],
                BuildOptions {
                    precision: Precision::F16,
                },
            )
            .unwrap();
        assert_eq!(g.precision(), Precision::F16);
        let ir = &g.inner.ir;
        // The caller's view does not change.
        let inputs = g.inputs();
        assert_eq!(inputs[0].1, OperandDescriptor::f32([1, 2, 3, 3]));
        let outputs: Vec<_> = g.outputs().into_iter().map(|(_, d)| d.data_type).collect();
        assert_eq!(
            outputs,
            [DataType::Float32, DataType::Int32, DataType::Float32]
        );
        // The filter became a float16 constant of the same values.
        let conv = ir
            .nodes
            .iter()
            .find(|n| matches!(n.op, Op::Conv2d(_)))
            .unwrap();
        assert_eq!(ir.desc(conv.inputs[0]).data_type, DataType::Float16);
        let filter = ir.constant(conv.inputs[1]).unwrap();
        assert_eq!(ir.desc(conv.inputs[1]).data_type, DataType::Float16);
        assert_eq!(
            filter.as_slice(),
            f32_bytes_to_f16(bytemuck::cast_slice(&[1.0f32, 0.5, -1.0, 2.0]))
        );
        // relu fused into the conv, which reads float16 and, the cast of
        // its result folded into it (fuse/cast.rs), writes float32.
        assert_eq!(conv.activations.len(), 1);
        assert_eq!(ir.desc(conv.outputs[0]).data_type, DataType::Float32);
        // reduceSum and argMax read float32 through one shared cast.
        let sum = ir
            .nodes
            .iter()
            .find(|n| matches!(n.op, Op::Reduce { .. }))
            .unwrap();
        let arg = ir
            .nodes
            .iter()
            .find(|n| matches!(n.op, Op::ArgMinMax { .. }))
            .unwrap();
        assert_eq!(sum.inputs, arg.inputs);
        assert_eq!(ir.desc(sum.inputs[0]).data_type, DataType::Float32);
        assert_eq!(ir.desc(sum.outputs[0]).data_type, DataType::Float32);
        let casts: Vec<_> = ir
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Cast))
            .collect();
        // x to f16; the conv's result to f32 (for the sum, the argMax and
        // y2) is the conv's own output.
        assert_eq!(casts.len(), 1, "{:?}", ir.nodes);
        assert_eq!(casts[0].inputs[0], ir.inputs[0].1);
        assert_eq!(conv.outputs[0], sum.inputs[0]);
        assert_eq!(ir.outputs[2].1, sum.inputs[0]);
    }

    #[test]
    fn auto_is_not_for_the_builder_and_f32_changes_nothing() {
        let ctx = Context::cpu();
        let b = GraphBuilder::new(&ctx);
        let x = b.input("x", OperandDescriptor::f32([4])).unwrap();
        let y = b.relu(&x).unwrap();
        let auto = BuildOptions {
            precision: Precision::Auto,
        };
        let Err(e) = b.build_with(&[("y", &y)], auto) else {
            panic!("auto built")
        };
        let e = e.to_string();
        assert!(
            e.contains("precision auto") && e.contains("Model::build_with"),
            "{e}"
        );
        let g = b.build_with(&[("y", &y)], BuildOptions::default()).unwrap();
        assert_eq!(g.precision(), Precision::F32);
        assert_eq!(g.node_count(), 1);
    }
}
