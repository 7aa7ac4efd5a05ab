//! ONNX operators mapped onto the WebNN builder, by opset where their form
//! changed: one file per family of operators, each operator's import-time
//! evaluation (`fold`) beside its graph writing, and [`REGISTRY`], the one
//! table from operator name to both. ONNX is NCHW / OIHW, the builder's
//! defaults, so nothing is transposed; 1-D convolutions and pools run as 2-D
//! ones of height 1.

mod control;
mod conv;
mod elementwise;
mod late;
mod linalg;
mod normalization;
mod pool;
mod quant;
mod quant_conv;
mod reduce;
mod resize;
mod shape;
mod slice;

use std::sync::Arc;

use super::fold::Args;
use super::fold::Fold::{self, Always, Cheap, Consts, Late, Never};
use super::graph::{Attrs, Value, Writer};
use super::proto;
use super::tensor::{Const, Elem};
use crate::error::Result;
use crate::ml::{DataType, Operand};
pub(super) use control::taken_branch;
pub(super) use quant::CONTRIB_DOMAIN;

/// Writes a node as builder calls: the writer, the node, its attributes and
/// its inputs (`None`: an optional input left out).
pub(super) type Write = for<'s> fn(
    &mut Writer<'s>,
    &'s proto::NodeProto,
    &Attrs<'_>,
    &[Option<Value>],
) -> Result<Vec<Value>>;

/// One supported operator: when it is computed at import, and how it is
/// written otherwise.
pub(super) struct Entry {
    pub(super) op: &'static str,
    pub(super) fold: Fold,
    pub(super) write: Write,
}

const fn op(op: &'static str, fold: Fold, write: Write) -> Entry {
    Entry { op, fold, write }
}

