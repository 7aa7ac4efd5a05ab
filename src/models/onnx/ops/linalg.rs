//! MatMul (numpy rules for 1-D operands) and Gemm.

use crate::error::Result;
use crate::ml::GemmOptions;
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;

pub(super) fn gemm<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let (a, w) = (wr.opnd(inputs, 0)?, wr.opnd(inputs, 1)?);
    let c = wr.opt_opnd(inputs, 2)?;
    let options = GemmOptions {
        alpha: attrs.float("alpha", 1.0),
        beta: attrs.float("beta", 1.0),
        a_transpose: attrs.int("transA", 0) != 0,
        b_transpose: attrs.int("transB", 0) != 0,
    };
    Ok(wr.one(wr.ctx(b.gemm(&a, &w, c.as_ref(), options))?))
}

pub(super) fn matmul<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let (mut a, mut c) = (wr.opnd(inputs, 0)?, wr.opnd(inputs, 1)?);
    let b = wr.b;
    // numpy's matmul: a 1-D operand is a row (a) or column (b) vector,
    // and that axis is dropped from the result.
    let (a1, c1) = (a.shape().len() == 1, c.shape().len() == 1);
    if a1 {
        a = wr.ctx(b.reshape(&a, &[1, a.shape()[0]]))?;
    }
    if c1 {
        c = wr.ctx(b.reshape(&c, &[c.shape()[0], 1]))?;
    }
    let mut y = wr.ctx(b.matmul(&a, &c))?;
    if a1 || c1 {
        let mut shape = y.shape().to_vec();
        let r = shape.len();
        if c1 {
            shape.remove(r - 1);
        }
        if a1 {
            shape.remove(r - 2);
        }
        y = wr.ctx(b.reshape(&y, &shape))?;
    }
    Ok(wr.one(y))
}
