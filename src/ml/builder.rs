//! `GraphBuilder` (WebNN `MLGraphBuilder`): records operands and operators,
//! inferring and checking every shape as the graph is written, so that a
//! mismatch is reported at the op that caused it.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::context::Context;
use super::graph::Graph;
use super::graph_ir::{GraphIr, Node, OperandId, OperandInfo, OperandKind};
use super::ops::*;
use super::precision::{self, BuildOptions, Precision};
use super::shape;
use super::types::{DataType, OperandDescriptor};
use crate::error::{Error, Result};

mod elementwise;
mod gather;
mod normalization;
mod quant_conv;
mod reduce;
mod remainder;

static NEXT_BUILDER: AtomicU64 = AtomicU64::new(1);

/// WebNN `MLOperand`: a value in a graph under construction.
#[derive(Clone, Debug)]
pub struct Operand {
    pub(crate) id: OperandId,
    builder: u64,
    desc: OperandDescriptor,
}

impl Operand {
    pub fn descriptor(&self) -> &OperandDescriptor {
        &self.desc
    }

    pub fn shape(&self) -> &[usize] {
        &self.desc.shape
    }

    pub fn data_type(&self) -> DataType {
        self.desc.data_type
    }
}

/// WebNN `MLGraphBuilder`.
pub struct GraphBuilder {
    /// `None` for a builder that only infers shapes ([`GraphBuilder::shapes_only`]).
    context: Option<Context>,
    id: u64,
    ir: RefCell<GraphIr>,
    built: Cell<bool>,
    /// (first node, origin) as a model importer noted them: which operator
    /// of a file the nodes from that index on were written for, so a check
    /// over the written graph (`models::batch`) can name it.
    origins: RefCell<Vec<(usize, String)>>,
}

impl GraphBuilder {
    pub fn new(context: &Context) -> Self {
        GraphBuilder::with_context(Some(context.clone()))
    }

    /// A builder with no context: it infers and checks every shape as the
    /// graph is written, as one from [`GraphBuilder::new`] does, but cannot
    /// [`build`](GraphBuilder::build). For checking a model's shapes or
    /// working out its outputs without starting a context.
    pub fn shapes_only() -> Self {
        GraphBuilder::with_context(None)
    }

    fn with_context(context: Option<Context>) -> Self {
        GraphBuilder {
            context,
            id: NEXT_BUILDER.fetch_add(1, Ordering::Relaxed),
            ir: RefCell::default(),
            built: Cell::new(false),
            origins: RefCell::default(),
        }
    }

    fn push_operand(&self, desc: OperandDescriptor, kind: OperandKind, label: String) -> Operand {
        let mut ir = self.ir.borrow_mut();
        let id = ir.operands.len();
        ir.operands.push(OperandInfo {
            desc: desc.clone(),
            kind,
            label,
        });
        Operand {
            id,
            builder: self.id,
            desc,
        }
    }

    fn check(&self, op: &str, operands: &[&Operand]) -> Result<()> {
        if self.built.get() {
            return Err(Error::invalid(format!(
                "{op}: this GraphBuilder has already built its graph"
            )));
        }
        for o in operands {
            if o.builder != self.id {
                return Err(Error::invalid(format!(
                    "{op}: operand {} belongs to another GraphBuilder",
                    self.ir
                        .borrow()
                        .operands
                        .get(o.id)
                        .map_or("?", |i| &i.label)
                )));
            }
        }
        Ok(())
    }

    fn node(
        &self,
        op: Op,
        inputs: &[&Operand],
        outputs: Vec<OperandDescriptor>,
    ) -> Result<Vec<Operand>> {
        let name = op.name();
        for (i, d) in outputs.iter().enumerate() {
            d.validate(&format!("{name} output {i}"))?;
        }
        let index = self.ir.borrow().nodes.len();
        let outs: Vec<Operand> = outputs
            .into_iter()
            .map(|d| self.push_operand(d, OperandKind::Computed, format!("{name} #{index}")))
            .collect();
        self.ir.borrow_mut().nodes.push(Node {
            op,
            inputs: inputs.iter().map(|o| o.id).collect(),
            outputs: outs.iter().map(|o| o.id).collect(),
            activations: Vec::new(),
            input_scale: false,
            residual: false,
            late_residual: false,
            input_upsample: None,
        });
        Ok(outs)
    }

