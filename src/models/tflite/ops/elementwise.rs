//! Element-wise operators: the binary arithmetic (ADD, SUB, MUL, DIV,
//! MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, FLOOR_MOD), activations and unary maths,
//! PRELU, SOFTMAX and CAST.

use super::{Call, Writer};
use crate::error::Result;
use crate::ml::Operand;
use crate::models::tflite::fb;

impl<'a> Writer<'_, 'a> {
    /// Numpy-broadcasting binary ops, with their fused activation.
    pub(super) fn binary(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Operand> {
        use fb::BuiltinOperator as B;
        let a = self.input(call, 0)?;
        let c = self.input(call, 1)?;
        let b = self.b;
        let none = fb::ActivationFunctionType::NONE;
        let op = call.op;
        let (y, act) = match builtin {
            B::ADD => (
                b.add(&a, &c),
                op.builtin_options_as_add_options()
                    .map_or(none, |o| o.fused_activation_function()),
            ),
            B::SUB => (
                b.sub(&a, &c),
                op.builtin_options_as_sub_options()
                    .map_or(none, |o| o.fused_activation_function()),
            ),
            B::MUL => (
                b.mul(&a, &c),
                op.builtin_options_as_mul_options()
                    .map_or(none, |o| o.fused_activation_function()),
            ),
            B::DIV => (
                b.div(&a, &c),
                op.builtin_options_as_div_options()
                    .map_or(none, |o| o.fused_activation_function()),
            ),
            B::MAXIMUM => (b.max(&a, &c), none),
            B::MINIMUM => (b.min(&a, &c), none),
            // Python's modulo: the result takes the divisor's sign.
            B::FLOOR_MOD => (b.remainder(&a, &c, true), none),
            // (a - b)^2, as LiteRT computes it.
            _ => (b.sub(&a, &c).and_then(|d| b.mul(&d, &d)), none),
        };
        let y = self.ctx(y)?;
        self.activation(y, act)
    }

    pub(super) fn unary(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Operand> {
        use fb::BuiltinOperator as B;
        let x = self.input(call, 0)?;
        let b = self.b;
        self.ctx(match builtin {
            B::RELU => b.relu(&x),
            B::RELU6 => b.clamp(&x, 0.0, 6.0),
            B::RELU_N1_TO_1 => b.clamp(&x, -1.0, 1.0),
            B::LEAKY_RELU => {
                let alpha = call
                    .op
                    .builtin_options_as_leaky_relu_options()
                    .map_or(0.2, |o| o.alpha());
                b.leaky_relu(&x, alpha)
            }
            B::LOGISTIC => b.sigmoid(&x),
            B::TANH => b.tanh(&x),
            B::HARD_SWISH => b.hard_swish(&x),
            // TFLite's ELU has alpha 1.
            B::ELU => b.elu(&x, 1.0),
            B::EXP => b.exp(&x),
            B::SQRT => b.sqrt(&x),
            _ => b.sqrt(&x).and_then(|s| b.reciprocal(&s)),
        })
    }

    /// PRELU: `x < 0 ? alpha * x : x`, alpha broadcast to the input.
    pub(super) fn prelu(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let alpha = self.input(call, 1)?;
        self.ctx(self.b.prelu(&x, &alpha))
    }

    /// SOFTMAX over the last axis of `beta * x`.
    pub(super) fn softmax(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let mut x = self.input(call, 0)?;
        let rank = x.shape().len();
        if rank == 0 {
            return Err(self.err("input is a scalar; softmax needs an axis"));
        }
        let beta = call
            .op
            .builtin_options_as_softmax_options()
            .map_or(1.0, |o| o.beta());
        if !beta.is_finite() {
            return Err(self.err(format!("beta {beta} is not finite")));
        }
        if beta != 1.0 {
            let beta = self.scalar(beta, rank)?;
            x = self.ctx(self.b.mul(&x, &beta))?;
        }
        self.ctx(self.b.softmax(&x, rank - 1))
    }

    /// CAST to the output tensor's type (int64 is held as int32, bool as uint8).
    pub(super) fn cast(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let (_, to, _) = self.tensor(self.out(call)?)?;
        self.ctx(self.b.cast(&x, to))
    }
}
