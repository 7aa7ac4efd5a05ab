//! Builder methods for the reductions (`reduceMean`, `reduceSum`, ...) and
//! `argMin`/`argMax`.

use super::{GraphBuilder, Operand};
use crate::error::Result;
use crate::ml::ops::{Op, ReduceKind};
use crate::ml::shape;

impl GraphBuilder {
    fn reduce(
        &self,
        kind: ReduceKind,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.check(kind.name(), &[input])?;
        let (out, axes) = shape::reduce(kind, &input.desc, axes, keep_dimensions)?;
        self.single(
            Op::Reduce {
                kind,
                axes,
                keep_dimensions,
            },
            &[input],
            out,
        )
    }

    /// WebNN `reduceMean`; `axes: None` reduces over every axis, an empty
    /// slice over none (each element is its own mean). Float only.
    pub fn reduce_mean(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::Mean, input, axes, keep_dimensions)
    }

    /// WebNN `reduceSum` (float or int32; int32 wraps on overflow).
    pub fn reduce_sum(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::Sum, input, axes, keep_dimensions)
    }

    /// WebNN `reduceMax` (float or int32).
    pub fn reduce_max(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::Max, input, axes, keep_dimensions)
    }

    /// WebNN `reduceMin` (float or int32).
    pub fn reduce_min(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::Min, input, axes, keep_dimensions)
    }

    /// WebNN `reduceProduct` (float or int32; int32 wraps on overflow).
    pub fn reduce_product(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::Product, input, axes, keep_dimensions)
    }

    /// WebNN `reduceSumSquare`: sum(x^2). With empty axes, x^2.
    pub fn reduce_sum_square(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::SumSquare, input, axes, keep_dimensions)
    }

    /// WebNN `reduceL2`: sqrt(sum(x^2)). With empty axes, |x|.
    pub fn reduce_l2(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::L2, input, axes, keep_dimensions)
    }

    /// WebNN `reduceLogSumExp`: log(sum(exp(x))), computed stably as
    /// max + log(sum(exp(x - max))).
    pub fn reduce_log_sum_exp(
        &self,
        input: &Operand,
        axes: Option<&[usize]>,
        keep_dimensions: bool,
    ) -> Result<Operand> {
        self.reduce(ReduceKind::LogSumExp, input, axes, keep_dimensions)
    }

    fn arg_min_max(
        &self,
        max: bool,
        input: &Operand,
        axis: usize,
        keep_dimensions: bool,
        select_last_index: bool,
    ) -> Result<Operand> {
        let op = Op::ArgMinMax {
            max,
            axis,
            keep_dimensions,
            select_last_index,
        };
        self.check(op.name(), &[input])?;
        let out = shape::arg_min_max(op.name(), &input.desc, axis, keep_dimensions)?;
        self.single(op, &[input], out)
    }

    /// WebNN `argMax`: int32 index along `axis` of the largest value; of the
    /// first one on ties, or the last with `select_last_index`. NaN as
    /// onnxruntime treats it: the scan starts from the first element and
    /// takes a later one only when it compares greater (or equal, for the
    /// last index), so a NaN never wins unless it comes first, and then it
    /// stays (index 0). That holds on the CPU context; WGSL lets a GPU
    /// assume no NaNs, so there it is what the driver does. Any data type.
    pub fn arg_max(
        &self,
        input: &Operand,
        axis: usize,
        keep_dimensions: bool,
        select_last_index: bool,
    ) -> Result<Operand> {
        self.arg_min_max(true, input, axis, keep_dimensions, select_last_index)
    }

    /// WebNN `argMin`: as [`arg_max`](GraphBuilder::arg_max), smallest value.
    pub fn arg_min(
        &self,
        input: &Operand,
        axis: usize,
        keep_dimensions: bool,
        select_last_index: bool,
    ) -> Result<Operand> {
        self.arg_min_max(false, input, axis, keep_dimensions, select_last_index)
    }
}
