//! Element-wise builder methods: the unary math functions, `pow`, the
//! comparisons, `logicalNot`, `where` and `identity`.

use super::{GraphBuilder, Operand};
use crate::error::{Error, Result};
use crate::ml::ops::{Activation, BinaryOp, CompareOp, Op};
use crate::ml::shape;
use crate::ml::types::DataType;

impl GraphBuilder {
    /// A unary function that also takes int32 (`abs`, `neg`).
    fn unary_number(&self, act: Activation, input: &Operand) -> Result<Operand> {
        self.check(act.name(), &[input])?;
        if !(input.data_type().is_float() || input.data_type() == DataType::Int32) {
            return Err(Error::invalid(format!(
                "{}: needs a float32, float16 or int32 operand, got {}",
                act.name(),
                input.desc
            )));
        }
        self.single(Op::Unary(act), &[input], input.desc.clone())
    }

    /// WebNN `abs` (float or int32; int32 wraps at i32::MIN).
    pub fn abs(&self, input: &Operand) -> Result<Operand> {
        self.unary_number(Activation::Abs, input)
    }
    /// WebNN `neg` (float or int32; int32 wraps at i32::MIN).
    pub fn neg(&self, input: &Operand) -> Result<Operand> {
        self.unary_number(Activation::Neg, input)
    }
    pub fn exp(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Exp, input)
    }
    /// Natural logarithm: NaN below 0, -inf at 0.
    pub fn log(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Log, input)
    }
    /// NaN below 0.
    pub fn sqrt(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Sqrt, input)
    }
    pub fn reciprocal(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Reciprocal, input)
    }
    pub fn erf(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Erf, input)
    }
    /// WebNN `elu`: x above 0, alpha * (e^x - 1) otherwise (WebNN's default
    /// alpha is 1).
    pub fn elu(&self, input: &Operand, alpha: f32) -> Result<Operand> {
        self.unary(Activation::Elu { alpha }, input)
    }
    /// ln(1 + e^x).
    pub fn softplus(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Softplus, input)
    }
    /// WebNN `gelu`: x * (1 + erf(x / sqrt 2)) / 2.
    pub fn gelu(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Gelu, input)
    }
    /// GELU's tanh approximation (ONNX Gelu's `approximate="tanh"`; not
    /// WebNN's).
    pub fn gelu_tanh(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::GeluTanh, input)
    }
    /// x * tanh(softplus(x)) (ONNX `Mish`; not WebNN's).
    pub fn mish(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Mish, input)
    }
    /// WebNN `cos` (radians).
    pub fn cos(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Cos, input)
    }
    /// WebNN `sin` (radians).
    pub fn sin(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Sin, input)
    }
    /// WebNN `ceil`.
    pub fn ceil(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Ceil, input)
    }
    /// WebNN `floor`.
    pub fn floor(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Floor, input)
    }

    /// WebNN `pow`: float operands, numpy broadcasting; C's `powf` (a
    /// negative base with an integral exponent gives the signed result).
    pub fn pow(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.check("pow", &[a, b])?;
        shape::require_float("pow", &a.desc)?;
        self.binary(BinaryOp::Pow, a, b)
    }

    fn compare(&self, op: CompareOp, a: &Operand, b: &Operand) -> Result<Operand> {
        self.check(op.name(), &[a, b])?;
        let out = shape::compare(op.name(), &a.desc, &b.desc)?;
        self.single(Op::Compare(op), &[a, b], out)
    }

    /// WebNN `equal`: uint8 1 where a == b, else 0 (NaN equals nothing).
    pub fn equal(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.compare(CompareOp::Equal, a, b)
    }
    pub fn greater(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.compare(CompareOp::Greater, a, b)
    }
    pub fn greater_or_equal(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.compare(CompareOp::GreaterOrEqual, a, b)
    }
    pub fn lesser(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.compare(CompareOp::Lesser, a, b)
    }
    pub fn lesser_or_equal(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.compare(CompareOp::LesserOrEqual, a, b)
    }

    /// WebNN `logicalNot`: uint8 in and out, 1 where the input is 0, else 0.
    pub fn logical_not(&self, input: &Operand) -> Result<Operand> {
        self.check("logicalNot", &[input])?;
        if input.data_type() != DataType::Uint8 {
            return Err(Error::invalid(format!(
                "logicalNot: needs a uint8 operand, got {}",
                input.desc
            )));
        }
        self.single(Op::LogicalNot, &[input], input.desc.clone())
    }

    /// WebNN `where`: `true_value` where `condition` (uint8) is non-zero,
    /// else `false_value`; the three broadcast numpy-style.
    pub fn where_(
        &self,
        condition: &Operand,
        true_value: &Operand,
        false_value: &Operand,
    ) -> Result<Operand> {
        let ops = [condition, true_value, false_value];
        self.check("where", &ops)?;
        let out = shape::where_(&condition.desc, &true_value.desc, &false_value.desc)?;
        self.single(Op::Where, &ops, out)
    }

    /// WebNN `identity`: a copy of any operand, so that a graph output can
    /// equal an input.
    pub fn identity(&self, input: &Operand) -> Result<Operand> {
        self.check("identity", &[input])?;
        self.single(Op::Identity, &[input], input.desc.clone())
    }
}
