//! `Graph` (WebNN `MLGraph`): a built graph, compiled once for its context
//! by the context's back end. This file checks each dispatch's bindings and
//! hands the compiled plan to the back end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::backend::{Plan, Storage, Timing};
use super::context::Context;
use super::graph_ir::GraphIr;
use super::host_stage::{HostStage, HostStep};
use super::precision::Precision;
use super::tensor::Tensor;
use super::types::OperandDescriptor;
use super::{fuse, Profile};
use crate::error::{Error, Result};

pub(crate) struct GraphInner {
    pub context: u64,
    pub ir: Arc<GraphIr>,
    pub plan: Plan,
    /// Nodes as the builder wrote them, before fusion.
    written_nodes: usize,
    /// F32 or F16: what the nodes compute in.
    precision: Precision,
    destroyed: AtomicBool,
    /// Counts the graph in [`crate::gpu::live`] while any handle lives.
    _live: crate::gpu::live::Token,
}

/// WebNN `MLGraph`.
#[derive(Clone)]
pub struct Graph {
    pub(crate) inner: Arc<GraphInner>,
    /// What runs on the host after the kernels, where the model's result
    /// sizes depend on the data ([`super::host_stage`]).
    stage: Option<Arc<HostStage>>,
}

impl Graph {
    /// A graph of `ir` as written (tests that make an IR by hand).
    #[cfg(test)]
    pub(crate) fn build(context: &Context, ir: GraphIr) -> Result<Graph> {
        Graph::build_as(context, ir, Precision::F32)
    }

    /// `ir` as written (float16 already applied by the builder when asked
    /// for: `precision` only records it), fused and compiled.
    pub(crate) fn build_as(context: &Context, ir: GraphIr, precision: Precision) -> Result<Graph> {
        let written_nodes = ir.nodes.len();
        let layout = super::layout::Policy::for_context(context);
        Graph::compile(context, fuse::fuse(ir, layout), written_nodes, precision)
    }

    /// `ir` compiled as written, without fusion or the layout pass: the
    /// reference the passes' tests compare with.
    #[cfg(test)]
    pub(crate) fn build_unfused(context: &Context, ir: GraphIr) -> Result<Graph> {
        let written_nodes = ir.nodes.len();
        Graph::compile(context, ir, written_nodes, Precision::F32)
    }

    fn compile(
        context: &Context,
        ir: GraphIr,
        written_nodes: usize,
        precision: Precision,
    ) -> Result<Graph> {
        context.alive("build")?;
        let ir = Arc::new(ir);
        let plan = context.inner.backend.compile(&ir)?;
        let live = match context.gpu_handle() {
            Some(gpu) => gpu.token(crate::gpu::live::Kind::Graph, 0),
            None => crate::gpu::live::Token::new(crate::gpu::live::Kind::Graph, 0, None),
        };
        Ok(Graph {
            inner: Arc::new(GraphInner {
                context: context.id(),
                ir,
                plan,
                written_nodes,
                precision,
                destroyed: AtomicBool::new(false),
                _live: live,
            }),
            stage: None,
        })
    }

    /// Names and descriptors of the graph's inputs, in declaration order.
    pub fn inputs(&self) -> Vec<(String, OperandDescriptor)> {
        let ir = &self.inner.ir;
        ir.inputs
            .iter()
            .map(|(n, id)| (n.clone(), ir.desc(*id).clone()))
            .collect()
    }

    /// This graph with `step` run on its outputs after every dispatch: the
    /// dispatch's outputs are then `outputs`, what `step` computes.
    pub fn with_host_step(
        &self,
        step: Arc<dyn HostStep>,
        outputs: Vec<(String, OperandDescriptor)>,
    ) -> Graph {
        Graph {
            inner: self.inner.clone(),
            stage: Some(Arc::new(HostStage { step, outputs })),
        }
    }

    /// Names and descriptors of the graph's outputs (its host step's, where
    /// it has one).
    pub fn outputs(&self) -> Vec<(String, OperandDescriptor)> {
        match &self.stage {
            Some(stage) => stage.outputs.clone(),
            None => self.kernel_outputs(),
        }
    }

    /// The outputs the kernels write.
    pub(crate) fn kernel_outputs(&self) -> Vec<(String, OperandDescriptor)> {
        let ir = &self.inner.ir;
        ir.outputs
            .iter()
            .map(|(n, id)| (n.clone(), ir.desc(*id).clone()))
            .collect()
    }

    /// Number of operator nodes after fusion (for tests and benchmarks).
    pub fn node_count(&self) -> usize {
        self.inner.ir.nodes.len()
    }

    /// Number of operator nodes as the builder wrote them, before fusion
    /// folded some into others: `written_node_count() - node_count()` ops
    /// were fused.
    pub fn written_node_count(&self) -> usize {
        self.inner.written_nodes
    }

    /// What the graph computes in: [`Precision::F16`] when it was built
    /// with that option (its float32 inputs and outputs stay float32),
    /// else [`Precision::F32`] (the types it was written in).
    pub fn precision(&self) -> Precision {
        self.inner.precision
    }

    /// WebNN `MLGraph.destroy()`: releases weights and intermediates now.
    pub fn destroy(&self) {
        self.inner.destroyed.store(true, Ordering::Release);
        self.inner.plan.release();
    }