/// Every default-domain operator the importer reads, sorted by name. An
/// operator whose form changed across opsets reads `Writer::opset` (or
/// `Args::opset` when folding) in its family file.
#[rustfmt::skip]
pub(super) const REGISTRY: &[Entry] = &[
    op("Abs", Cheap(elementwise::fold_unary), elementwise::unary),
    op("Add", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("ArgMax", Never, reduce::arg),
    op("ArgMin", Never, reduce::arg),
    op("AveragePool", Never, pool::pool),
    op("BatchNormalization", Never, conv::batch_norm),
    op("Cast", Consts(elementwise::fold_cast), elementwise::cast),
    op("Ceil", Cheap(elementwise::fold_unary), elementwise::unary),
    op("Clip", Never, elementwise::clip),
    op("Concat", Consts(slice::fold_concat), slice::concat),
    op("Constant", Always(shape::fold_constant), shape::not_at_import),
    op("ConstantOfShape", Consts(shape::fold_constant_of_shape), shape::not_at_import),
    op("Conv", Never, conv::conv),
    op("ConvTranspose", Never, conv::conv_transpose),
    op("Cos", Never, elementwise::unary),
    op("DepthToSpace", Never, shape::depth_space),
    op("DequantizeLinear", Consts(quant::fold_dequantize), quant::dequantize_linear),
    op("Div", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("Dropout", Consts(control::fold_identity), control::identity),
    op("Elu", Never, elementwise::unary),
    op("Equal", Cheap(elementwise::fold_variadic), elementwise::compare),
    op("Erf", Never, elementwise::unary),
    op("Exp", Cheap(elementwise::fold_unary), elementwise::unary),
    op("Expand", Consts(shape::fold_expand), shape::expand),
    op("Flatten", Consts(shape::fold_flatten), shape::flatten),
    op("Floor", Cheap(elementwise::fold_unary), elementwise::unary),
    op("Gather", Consts(slice::fold_gather), slice::gather),
    op("GatherElements", Late(late::fold_gather_elements), late::in_tail),
    op("GatherND", Never, slice::gather_nd),
    op("Gelu", Never, elementwise::gelu),
    op("Gemm", Never, linalg::gemm),
    op("GlobalAveragePool", Never, pool::global_pool),
    op("GlobalMaxPool", Never, pool::global_pool),
    op("Greater", Cheap(elementwise::fold_variadic), elementwise::compare),
    op("GreaterOrEqual", Never, elementwise::compare),
    op("HardSigmoid", Never, elementwise::unary),
    op("HardSwish", Never, elementwise::unary),
    op("Identity", Consts(control::fold_identity), control::identity),
    op("If", Never, control::if_),
    op("InstanceNormalization", Never, normalization::instance_norm),
    op("LRN", Never, normalization::lrn),
    op("LayerNormalization", Never, normalization::layer_norm),
    op("LeakyRelu", Never, elementwise::unary),
    op("Less", Cheap(elementwise::fold_variadic), elementwise::compare),
    op("LessOrEqual", Never, elementwise::compare),
    op("Log", Cheap(elementwise::fold_unary), elementwise::unary),
    op("LogSoftmax", Never, normalization::softmax),
    op("MatMul", Never, linalg::matmul),
    op("Max", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("MaxPool", Never, pool::pool),
    op("Mean", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("Min", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("Mish", Never, elementwise::unary),
    op("Mod", Cheap(elementwise::fold_mod), elementwise::modulo),
    op("Mul", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("Neg", Cheap(elementwise::fold_unary), elementwise::unary),
    op("NonMaxSuppression", Late(late::fold_nms), late::in_tail),
    op("NonZero", Late(late::fold_non_zero), late::in_tail),
    op("Not", Never, elementwise::not),
    op("PRelu", Never, elementwise::prelu),
    op("Pad", Never, slice::pad),
    op("Pow", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("QLinearConv", Never, quant::qlinear_conv),
    op("QLinearMatMul", Never, quant::qlinear_matmul),
    op("QuantizeLinear", Consts(quant::fold_quantize), quant::quantize_linear),
    op("Range", Consts(shape::fold_range), shape::not_at_import),
    op("Reciprocal", Cheap(elementwise::fold_unary), elementwise::unary),
    op("ReduceL2", Never, reduce::reduce),
    op("ReduceLogSumExp", Never, reduce::reduce),
    op("ReduceMax", Cheap(late::fold_reduce), reduce::reduce),
    op("ReduceMean", Cheap(late::fold_reduce), reduce::reduce),
    op("ReduceMin", Cheap(late::fold_reduce), reduce::reduce),
    op("ReduceProd", Cheap(late::fold_reduce), reduce::reduce),
    op("ReduceSum", Cheap(late::fold_reduce), reduce::reduce),
    op("ReduceSumSquare", Never, reduce::reduce),
    op("Relu", Cheap(elementwise::fold_unary), elementwise::unary),
    op("Reshape", Consts(shape::fold_reshape), shape::reshape),
    op("Resize", Never, resize::resize),
    op("ScatterND", Late(late::fold_scatter_nd), late::in_tail),
    op("Selu", Never, elementwise::unary),
    op("Shape", Always(shape::fold_shape), shape::not_at_import),
    op("Sigmoid", Never, elementwise::unary),
    op("Sin", Never, elementwise::unary),
    op("Slice", Consts(slice::fold_slice), slice::slice),
    op("Softmax", Never, normalization::softmax),
    op("Softplus", Never, elementwise::unary),
    op("SpaceToDepth", Never, shape::depth_space),
    op("Split", Never, slice::split),
    op("Sqrt", Cheap(elementwise::fold_unary), elementwise::unary),
    op("Squeeze", Consts(shape::fold_squeeze), shape::squeeze),
    op("Sub", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("Sum", Cheap(elementwise::fold_variadic), elementwise::arithmetic),
    op("Tanh", Never, elementwise::unary),
    op("Tile", Consts(shape::fold_tile), shape::tile),
    op("TopK", Late(late::fold_top_k), late::in_tail),
    op("Transpose", Consts(shape::fold_transpose), shape::transpose),
    op("Unsqueeze", Consts(shape::fold_unsqueeze), shape::unsqueeze),
    op("Upsample", Never, resize::resize),
    op("Where", Cheap(elementwise::fold_where), elementwise::where_),
];

/// Computes node `n` (of `opset`) on host constants, as the graph's host
/// stage does for what follows a data-dependent size: by its fold rule, or
/// for a graph operator by its host evaluation ([`late::host`]).
pub(super) fn on_host(
    n: &proto::NodeProto,
    opset: i64,
    inputs: &[Option<Arc<Const>>],
) -> std::result::Result<Vec<Const>, String> {
    let op = n.op_type();
    let entry = entry(n.domain(), op).ok_or("operator not supported")?;
    let attrs = Attrs(&n.attribute);
    let consts: Vec<Option<&Const>> = inputs.iter().map(|c| c.as_deref()).collect();
    let args = Args {
        op,
        opset,
        attrs: &attrs,
        c: &consts,
    };
    match &entry.fold {
        Fold::Always(f) => {
            let values: Vec<Option<Value>> =
                inputs.iter().map(|c| c.clone().map(Value::Const)).collect();
            f(&attrs, &values).unwrap_or_else(|| Err(on_graph_only(op)))
        }
        Fold::Consts(f) | Fold::Cheap(f) | Fold::Late(f) => f(&args),
        Fold::Never => match late::host(op) {
            Some(f) => f(&args),
            None => Err(on_graph_only(op)),
        },
    }
}

fn on_graph_only(op: &str) -> String {
    format!(
        "follows an operator computed on the host (NonZero, NonMaxSuppression, TopK, ...), \
         where everything after it is too, and wgnn computes {op} only in the graph"
    )
}

/// Why a node of `entry` cannot be computed in the host stage, if it cannot.
pub(super) fn host_refusal(entry: &Entry) -> Option<String> {
    match entry.fold {
        // The host stage runs an If's branch itself (`tail.rs`).
        Fold::Never if entry.op != "If" && late::host(entry.op).is_none() => {
            Some(on_graph_only(entry.op))
        }
        _ => None,
    }
}

/// Whether a node of this entry whose inputs are `inputs` goes to the host
/// stage: a host-only operator reading a value the graph computes.
pub(super) fn is_late(entry: &Entry, inputs: &[Option<Value>]) -> bool {
    matches!(entry.fold, Fold::Late(_))
        && inputs
            .iter()
            .flatten()
            .any(|v| matches!(v, Value::Op { .. }))
}

/// The operators' names, in [`REGISTRY`]'s order.
pub(super) const NAMES: [&str; REGISTRY.len()] = {
    let mut names = [""; REGISTRY.len()];
    let mut i = 0;
    while i < REGISTRY.len() {
        names[i] = REGISTRY[i].op;
        i += 1;
    }
    names
};

/// The registry entry of operator `op` of `domain` (the default one, or
/// onnxruntime's quantized operators: [`quant::CONTRIB`]), if it is supported.
pub(super) fn entry(domain: &str, op: &str) -> Option<&'static Entry> {
    let table = match domain {
        "" | "ai.onnx" => REGISTRY,
        quant::CONTRIB_DOMAIN => quant::CONTRIB,
        _ => return None,
    };
    table
        .binary_search_by(|e| e.op.cmp(op))
        .ok()
        .map(|i| &table[i])
}

/// The operators of onnxruntime's `com.microsoft` domain that are read.
pub(super) const CONTRIB_NAMES: [&str; quant::CONTRIB.len()] = {
    let mut names = [""; quant::CONTRIB.len()];
    let mut i = 0;
    while i < quant::CONTRIB.len() {
        names[i] = quant::CONTRIB[i].op;
        i += 1;
    }
    names
};

impl<'s> Writer<'s> {
    pub(super) fn opnd(&mut self, inputs: &[Option<Value>], i: usize) -> Result<Operand> {
        let v = self.need(inputs, i)?.clone();
        self.operand(&v)
    }

    pub(super) fn opt_opnd(
        &mut self,
        inputs: &[Option<Value>],
        i: usize,
    ) -> Result<Option<Operand>> {
        match inputs.get(i).and_then(Option::as_ref) {
            Some(v) => Ok(Some(self.operand(&v.clone())?)),
            None => Ok(None),
        }
    }

    pub(super) fn one(&self, op: Operand) -> Vec<Value> {
        vec![self.computed(op)]
    }

    pub(super) fn keep(&self, op: Operand, elem: Elem) -> Vec<Value> {
        vec![Value::Op { op, elem }]
    }

    pub(super) fn msg<T>(&self, r: std::result::Result<T, String>) -> Result<T> {
        r.map_err(|e| self.err(e))
    }

    /// A constant integer list input (axes, pads, sizes), or the attribute
    /// of the same name in the opsets before it became an input.
    pub(super) fn ints_in(
        &self,
        inputs: &[Option<Value>],
        attrs: &Attrs<'_>,
        i: usize,
        name: &str,
        input_from: i64,
    ) -> Result<Option<Vec<i64>>> {
        if self.opset >= input_from {
            Ok(self.need_const(inputs, i, name)?.map(|c| c.as_i64()))
        } else {
            Ok(attrs.ints(name))
        }
    }

    /// A rank-3 (N, C, L) tensor as (N, C, 1, L); 4-D as is. Returns the
    /// 4-D operand and the original shape.
    pub(super) fn as_4d(&mut self, x: &Operand) -> Result<(Operand, Vec<usize>)> {
        let shape = x.shape().to_vec();
        match shape.len() {
            4 => Ok((x.clone(), shape)),
            3 => Ok((
                self.ctx(self.b.reshape(x, &[shape[0], shape[1], 1, shape[2]]))?,
                shape,
            )),
            r => Err(self.err(format!(
                "a {r}-D input is not supported (1-D and 2-D spatial inputs are)"
            ))),
        }
    }

    /// The inverse of [`Self::as_4d`] (and of a 3-D pool's merge of its last
    /// two axes): a 4-D result back to the rank of the `shape` it came from.
    pub(super) fn back_from_4d(&mut self, y: Operand, shape: &[usize]) -> Result<Operand> {
        let s = y.shape().to_vec();
        match shape.len() {
            3 => self.ctx(self.b.reshape(&y, &[s[0], s[1], s[3]])),
            5 => self.ctx(self.b.reshape(&y, &[s[0], s[1], s[2], shape[3], shape[4]])),
            _ => Ok(y),
        }
    }

    /// A float constant of `x`'s float type.
    pub(super) fn const_like(
        &mut self,
        x: &Operand,
        shape: &[usize],
        values: Vec<f32>,
    ) -> Result<Operand> {
        let elem = if x.data_type() == DataType::Float16 {
            Elem::F16
        } else {
            Elem::F32
        };
        self.operand(&Value::Const(Arc::new(Const::floats(
            elem,
            shape.to_vec(),
            values,
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_is_sorted_and_each_operator_is_in_it_once() {
        assert!(REGISTRY.windows(2).all(|w| w[0].op < w[1].op));
        assert!(NAMES
            .iter()
            .all(|n| entry("", n).is_some_and(|e| e.op == *n)));
        assert!(quant::CONTRIB.windows(2).all(|w| w[0].op < w[1].op));
        assert!(CONTRIB_NAMES
            .iter()
            .all(|n| entry(quant::CONTRIB_DOMAIN, n).is_some_and(|e| e.op == *n)));
    }
}