    fn single(&self, op: Op, inputs: &[&Operand], output: OperandDescriptor) -> Result<Operand> {
        Ok(self.node(op, inputs, vec![output])?.remove(0))
    }

    /// Notes that the nodes written from now on come from `origin` (a model
    /// file's operator, e.g. "operator #57 (RESHAPE)").
    pub(crate) fn note_origin(&self, origin: &str) {
        let at = self.ir.borrow().nodes.len();
        let mut origins = self.origins.borrow_mut();
        if origins.last().is_some_and(|(n, _)| *n == at) {
            origins.pop();
        }
        origins.push((at, origin.to_string()));
    }

    /// The origin noted last before node `node` was written, if any.
    pub(crate) fn origin_of(&self, node: usize) -> Option<String> {
        let origins = self.origins.borrow();
        let i = origins.partition_point(|(n, _)| *n <= node);
        i.checked_sub(1).map(|i| origins[i].1.clone())
    }

    /// The graph written so far (for checks over all of it, e.g. whether it
    /// keeps the items of a batch apart: `models::batch`).
    pub(crate) fn ir(&self) -> std::cell::Ref<'_, GraphIr> {
        self.ir.borrow()
    }

    /// The inputs declared so far, in order (for working out a model's input
    /// shapes with a [`shapes_only`](GraphBuilder::shapes_only) builder).
    pub(crate) fn declared_inputs(&self) -> Vec<(String, OperandDescriptor)> {
        let ir = self.ir.borrow();
        ir.inputs
            .iter()
            .map(|(n, id)| (n.clone(), ir.desc(*id).clone()))
            .collect()
    }

    /// WebNN `input(name, descriptor)`.
    pub fn input(&self, name: &str, desc: OperandDescriptor) -> Result<Operand> {
        self.check("input", &[])?;
        desc.validate(&format!("input '{name}'"))?;
        if self.ir.borrow().inputs.iter().any(|(n, _)| n == name) {
            return Err(Error::invalid(format!("input '{name}' is declared twice")));
        }
        let o = self.push_operand(desc, OperandKind::Input, format!("input '{name}'"));
        self.ir.borrow_mut().inputs.push((name.into(), o.id));
        Ok(o)
    }

    /// WebNN `constant(descriptor, buffer)`: `bytes` are little-endian values.
    pub fn constant(&self, desc: OperandDescriptor, bytes: &[u8]) -> Result<Operand> {
        self.check("constant", &[])?;
        let index = self.ir.borrow().operands.len();
        desc.validate(&format!("constant #{index}"))?;
        if bytes.len() != desc.byte_length() {
            return Err(Error::invalid(format!(
                "constant #{index} ({desc}) needs {} bytes, got {}",
                desc.byte_length(),
                bytes.len()
            )));
        }
        Ok(self.push_operand(
            desc,
            OperandKind::Constant(Arc::new(bytes.to_vec())),
            format!("constant #{index}"),
        ))
    }

    /// A float32 constant from values.
    pub fn constant_f32(&self, shape: &[usize], values: &[f32]) -> Result<Operand> {
        self.constant(OperandDescriptor::f32(shape), bytemuck::cast_slice(values))
    }

    pub fn conv2d(
        &self,
        input: &Operand,
        filter: &Operand,
        bias: Option<&Operand>,
        options: Conv2dOptions,
    ) -> Result<Operand> {
        let mut ops = vec![input, filter];
        ops.extend(bias);
        self.check("conv2d", &ops)?;
        let out = shape::conv2d(&input.desc, &filter.desc, bias.map(|b| &b.desc), &options)?;
        self.single(Op::Conv2d(options), &ops, out)
    }

    pub fn conv_transpose2d(
        &self,
        input: &Operand,
        filter: &Operand,
        bias: Option<&Operand>,
        options: ConvTranspose2dOptions,
    ) -> Result<Operand> {
        let mut ops = vec![input, filter];
        ops.extend(bias);
        self.check("convTranspose2d", &ops)?;
        let out =
            shape::conv_transpose2d(&input.desc, &filter.desc, bias.map(|b| &b.desc), &options)?;
        self.single(Op::ConvTranspose2d(options), &ops, out)
    }

    pub fn average_pool2d(&self, input: &Operand, options: Pool2dOptions) -> Result<Operand> {
        self.pool2d(PoolKind::Average, input, options)
    }

    pub fn max_pool2d(&self, input: &Operand, options: Pool2dOptions) -> Result<Operand> {
        self.pool2d(PoolKind::Max, input, options)
    }

    fn pool2d(&self, kind: PoolKind, input: &Operand, options: Pool2dOptions) -> Result<Operand> {
        let op = Op::Pool2d(kind, options);
        self.check(op.name(), &[input])?;
        let Op::Pool2d(_, options) = &op else {
            unreachable!()
        };
        let (out, resolved) = shape::pool2d(op.name(), &input.desc, options)?;
        self.single(Op::Pool2d(kind, resolved), &[input], out)
    }

    pub fn resample2d(&self, input: &Operand, options: Resample2dOptions) -> Result<Operand> {
        self.check("resample2d", &[input])?;
        let out = shape::resample2d(&input.desc, &options)?;
        self.single(Op::Resample2d(options), &[input], out)
    }

    pub fn concat(&self, inputs: &[&Operand], axis: usize) -> Result<Operand> {
        self.check("concat", inputs)?;
        let descs: Vec<&OperandDescriptor> = inputs.iter().map(|o| &o.desc).collect();
        let out = shape::concat(&descs, axis)?;
        self.single(Op::Concat { axis }, inputs, out)
    }

    pub fn reshape(&self, input: &Operand, new_shape: &[usize]) -> Result<Operand> {
        self.check("reshape", &[input])?;
        let out = OperandDescriptor::new(input.data_type(), new_shape);
        if out.element_count() != input.desc.element_count() {
            return Err(Error::invalid(format!(
                "reshape: cannot reshape {} into {:?} (element counts {} and {})",
                input.desc,
                new_shape,
                input.desc.element_count(),
                out.element_count()
            )));
        }
        self.single(Op::Reshape, &[input], out)
    }

    /// WebNN `transpose`; `None` reverses the axes.
    pub fn transpose(&self, input: &Operand, permutation: Option<&[usize]>) -> Result<Operand> {
        self.check("transpose", &[input])?;
        let rank = input.desc.rank();
        let perm: Vec<usize> =
            permutation.map_or_else(|| (0..rank).rev().collect(), |p| p.to_vec());
        let out = shape::transpose(&input.desc, &perm)?;
        self.single(Op::Transpose { permutation: perm }, &[input], out)
    }

    pub fn slice(
        &self,
        input: &Operand,
        starts: &[usize],
        sizes: &[usize],
        strides: Option<&[usize]>,
    ) -> Result<Operand> {
        self.check("slice", &[input])?;
        let strides = strides.map_or_else(|| vec![1; starts.len()], |s| s.to_vec());
        let out = shape::slice(&input.desc, starts, sizes, &strides)?;
        self.single(
            Op::Slice {
                starts: starts.to_vec(),
                sizes: sizes.to_vec(),
                strides,
            },
            &[input],
            out,
        )
    }

    pub fn pad(
        &self,
        input: &Operand,
        beginning: &[usize],
        ending: &[usize],
        mode: PaddingMode,
        value: f32,
    ) -> Result<Operand> {
        self.check("pad", &[input])?;
        let out = shape::pad(&input.desc, beginning, ending, mode)?;
        self.single(
            Op::Pad {
                beginning: beginning.to_vec(),
                ending: ending.to_vec(),
                mode,
                value,
            },
            &[input],
            out,
        )
    }

    /// WebNN `split` into `count` equal parts.
    pub fn split(&self, input: &Operand, count: usize, axis: usize) -> Result<Vec<Operand>> {
        self.check("split", &[input])?;
        let dim = *input.desc.shape.get(axis).ok_or_else(|| {
            Error::invalid(format!(
                "split: axis {axis} out of range for {}",
                input.desc
            ))
        })?;
        if count == 0 || dim % count != 0 {
            return Err(Error::invalid(format!(
                "split: dimension {axis} of {} ({dim}) does not divide into {count} parts",
                input.desc
            )));
        }
        self.split_sizes(input, &vec![dim / count; count], axis)
    }

    /// WebNN `split` with explicit sizes along `axis`.
    pub fn split_sizes(
        &self,
        input: &Operand,
        sizes: &[usize],
        axis: usize,
    ) -> Result<Vec<Operand>> {
        self.check("split", &[input])?;
        let outs = shape::split(&input.desc, sizes, axis)?;
        self.node(
            Op::Split {
                sizes: sizes.to_vec(),
                axis,
            },
            &[input],
            outs,
        )
    }

    pub fn add(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.binary(BinaryOp::Add, a, b)
    }
    pub fn sub(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.binary(BinaryOp::Sub, a, b)
    }
    pub fn mul(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.binary(BinaryOp::Mul, a, b)
    }
    pub fn div(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.binary(BinaryOp::Div, a, b)
    }
    pub fn max(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.binary(BinaryOp::Max, a, b)
    }
    pub fn min(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.binary(BinaryOp::Min, a, b)
    }

    fn binary(&self, op: BinaryOp, a: &Operand, b: &Operand) -> Result<Operand> {
        self.check(op.name(), &[a, b])?;
        let out = shape::binary(op.name(), &a.desc, &b.desc)?;
        self.single(Op::Binary(op), &[a, b], out)
    }

    fn unary(&self, act: Activation, input: &Operand) -> Result<Operand> {
        self.check(act.name(), &[input])?;
        shape::require_float(act.name(), &input.desc)?;
        self.single(Op::Unary(act), &[input], input.desc.clone())
    }

    pub fn relu(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Relu, input)
    }
    pub fn clamp(&self, input: &Operand, min: f32, max: f32) -> Result<Operand> {
        if min > max {
            return Err(Error::invalid(format!(
                "clamp: min {min} is greater than max {max}"
            )));
        }
        self.unary(Activation::Clamp { min, max }, input)
    }
    pub fn sigmoid(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Sigmoid, input)
    }
    pub fn tanh(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::Tanh, input)
    }
    pub fn leaky_relu(&self, input: &Operand, alpha: f32) -> Result<Operand> {
        self.unary(Activation::LeakyRelu { alpha }, input)
    }
    pub fn hard_swish(&self, input: &Operand) -> Result<Operand> {
        self.unary(Activation::HardSwish, input)
    }
    /// WebNN defaults: alpha 0.2, beta 0.5.
    pub fn hard_sigmoid(&self, input: &Operand, alpha: f32, beta: f32) -> Result<Operand> {
        self.unary(Activation::HardSigmoid { alpha, beta }, input)
    }

    pub fn prelu(&self, input: &Operand, slope: &Operand) -> Result<Operand> {
        self.check("prelu", &[input, slope])?;
        shape::require_float("prelu", &input.desc)?;
        let out = shape::binary("prelu", &input.desc, &slope.desc)?;
        if out.shape != input.desc.shape {
            return Err(Error::invalid(format!(
                "prelu: slope {} does not broadcast to input {}",
                slope.desc, input.desc
            )));
        }
        self.single(Op::Prelu, &[input, slope], out)
    }

    pub fn softmax(&self, input: &Operand, axis: usize) -> Result<Operand> {
        self.check("softmax", &[input])?;
        shape::require_float("softmax", &input.desc)?;
        if axis >= input.desc.rank() {
            return Err(Error::invalid(format!(
                "softmax: axis {axis} out of range for {}",
                input.desc
            )));
        }
        self.single(Op::Softmax { axis }, &[input], input.desc.clone())
    }

    pub fn matmul(&self, a: &Operand, b: &Operand) -> Result<Operand> {
        self.check("matmul", &[a, b])?;
        let out = shape::matmul(&a.desc, &b.desc)?;
        self.single(Op::Matmul, &[a, b], out)
    }

    pub fn gemm(
        &self,
        a: &Operand,
        b: &Operand,
        c: Option<&Operand>,
        options: GemmOptions,
    ) -> Result<Operand> {
        let mut ops = vec![a, b];
        ops.extend(c);
        self.check("gemm", &ops)?;
        let out = shape::gemm(&a.desc, &b.desc, c.map(|c| &c.desc), &options)?;
        self.single(Op::Gemm(options), &ops, out)
    }

    pub fn cast(&self, input: &Operand, data_type: DataType) -> Result<Operand> {
        self.check("cast", &[input])?;
        self.single(
            Op::Cast,
            &[input],
            OperandDescriptor::new(data_type, input.shape()),
        )
    }

    /// WebNN `build(outputs)`: compiles the graph for this builder's context,
    /// computing in the types it was written in. The builder cannot be used
    /// afterwards.
    pub fn build(&self, outputs: &[(&str, &Operand)]) -> Result<Graph> {
        self.build_with(outputs, BuildOptions::default())
    }

    /// [`build`](GraphBuilder::build) with wgnn's options (not in WebNN):
    /// `precision` [`Precision::F16`] computes a float32 graph in float16
    /// with the same float32 inputs and outputs (`ml::precision`). It needs
    /// a GPU with SHADER_F16; the CPU context runs it too (same rounding,
    /// no speed-up). [`Precision::Auto`] needs a probe input: build through
    /// [`crate::models::Model::build_with`].
    pub fn build_with(&self, outputs: &[(&str, &Operand)], options: BuildOptions) -> Result<Graph> {
        let ops: Vec<&Operand> = outputs.iter().map(|(_, o)| *o).collect();
        self.check("build", &ops)?;
        let Some(context) = &self.context else {
            return Err(Error::invalid(
                "build: this builder checks shapes only; build needs a context \
                 (GraphBuilder::new)",
            ));
        };
        if outputs.is_empty() {
            return Err(Error::invalid("build: a graph needs at least one output"));
        }
        let mut ir = self.ir.borrow().clone();
        for (name, o) in outputs {
            if ir.outputs.iter().any(|(n, _)| n == name) {
                return Err(Error::invalid(format!(
                    "build: output '{name}' is named twice"
                )));
            }
            if ir.inputs.iter().any(|(_, id)| *id == o.id) || ir.constant(o.id).is_some() {
                return Err(Error::invalid(format!(
                    "build: output '{name}' is an input or constant, not computed by the graph"
                )));
            }
            ir.outputs.push((name.to_string(), o.id));
        }
        let ir = match options.precision {
            Precision::F32 => ir,
            Precision::F16 => {
                if let Some(gpu) = context.gpu_handle() {
                    if !gpu.has(wgpu::Features::SHADER_F16) {
                        return Err(Error::invalid(format!(
                            "build: precision f16 needs the SHADER_F16 feature, which this GPU \
                             ({}) lacks; use f32 or auto",
                            gpu.info().name
                        )));
                    }
                }
                precision::to_float16(&ir)
            }
            Precision::Auto => {
                return Err(Error::invalid(
                    "build: precision auto compares float16 with float32 on a probe input, \
                     which a model build does (models::Model::build_with); the builder takes \
                     f32 or f16",
                ))
            }
        };
        self.built.set(true);
        Graph::build_as(context, ir, options.precision)
    }
}

#[cfg(test)]
mod tests {
    use super::GraphBuilder;
    use crate::ml::OperandDescriptor;

    #[test]
    fn a_shapes_only_builder_infers_and_checks_but_does_not_build() {
        let b = GraphBuilder::shapes_only();
        let x = b.input("x", OperandDescriptor::f32([2, 3])).unwrap();
        let w = b.constant_f32(&[3, 4], &[0.0; 12]).unwrap();
        let y = b.matmul(&x, &w).unwrap();
        assert_eq!(y.shape(), [2, 4]);
        let e = b.matmul(&y, &w).unwrap_err().to_string();
        assert!(e.contains("matmul: inner dimensions differ"), "{e}");
        let e = b.build(&[("y", &y)]).err().expect("a shapes-only build");
        let e = e.to_string();
        assert!(
            e.contains("build: this builder checks shapes only; build needs a context"),
            "{e}"
        );
    }
}