    /// Checks names, descriptors and states of the tensors of a dispatch, and
    /// returns their storage in the graph's input and output order.
    fn bind<'t>(
        &self,
        context: &Context,
        inputs: &[(&str, &'t Tensor)],
        outputs: &[(&str, &'t Tensor)],
    ) -> Result<(Vec<&'t Storage>, Vec<&'t Storage>)> {
        if self.inner.destroyed.load(Ordering::Acquire) {
            return Err(Error::invalid("dispatch: the graph has been destroyed"));
        }
        if self.inner.context != context.id() {
            return Err(Error::invalid(
                "dispatch: the graph was built for another context",
            ));
        }
        let pick = |kind: &str,
                    declared: &[(String, OperandDescriptor)],
                    given: &[(&str, &'t Tensor)]|
         -> Result<Vec<&'t Tensor>> {
            for (name, _) in given {
                if !declared.iter().any(|(n, _)| n == name) {
                    let known: Vec<&str> = declared.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(Error::invalid(format!(
                        "dispatch: unknown {kind} '{name}' (the graph's {kind}s are {known:?})"
                    )));
                }
            }
            declared
                .iter()
                .map(|(name, want)| {
                    let mut matching = given.iter().filter(|(n, _)| n == name);
                    let (_, t) = matching.next().ok_or_else(|| {
                        Error::invalid(format!("dispatch: no tensor given for {kind} '{name}'"))
                    })?;
                    if matching.next().is_some() {
                        return Err(Error::invalid(format!(
                            "dispatch: {kind} '{name}' given twice"
                        )));
                    }
                    if t.descriptor().operand() != *want {
                        return Err(Error::invalid(format!(
                            "dispatch: {kind} '{name}' is {want}, but {t} was given"
                        )));
                    }
                    t.usable(context.id(), &format!("dispatch {kind} '{name}'"))?;
                    Ok(*t)
                })
                .collect()
        };
        let ins = pick("input", &self.inputs(), inputs)?;
        let outs = pick("output", &self.outputs(), outputs)?;
        for (i, o) in outs.iter().enumerate() {
            if ins.iter().any(|t| Arc::ptr_eq(&t.inner, &o.inner))
                || outs[..i].iter().any(|t| Arc::ptr_eq(&t.inner, &o.inner))
            {
                return Err(Error::invalid(format!(
                    "dispatch: {o} is used as an output and also as another input or output"
                )));
            }
        }
        let storage = |list: Vec<&'t Tensor>| list.into_iter().map(Tensor::storage).collect();
        Ok((storage(ins), storage(outs)))
    }

    /// Binds and runs one dispatch on the context's back end.
    fn run(
        &self,
        what: &'static str,
        context: &Context,
        inputs: &[(&str, &Tensor)],
        outputs: &[(&str, &Tensor)],
        timing: Timing<'_>,
    ) -> Result<()> {
        let (ins, outs) = self.bind(context, inputs, outputs)?;
        if let Some(stage) = &self.stage {
            return stage.dispatch(context, self, &ins, &outs, timing);
        }
        let plan = &self.inner.plan;
        context
            .inner
            .backend
            .dispatch(what, plan, &ins, &outs, timing)
    }

    pub(crate) fn dispatch(
        &self,
        context: &Context,
        inputs: &[(&str, &Tensor)],
        outputs: &[(&str, &Tensor)],
    ) -> Result<()> {
        self.run("dispatch", context, inputs, outputs, Timing::Off)
    }

    /// [`Graph::dispatch`] recorded into `commands` rather than submitted
    /// (GPU contexts only): the caller submits it, with its own work before
    /// and after it in the same submission.
    pub(crate) fn dispatch_into(
        &self,
        context: &Context,
        commands: &mut crate::gpu::Commands,
        inputs: &[(&str, &Tensor)],
        outputs: &[(&str, &Tensor)],
    ) -> Result<()> {
        context.alive("dispatch")?;
        self.run("dispatch", context, inputs, outputs, Timing::Into(commands))
    }

    /// Dispatches once, encoded exactly as [`Context::dispatch`] does, with
    /// a GPU timestamp before the first command (the input copies) and after
    /// the last (the output copies); waits and returns the GPU ms between
    /// them. Needs the TIMESTAMP_QUERY_INSIDE_ENCODERS feature; a CPU context
    /// has no GPU time (use [`Graph::profile`] for its wall times).
    pub fn gpu_time(
        &self,
        context: &Context,
        inputs: &[(&str, &Tensor)],
        outputs: &[(&str, &Tensor)],
    ) -> Result<f64> {
        context.alive("gpu_time")?;
        let mut ms = 0.0;
        self.run("gpu_time", context, inputs, outputs, Timing::Whole(&mut ms))?;
        Ok(ms)
    }

    /// Dispatches once, timing every kernel, and waits for the times. On a
    /// GPU context they are GPU timestamps (the adapter needs
    /// TIMESTAMP_QUERY); on a CPU context, each node's wall time on the
    /// context's worker, queued behind earlier dispatches like any other.
    pub fn profile(
        &self,
        context: &Context,
        inputs: &[(&str, &Tensor)],
        outputs: &[(&str, &Tensor)],
    ) -> Result<Profile> {
        context.alive("profile")?;
        let mut profile = Profile::default();
        self.run(
            "profile",
            context,
            inputs,
            outputs,
            Timing::PerKernel(&mut profile),
        )?;
        Ok(profile)
    }
}
