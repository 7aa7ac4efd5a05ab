//! `remainder`: the modulo of ONNX `Mod` and TFLite `FLOOR_MOD`, written
//! with the builder's own operations, so both contexts run it unchanged.

use super::{GraphBuilder, Operand};
use crate::error::{Error, Result};
use crate::ml::types::{DataType, OperandDescriptor};

impl GraphBuilder {
    /// `a mod b`, element-wise with numpy broadcasting: with `floor` the
    /// result takes the divisor's sign (Python's `%`, TFLite FLOOR_MOD,
    /// ONNX Mod with fmod 0), else the dividend's (C `fmod`, ONNX fmod 1).
    ///
    /// Integers (int32) are exact: `a - (a / b) * b` with the truncating
    /// division, a zero divisor giving `a`. Floats truncate the quotient
    /// through int32, so they are exact while `|a / b| < 2^31` up to the
    /// rounding of `a / b` and of `trunc(a / b) * b`.
    pub fn remainder(&self, a: &Operand, b: &Operand, floor: bool) -> Result<Operand> {
        self.check("remainder", &[a, b])?;
        let t = a.data_type();
        if t != b.data_type() || !(t.is_float() || t == DataType::Int32) {
            return Err(Error::invalid(format!(
                "remainder: needs two float32, float16 or int32 operands of one type, got {} \
                 and {}",
                a.desc, b.desc
            )));
        }
        let q = self.div(a, b)?;
        let whole = if t.is_float() {
            let i = self.cast(&q, DataType::Int32)?;
            self.cast(&i, t)?
        } else {
            q
        };
        let r = self.sub(a, &self.mul(&whole, b)?)?;
        if !floor {
            return Ok(r);
        }
        // Where r and b have opposite signs (r nonzero), r + b has b's.
        let zero = self.zero_like(a)?;
        let b_negative = self.lesser(b, &zero)?;
        let r_positive = self.greater(&r, &zero)?;
        let r_negative = self.lesser(&r, &zero)?;
        let opposite = self.where_(&b_negative, &r_positive, &r_negative)?;
        let shifted = self.add(&r, b)?;
        self.where_(&opposite, &shifted, &r)
    }

    /// A scalar 0 of `like`'s type, shaped to broadcast against it.
    fn zero_like(&self, like: &Operand) -> Result<Operand> {
        let desc = OperandDescriptor::new(like.data_type(), vec![1; like.shape().len()]);
        let bytes = vec![0u8; desc.byte_length()];
        self.constant(desc, &bytes)
    }
}
