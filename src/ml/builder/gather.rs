//! Builder methods for `gather`, `expand` and `tile`: the ops that copy
//! elements to new positions, in any element type.

use super::{GraphBuilder, Operand};
use crate::error::Result;
use crate::ml::ops::Op;
use crate::ml::shape;

impl GraphBuilder {
    /// WebNN `gather`: slices of `input` along `axis` picked by int32
    /// `indices` (any rank, 0-D included); the output shape is
    /// `input[..axis] ++ indices.shape ++ input[axis + 1..]`. A negative
    /// index counts from the end (numpy, ONNX); an index still out of range
    /// is clamped to the nearest valid one (WebNN leaves it to the
    /// implementation; clamping never reads outside the tensor). Any type.
    pub fn gather(&self, input: &Operand, indices: &Operand, axis: usize) -> Result<Operand> {
        self.check("gather", &[input, indices])?;
        let out = shape::gather(&input.desc, &indices.desc, axis)?;
        self.single(Op::Gather { axis }, &[input, indices], out)
    }

    /// WebNN `expand`: `input` broadcast (numpy rules, one way) to
    /// `new_shape`. Any type.
    pub fn expand(&self, input: &Operand, new_shape: &[usize]) -> Result<Operand> {
        self.check("expand", &[input])?;
        let out = shape::expand(&input.desc, new_shape)?;
        self.single(Op::Expand, &[input], out)
    }

    /// WebNN `tile`: `input` repeated `repetitions[k]` times along axis k.
    /// Any type.
    pub fn tile(&self, input: &Operand, repetitions: &[usize]) -> Result<Operand> {
        self.check("tile", &[input])?;
        let out = shape::tile(&input.desc, repetitions)?;
        self.single(
            Op::Tile {
                repetitions: repetitions.to_vec(),
            },
            &[input],
            out,
        )
    }
}
