//! The Reduce* operators, ArgMax and ArgMin.

use crate::error::Result;
use crate::ml::DataType;
use crate::models::onnx::fold::norm_axis;
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::Elem;

pub(super) fn reduce<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let v = wr.need(inputs, 0)?.clone();
    let x = wr.operand(&v)?;
    let input_from = if op_type == "ReduceSum" { 13 } else { 18 };
    let axes = wr.ints_in(inputs, attrs, 1, "axes", input_from)?;
    let keep = attrs.int("keepdims", 1) != 0;
    let rank = x.shape().len();
    let axes: Option<Vec<usize>> = match axes {
        Some(a) if !a.is_empty() => Some(
            a.iter()
                .map(|&a| norm_axis(a, rank))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| wr.err(e))?,
        ),
        // Empty axes with noop_with_empty_axes reduce nothing.
        _ if attrs.int("noop_with_empty_axes", 0) != 0 => return Ok(vec![v]),
        _ => None,
    };
    let a = axes.as_deref();
    // Reductions take float or int32: bool/uint8 run as int32.
    let x = if x.data_type() == DataType::Uint8 {
        wr.ctx(b.cast(&x, DataType::Int32))?
    } else {
        x
    };
    let y = wr.ctx(match op_type {
        "ReduceMean" => b.reduce_mean(&x, a, keep),
        "ReduceSum" => b.reduce_sum(&x, a, keep),
        "ReduceMax" => b.reduce_max(&x, a, keep),
        "ReduceProd" => b.reduce_product(&x, a, keep),
        "ReduceL2" => b.reduce_l2(&x, a, keep),
        "ReduceSumSquare" => b.reduce_sum_square(&x, a, keep),
        "ReduceLogSumExp" => b.reduce_log_sum_exp(&x, a, keep),
        _ => b.reduce_min(&x, a, keep),
    })?;
    let y = if v.elem().data_type() == y.data_type() {
        y
    } else {
        wr.ctx(b.cast(&y, v.elem().data_type()))?
    };
    Ok(wr.keep(y, v.elem()))
}

pub(super) fn arg<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let x = wr.opnd(inputs, 0)?;
    let axis = wr.msg(norm_axis(attrs.int("axis", 0), x.shape().len()))?;
    let keep = attrs.int("keepdims", 1) != 0;
    let last = attrs.int("select_last_index", 0) != 0;
    let y = if op_type == "ArgMax" {
        b.arg_max(&x, axis, keep, last)
    } else {
        b.arg_min(&x, axis, keep, last)
    };
    Ok(wr.keep(wr.ctx(y)?, Elem::I64))
}
