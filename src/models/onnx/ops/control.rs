//! Identity, Dropout (inference only) and If (its branch chosen at import).

use crate::error::Result;
use crate::models::onnx::fold::{get, Args, Msg};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::Const;

const TRAINING: &str = "training mode is not supported (inference only)";

impl<'s> Writer<'s> {
    /// Whether a Dropout runs in training mode (its `training_mode` input
    /// from opset 12, `is_test` = 0 before opset 7 has no meaning here).
    pub(super) fn training(&self, inputs: &[Option<Value>], _attrs: &Attrs<'_>) -> Result<bool> {
        Ok(self
            .need_const(inputs, 2, "training_mode")?
            .is_some_and(|c| c.as_i64().first().is_some_and(|&t| t != 0)))
    }
}

pub(super) fn identity<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    if n.op_type() == "Dropout" && wr.training(inputs, attrs)? {
        return Err(wr.err(TRAINING));
    }
    Ok(vec![wr.need(inputs, 0)?.clone()])
}

pub(super) fn if_<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    // Exporters branch on shapes (PyTorch's LocalResponseNorm
    // does): with the sizes fixed at build time the condition is
    // known, and the branch taken is written in place.
    let cond = wr
        .need_const(inputs, 0, "cond")?
        .ok_or_else(|| wr.err("input 0 (cond) is missing"))?;
    let g = taken_branch(n, &cond).map_err(|e| wr.err(e))?;
    wr.inline_branch(g)
}

/// The branch of `If` node `n` that condition `cond` picks (also the host
/// stage's, `tail.rs`).
pub(in crate::models::onnx) fn taken_branch<'g>(
    n: &'g proto::NodeProto,
    cond: &Const,
) -> std::result::Result<&'g proto::GraphProto, String> {
    let Some(&c) = cond.as_i64().first() else {
        return Err("the condition is empty".into());
    };
    let name = if c != 0 { "then_branch" } else { "else_branch" };
    n.attribute
        .iter()
        .find(|a| a.name() == name)
        .and_then(|a| a.g.as_ref())
        .ok_or_else(|| format!("it has no {name}"))
}

/// Identity and Dropout of constants; a training-mode Dropout is refused
/// as [`identity`] refuses it.
pub(super) fn fold_identity(args: &Args<'_>) -> Msg {
    let Args { op, c, .. } = *args;
    let training = c.get(2).copied().flatten().map(Const::as_i64);
    if op == "Dropout" && training.is_some_and(|t| t.first().is_some_and(|&t| t != 0)) {
        return Err(TRAINING.into());
    }
    Ok(vec![get(c, 0)?.clone()])
}
