//! Operators that move data without arithmetic: CONCATENATION, RESHAPE,
//! SQUEEZE, TRANSPOSE, PAD, PADV2, MIRROR_PAD, SLICE, STRIDED_SLICE, SPLIT,
//! SPLIT_V, DEPTH_TO_SPACE, SPACE_TO_DEPTH, GATHER, ARG_MAX.

use super::{Call, Writer};
use crate::error::Result;
use crate::ml::{DataType, Operand, OperandDescriptor, PaddingMode};
use crate::models::tflite::fb;
use crate::models::tflite::strided_slice::{self, Spec};

impl<'a> Writer<'_, 'a> {
    pub(super) fn concatenation(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let o = call
            .op
            .builtin_options_as_concatenation_options()
            .ok_or_else(|| self.err("has no ConcatenationOptions"))?;
        let mut parts = Vec::new();
        for k in 0..call.inputs.len() {
            parts.push(self.input(call, k)?);
        }
        let first = parts.first().ok_or_else(|| self.err("has no inputs"))?;
        let axis = self.axis(o.axis().into(), first.shape().len())?;
        let refs: Vec<&Operand> = parts.iter().collect();
        // LiteRT's float kernel refuses a fused activation (and XNNPACK
        // ignores one), so no model that runs there has one.
        let act = o.fused_activation_function();
        if act != fb::ActivationFunctionType::NONE {
            return Err(self.err(format!(
                "fused activation {} on CONCATENATION (LiteRT refuses it too)",
                act.variant_name().unwrap_or("?")
            )));
        }
        self.ctx(self.b.concat(&refs, axis))
    }

    /// RESHAPE to the constant shape tensor (input 1) or the options'
    /// `new_shape`, one -1 taking the remaining elements. A computed shape
    /// tensor leaves the output's declared shape as the only static answer.
    pub(super) fn reshape(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        // A batch of items: a new shape that starts with the file's batch
        // of 1 starts with the batch instead.
        let batched = self.is_batched(self.arg(call, 0)?, &x)?;
        let from_tensor = match call.inputs.get(1) {
            Some(&raw) if raw >= 0 => {
                let i = self.tensor_index(raw)?;
                if self.values.contains_key(&i) {
                    None
                } else {
                    Some(self.const_ints(i, "the new shape")?)
                }
            }
            _ => None,
        };
        let from_options = call
            .op
            .builtin_options_as_reshape_options()
            .and_then(|o| o.new_shape())
            .map(|v| v.iter().map(i64::from).collect::<Vec<i64>>());
        let shape = match from_tensor.or(from_options) {
            Some(mut spec) => {
                if batched && spec.first() == Some(&1) {
                    spec[0] = self.batch as i64;
                }
                self.resolve_shape(&spec, x.shape())?
            }
            None if batched => self.batched_shape(&self.out_shape(call)?),
            None => self.out_shape(call)?,
        };
        self.ctx(self.b.reshape(&x, &shape))
    }

    /// A shape with at most one -1, for a tensor of the given shape.
    fn resolve_shape(&self, spec: &[i64], of: &[usize]) -> Result<Vec<usize>> {
        let count: usize = of.iter().product();
        let holes = spec.iter().filter(|&&d| d == -1).count();
        if spec.iter().any(|&d| d < -1 || d == 0) || holes > 1 {
            return Err(self.err(format!("new shape {spec:?} is not valid")));
        }
        // The file's numbers: their product may not fit.
        let known = spec
            .iter()
            .filter(|&&d| d != -1)
            .try_fold(1i64, |n, &d| n.checked_mul(d))
            .ok_or_else(|| self.err(format!("new shape {spec:?} has too many elements")))?;
        spec.iter()
            .map(|&d| {
                if d == -1 {
                    usize::try_from(known)
                        .ok()
                        .filter(|&k| count % k == 0)
                        .map(|k| count / k)
                        .ok_or_else(|| {
                            self.err(format!("new shape {spec:?} does not divide {of:?}"))
                        })
                } else {
                    Ok(d as usize)
                }
            })
            .collect()
    }

    pub(super) fn squeeze(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let rank = x.shape().len();
        let dims: Vec<i64> = call
            .op
            .builtin_options_as_squeeze_options()
            .and_then(|o| o.squeeze_dims())
            .map(|v| v.iter().map(i64::from).collect())
            .unwrap_or_default();
        // No squeeze_dims: every axis of size 1 goes.
        let every = dims.is_empty();
        let mut drop = vec![every; rank];
        for d in dims {
            let a = self.axis(d, rank)?;
            drop[a] = true;
        }
        let mut shape = Vec::new();
        for (a, &d) in x.shape().iter().enumerate() {
            if drop[a] && d == 1 {
                continue;
            }
            if drop[a] && !every {
                return Err(self.err(format!("cannot squeeze axis {a} of {:?}", x.shape())));
            }
            shape.push(d);
        }
        self.ctx(self.b.reshape(&x, &shape))
    }

    pub(super) fn transpose(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let rank = x.shape().len();
        let perm = self
            .const_ints(self.arg(call, 1)?, "the permutation")?
            .into_iter()
            .map(|p| self.axis(p, rank))
            .collect::<Result<Vec<usize>>>()?;
        self.ctx(self.b.transpose(&x, Some(&perm)))
    }

    /// The [rank, 2] paddings of input 1: (before, after) per axis.
    fn paddings(&self, call: &Call<'_, 'a>, rank: usize) -> Result<(Vec<usize>, Vec<usize>)> {
        let p = self.const_ints(self.arg(call, 1)?, "the paddings")?;
        if p.len() != 2 * rank || p.iter().any(|&v| v < 0) {
            return Err(self.err(format!(
                "paddings {p:?} are not [{rank}, 2] non-negative values"
            )));
        }
        let before = p.iter().step_by(2).map(|&v| v as usize).collect();
        let after = p.iter().skip(1).step_by(2).map(|&v| v as usize).collect();
        Ok((before, after))
    }

    /// PAD (zeros) and PADV2 (the scalar of input 2).
    pub(super) fn pad(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let (before, after) = self.paddings(call, x.shape().len())?;
        let value = if builtin == fb::BuiltinOperator::PADV2 {
            match call.inputs.get(2) {
                Some(&raw) if raw >= 0 => {
                    let i = self.tensor_index(raw)?;
                    match self.constant(i)? {
                        Some((_, super::Values::F32(v))) if v.len() == 1 => v[0],
                        Some((_, super::Values::I32(v))) if v.len() == 1 => v[0] as f32,
                        _ => {
                            return Err(self.err(format!(
                                "the constant value (tensor {i}) must be a constant scalar"
                            )))
                        }
                    }
                }
                _ => 0.0,
            }
        } else {
            0.0
        };
        self.ctx(
            self.b
                .pad(&x, &before, &after, PaddingMode::Constant, value),
        )
    }

    /// MIRROR_PAD: REFLECT leaves the edge out (WebNN's reflection);
    /// SYMMETRIC repeats it, built as a gather of mirrored indices per axis.
    pub(super) fn mirror_pad(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let shape = x.shape().to_vec();
        let (before, after) = self.paddings(call, shape.len())?;
        let mode = call
            .op
            .builtin_options_as_mirror_pad_options()
            .map_or(fb::MirrorPadMode::REFLECT, |o| o.mode());
        let symmetric = match mode {
            fb::MirrorPadMode::REFLECT => false,
            fb::MirrorPadMode::SYMMETRIC => true,
            m => return Err(self.err(format!("unknown mirror pad mode {}", m.0))),
        };
        let edge = usize::from(!symmetric);
        for (a, &d) in shape.iter().enumerate() {
            if before[a] + edge > d || after[a] + edge > d {
                return Err(self.err(format!(
                    "padding {}+{} of axis {a} ({d}) is wider than {} allows",
                    before[a],
                    after[a],
                    if symmetric { "SYMMETRIC" } else { "REFLECT" }
                )));
            }
        }
        if !symmetric {
            return self.ctx(
                self.b
                    .pad(&x, &before, &after, PaddingMode::Reflection, 0.0),
            );
        }
        let mut y = x;
        for (a, &d) in shape.iter().enumerate() {
            if before[a] == 0 && after[a] == 0 {
                continue;
            }
            let indices: Vec<i32> = (0..before[a])
                .rev()
                .chain(0..d)
                .chain((d - after[a]..d).rev())
                .map(|i| i as i32)
                .collect();
            let indices = self.int_constant(&[indices.len()], &indices)?;
            y = self.ctx(self.b.gather(&y, &indices, a))?;
        }
        Ok(y)
    }

    fn int_constant(&self, shape: &[usize], values: &[i32]) -> Result<Operand> {
        self.ctx(self.b.constant(
            OperandDescriptor::new(DataType::Int32, shape),
            bytemuck::cast_slice(values),
        ))
    }

    /// The input reversed along `axis` (a gather of n-1..0).
    fn reverse(&self, x: &Operand, axis: usize) -> Result<Operand> {
        let n = x.shape()[axis];
        let indices: Vec<i32> = (0..n as i32).rev().collect();
        let indices = self.int_constant(&[n], &indices)?;
        self.ctx(self.b.gather(x, &indices, axis))
    }

    /// SLICE: constant begin and size (-1: to the end).
    pub(super) fn slice(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let shape = x.shape().to_vec();
        let begin = self.const_ints(self.arg(call, 1)?, "the begin")?;
        let size = self.const_ints(self.arg(call, 2)?, "the size")?;
        if begin.len() != shape.len() || size.len() != shape.len() {
            return Err(self.err(format!(
                "begin {begin:?} and size {size:?} do not match rank {}",
                shape.len()
            )));
        }
        let mut starts = Vec::new();
        let mut sizes = Vec::new();
        for (a, &d) in shape.iter().enumerate() {
            let d = d as i64;
            let s = begin[a];
            let n = if size[a] == -1 { d - s } else { size[a] };
            if s < 0 || n <= 0 || s + n > d {
                return Err(self.err(format!(
                    "begin {} size {} does not fit axis {a} of {shape:?}",
                    begin[a], size[a]
                )));
            }
            starts.push(s as usize);
            sizes.push(n as usize);
        }
        self.ctx(self.b.slice(&x, &starts, &sizes, None))
    }

    /// STRIDED_SLICE: the masks resolved (see `strided_slice`), new axes
    /// inserted by a reshape, one positive-stride slice, axes with negative
    /// strides reversed, and shrunk axes dropped by a final reshape.
    pub(super) fn strided_slice(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let o = call.op.builtin_options_as_strided_slice_options();
        let spec = Spec {
            begin: self.const_ints(self.arg(call, 1)?, "the begin")?,
            end: self.const_ints(self.arg(call, 2)?, "the end")?,
            strides: match call.inputs.get(3) {
                Some(&raw) if raw >= 0 => {
                    self.const_ints(self.tensor_index(raw)?, "the strides")?
                }
                _ => vec![],
            },
            begin_mask: o.map_or(0, |o| o.begin_mask()),
            end_mask: o.map_or(0, |o| o.end_mask()),
            ellipsis_mask: o.map_or(0, |o| o.ellipsis_mask()),
            new_axis_mask: o.map_or(0, |o| o.new_axis_mask()),
            shrink_axis_mask: o.map_or(0, |o| o.shrink_axis_mask()),
            offset: false,
        };
        let spec = if spec.strides.is_empty() {
            Spec {
                strides: vec![1; spec.begin.len()],
                ..spec
            }
        } else {
            spec
        };
        let axes = strided_slice::resolve(x.shape(), &spec).map_err(|e| self.err(e))?;
        if let Some(a) = axes.iter().position(|a| a.size == 0) {
            return Err(self.err(format!(
                "axis {a} of the result is empty, which wgnn cannot represent"
            )));
        }
        let effective: Vec<usize> = {
            let mut input = x.shape().iter();
            axes.iter()
                .map(|a| {
                    if a.new {
                        Some(1)
                    } else {
                        input.next().copied()
                    }
                })
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| self.err("the slice spec has more axes than the input"))?
        };
        let mut y = x;
        if effective != y.shape() {
            y = self.ctx(self.b.reshape(&y, &effective))?;
        }
        // Element k is start + k * stride; for a negative stride, slice
        // forwards from the last element taken and reverse afterwards.
        let starts: Vec<usize> = axes
            .iter()
            .map(|a| {
                if a.stride < 0 {
                    a.start - (a.size - 1) * a.stride.unsigned_abs() as usize
                } else {
                    a.start
                }
            })
            .collect();
        let sizes: Vec<usize> = axes.iter().map(|a| a.size).collect();
        let steps: Vec<usize> = axes
            .iter()
            .map(|a| a.stride.unsigned_abs() as usize)
            .collect();
        if starts.iter().any(|&s| s != 0) || sizes != effective || steps.iter().any(|&s| s != 1) {
            y = self.ctx(self.b.slice(&y, &starts, &sizes, Some(&steps)))?;
        }
        for (a, axis) in axes.iter().enumerate() {
            if axis.stride < 0 && axis.size > 1 {
                y = self.reverse(&y, a)?;
            }
        }
        let out: Vec<usize> = axes.iter().filter(|a| !a.shrink).map(|a| a.size).collect();
        if out != y.shape() {
            y = self.ctx(self.b.reshape(&y, &out))?;
        }
        Ok(y)
    }

    /// SPLIT (inputs [axis, input], num_splits equal parts) and SPLIT_V
    /// (inputs [input, size_splits, axis], one size may be -1).
    pub(super) fn split(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Vec<Operand>> {
        let v = builtin == fb::BuiltinOperator::SPLIT_V;
        let (x, axis) = if v {
            (self.input(call, 0)?, self.arg(call, 2)?)
        } else {
            (self.input(call, 1)?, self.arg(call, 0)?)
        };
        let axis = match self.const_ints(axis, "the axis")?[..] {
            [a] => self.axis(a, x.shape().len())?,
            ref a => return Err(self.err(format!("axis {a:?} is not a scalar"))),
        };
        let dim = x.shape()[axis];
        let sizes: Vec<usize> = if v {
            let spec = self.const_ints(self.arg(call, 1)?, "the split sizes")?;
            let known: i64 = spec.iter().filter(|&&s| s != -1).sum();
            let holes = spec.iter().filter(|&&s| s == -1).count();
            let rest = dim as i64 - known;
            if spec.iter().any(|&s| s < -1 || s == 0) || holes > 1 || rest < i64::from(holes > 0) {
                return Err(self.err(format!(
                    "split sizes {spec:?} do not split axis {axis} ({dim})"
                )));
            }
            spec.iter()
                .map(|&s| if s == -1 { rest as usize } else { s as usize })
                .collect()
        } else {
            let n = call
                .op
                .builtin_options_as_split_options()
                .map_or(call.outputs.len() as i32, |o| o.num_splits());
            match usize::try_from(n) {
                Ok(n) if n > 0 && dim % n == 0 => vec![dim / n; n],
                _ => {
                    return Err(self.err(format!(
                        "num_splits {n} does not divide axis {axis} ({dim})"
                    )))
                }
            }
        };
        self.ctx(self.b.split_sizes(&x, &sizes, axis))
    }

    /// DEPTH_TO_SPACE / SPACE_TO_DEPTH (NHWC, TF's depth order: the block's
    /// row, then its column, then the channel) as reshape-transpose-reshape.
    pub(super) fn depth_space(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Operand> {
        let to_space = builtin == fb::BuiltinOperator::DEPTH_TO_SPACE;
        let block = if to_space {
            call.op
                .builtin_options_as_depth_to_space_options()
                .map(|o| o.block_size())
        } else {
            call.op
                .builtin_options_as_space_to_depth_options()
                .map(|o| o.block_size())
        };
        let bs = match block.map(usize::try_from) {
            Some(Ok(b)) if b > 0 => b,
            _ => return Err(self.err(format!("block size {block:?} is not positive"))),
        };
        let (x, [n, h, w, c]) = self.input_nhwc(call, 0)?;
        let perm = [0, 1, 3, 2, 4, 5];
        let y = if to_space {
            if c % (bs * bs) != 0 {
                return Err(self.err(format!("{c} channels do not divide by {bs}x{bs}")));
            }
            let oc = c / (bs * bs);
            let t = self.ctx(self.b.reshape(&x, &[n, h, w, bs, bs, oc]))?;
            let t = self.ctx(self.b.transpose(&t, Some(&perm)))?;
            self.ctx(self.b.reshape(&t, &[n, h * bs, w * bs, oc]))?
        } else {
            if h % bs != 0 || w % bs != 0 {
                return Err(self.err(format!("{h}x{w} does not divide by {bs}x{bs}")));
            }
            let t = self.ctx(self.b.reshape(&x, &[n, h / bs, bs, w / bs, bs, c]))?;
            let t = self.ctx(self.b.transpose(&t, Some(&perm)))?;
            self.ctx(self.b.reshape(&t, &[n, h / bs, w / bs, bs * bs * c]))?
        };
        Ok(y)
    }

    /// GATHER along `axis` (batch_dims 0).
    pub(super) fn gather(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let indices = self.input(call, 1)?;
        let o = call.op.builtin_options_as_gather_options();
        let batch_dims = o.map_or(0, |o| o.batch_dims());
        if batch_dims != 0 {
            return Err(self.err(format!("batch_dims {batch_dims} is not supported (only 0)")));
        }
        let axis = self.axis(o.map_or(0, |o| o.axis()).into(), x.shape().len())?;
        self.ctx(self.b.gather(&x, &indices, axis))
    }

    /// ARG_MAX along the constant axis of input 1; the first maximum wins,
    /// as in LiteRT. int64 outputs are held as int32.
    pub(super) fn arg_max(&mut self, call: &Call<'_, 'a>) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let axis = match self.const_ints(self.arg(call, 1)?, "the axis")?[..] {
            [a] => self.axis(a, x.shape().len())?,
            ref a => return Err(self.err(format!("axis {a:?} is not a scalar"))),
        };
        self.ctx(self.b.arg_max(&x, axis, false, false))
    }
}
