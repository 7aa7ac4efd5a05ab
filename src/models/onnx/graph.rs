//! Walks an ONNX graph in dependency order, keeping each value as a host
//! constant or a builder operand, folding what it can on the CPU and
//! handing the rest to `ops`.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::proto;
use super::tail::{Deferred, Tail};
use super::tensor::{Const, Data, Elem};
use super::{fold, ops, OnnxSource};
use crate::error::{Error, Result};
use crate::ml::{DataType, GraphBuilder, Operand, OperandDescriptor};
use crate::models::{model_error, Written};

/// An ONNX value at import time.
#[derive(Clone, Debug)]
pub(super) enum Value {
    /// Known on the host: initializers, `Constant` nodes, folded results.
    Const(Arc<Const>),
    /// Computed by the graph; `elem` keeps the ONNX type (int64 and int32
    /// are both Int32 operands, bool and uint8 both Uint8).
    Op { op: Operand, elem: Elem },
}

impl Value {
    pub(super) fn shape(&self) -> Vec<usize> {
        match self {
            Value::Const(c) => c.shape.clone(),
            Value::Op { op, .. } => op.shape().to_vec(),
        }
    }

    pub(super) fn elem(&self) -> Elem {
        match self {
            Value::Const(c) => c.elem,
            Value::Op { elem, .. } => *elem,
        }
    }

    pub(super) fn konst(&self) -> Option<&Arc<Const>> {
        match self {
            Value::Const(c) => Some(c),
            Value::Op { .. } => None,
        }
    }
}

pub(super) fn elem_of(data_type: DataType) -> Elem {
    match data_type {
        DataType::Float32 => Elem::F32,
        DataType::Float16 => Elem::F16,
        DataType::Int32 => Elem::I64,
        DataType::Uint8 => Elem::Bool,
    }
}

pub(super) struct Writer<'s> {
    pub(super) src: &'s OnnxSource,
    pub(super) b: &'s GraphBuilder,
    pub(super) values: HashMap<String, Value>,
    /// Graph constants already made from host values, by the `Const`'s address.
    materialized: HashMap<usize, Operand>,
    /// Operand ids that are graph inputs or constants: a graph output that
    /// is one of them goes through `identity`.
    not_computed: HashSet<usize>,
    /// How many nodes (and graph outputs) read each value.
    pub(super) readers: HashMap<String, Vec<usize>>,
    /// BatchNormalization nodes already folded into their Conv.
    pub(super) folded: HashSet<usize>,
    /// Where errors point: the node being written.
    pub(super) location: String,
    /// The opset of the node being written.
    pub(super) opset: i64,
    /// Items in the batch being written: a graph input's open or declared-1
    /// leading dimension is this.
    pub(super) batch: usize,
    /// Nodes after a data-dependent size, for the host stage (`tail.rs`).
    deferred: Deferred,
}

impl<'s> Writer<'s> {
    pub(super) fn new(src: &'s OnnxSource, b: &'s GraphBuilder, batch: usize) -> Self {
        Writer {
            src,
            b,
            values: HashMap::new(),
            materialized: HashMap::new(),
            not_computed: HashSet::new(),
            readers: HashMap::new(),
            folded: HashSet::new(),
            location: "graph".into(),
            opset: src.opset,
            batch,
            deferred: Deferred::default(),
        }
    }

    pub(super) fn err(&self, message: impl std::fmt::Display) -> Error {
        model_error(&self.src.path, &self.location, message)
    }

    /// Wraps an error from the graph builder with the file and node.
    pub(super) fn ctx<T>(&self, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.err(e))
    }

    pub(super) fn nodes(&self) -> &'s [proto::NodeProto] {
        &self.src.graph.node
    }

    /// The graph operand for a value, making host values graph constants
    /// (once each).
    pub(super) fn operand(&mut self, v: &Value) -> Result<Operand> {
        let c = match v {
            Value::Op { op, .. } => return Ok(op.clone()),
            Value::Const(c) => c,
        };
        let key = Arc::as_ptr(c) as usize;
        if let Some(o) = self.materialized.get(&key) {
            return Ok(o.clone());
        }
        if c.shape.contains(&0) {
            return Err(self.err(format!(
                "an empty tensor (shape {:?}) cannot be a graph value",
                c.shape
            )));
        }
        // A NaN weight is a broken file; infinities stay legal (masks).
        if let Data::F(values) = &c.data {
            if let Some(i) = values.iter().position(|v| v.is_nan()) {
                return Err(self.err(format!(
                    "a constant {:?} input holds NaN at element {i}",
                    c.shape
                )));
            }
        }
        let (desc, bytes) = c.to_bytes("constant").map_err(|e| self.err(e))?;
        let o = self.ctx(self.b.constant(desc, &bytes))?;
        self.materialized.insert(key, o.clone());
        self.not_computed.insert(o.id);
        // Keep the Const alive as long as its address is a key.
        self.values
            .entry(format!("\u{0}const{key}"))
            .or_insert_with(|| Value::Const(c.clone()));
        Ok(o)
    }

    /// A scalar constant of the value's type, shaped to broadcast against it.
    pub(super) fn scalar_like(&mut self, like: &Operand, value: f32) -> Result<Operand> {
        let rank = like.shape().len();
        let shape = vec![1; rank];
        let elem = elem_of(like.data_type());
        let c = if elem.is_float() {
            Const::floats(elem, shape, vec![value])
        } else {
            Const::ints(elem, shape, vec![value as i64])
        };
        self.operand(&Value::Const(Arc::new(c)))
    }

    pub(super) fn computed(&self, op: Operand) -> Value {
        let elem = elem_of(op.data_type());
        Value::Op { op, elem }
    }

    /// Orders the nodes so every input is written before it is read.
    fn order(&mut self) -> Result<Vec<usize>> {
        let nodes = self.nodes();
        let mut producer: HashMap<&str, usize> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            for o in n.output.iter().filter(|o| !o.is_empty()) {
                if producer.insert(o, i).is_some() || self.values.contains_key(o.as_str()) {
                    self.location = describe(n, i, self.src.opset);
                    return Err(self.err(format!("output '{o}' is written twice")));
                }
            }
        }
        let mut waiting = vec![0usize; nodes.len()];
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            // A branch reads names of the enclosing graph without listing
            // them as inputs: those are dependencies too.
            let mut reads: Vec<&String> = n.input.iter().collect();
            for a in &n.attribute {
                if let Some(g) = &a.g {
                    outer_reads(g, &mut reads);
                }
            }
            for name in reads.into_iter().filter(|s| !s.is_empty()) {
                self.readers.entry(name.clone()).or_default().push(i);
                if let Some(&p) = producer.get(name.as_str()) {
                    waiting[i] += 1;
                    dependents[p].push(i);
                } else if !self.values.contains_key(name.as_str()) {
                    self.location = describe(n, i, self.src.opset);
                    return Err(self.err(format!(
                        "input '{name}' is not an initializer, a graph input or any node's output"
                    )));
                }
            }
        }
        for o in &self.src.graph.output {
            self.readers
                .entry(o.name().to_string())
                .or_default()
                .push(usize::MAX);
        }
        let mut ready: VecDeque<usize> = (0..nodes.len()).filter(|&i| waiting[i] == 0).collect();
        let mut order = Vec::with_capacity(nodes.len());
        while let Some(i) = ready.pop_front() {
            order.push(i);
            for &d in &dependents[i] {
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    ready.push_back(d);
                }
            }
        }
        if let Some(stuck) = (0..nodes.len()).find(|&i| waiting[i] > 0) {
            self.location = describe(&nodes[stuck], stuck, self.src.opset);
            return Err(
                self.err("the graph has a cycle through this node (it depends on its own output)")
            );
        }
        Ok(order)
    }

    pub(super) fn write(mut self, hw: Option<(usize, usize)>) -> Result<Written> {
        for (name, c) in &self.src.initializers {
            self.values.insert(name.clone(), Value::Const(c.clone()));
        }
        for (info, elem) in &self.src.inputs {
            self.location = format!("input '{}'", info.name);
            let shape = self.input_shape(&info.shape, hw)?;
            // The builder's errors name the input themselves.
            let o = self
                .b
                .input(&info.name, OperandDescriptor::new(elem.data_type(), shape))
                .map_err(|e| model_error(&self.src.path, "graph", e))?;
            self.not_computed.insert(o.id);
            self.values
                .insert(info.name.clone(), Value::Op { op: o, elem: *elem });
        }
        let order = self.order()?;
        for i in order {
            let n = &self.nodes()[i];
            self.write_node(n, i)?;
        }
        self.location = "graph".into();
        if !self.deferred.nodes.is_empty() {
            return self.write_staged();
        }
        let mut outputs = Vec::new();
        let mut seen = HashSet::new();
        for o in &self.src.graph.output {
            self.location = format!("output '{}'", o.name());
            self.b.note_origin(&self.location);
            let v = self
                .values
                .get(o.name())
                .cloned()
                .ok_or_else(|| self.err("no node writes this graph output"))?;
            let op = self.operand(&v)?;
            outputs.push((o.name().to_string(), self.own_output(op, &mut seen)?));
        }
        Ok(Written {
            outputs,
            step: None,
        })
    }

    /// A graph output must be computed by the graph, and each output its
    /// own operand.
    fn own_output(&mut self, op: Operand, seen: &mut HashSet<usize>) -> Result<Operand> {
        if self.not_computed.contains(&op.id) || !seen.insert(op.id) {
            let op = self.ctx(self.b.identity(&op))?;
            seen.insert(op.id);
            return Ok(op);
        }
        Ok(op)
    }

    /// The graph's outputs where nodes were deferred to the host stage: the
    /// computed values the stage reads; the model's outputs are the stage's,
    /// of the shapes the file declares.
    fn write_staged(mut self) -> Result<Written> {
        let open_batch = self
            .src
            .inputs
            .iter()
            .any(|(info, _)| info.shape.first().is_some_and(Option::is_none));
        // Rows selected from the values read back: no more than the
        // largest of them holds.
        let bound = (self.deferred.cut.iter())
            .map(|(_, op, _)| op.shape().iter().product::<usize>())
            .max()
            .unwrap_or(1)
            .max(1);
        let mut declared = Vec::new();
        for (info, elem) in &self.src.outputs {
            let name = info.name.as_str();
            self.location = format!("output '{name}'");
            if !self.deferred.is_late(name) {
                match self.values.get(name).cloned() {
                    Some(Value::Op { op, elem }) => self.deferred.read_back(name, &op, elem),
                    Some(Value::Const(c)) => {
                        self.deferred.consts.insert(name.to_string(), c);
                    }
                    None => return Err(self.err("no node writes this graph output")),
                }
            }
            // An open first axis is the batch where the inputs' is open
            // too (a dynamic-batch export); any other open axis is a count
            // only the data decides, declared at the bound and padded.
            let open: Vec<bool> = info
                .shape
                .iter()
                .enumerate()
                .map(|(axis, d)| d.is_none() && !(axis == 0 && open_batch))
                .collect();
            let shape = info
                .shape
                .iter()
                .zip(&open)
                .map(|(d, &open)| match (d, open) {
                    (Some(d), _) => *d,
                    (None, true) => bound,
                    (None, false) => self.batch,
                })
                .collect::<Vec<_>>();
            declared.push((
                name.to_string(),
                OperandDescriptor::new(elem.data_type(), shape),
                open,
            ));
        }
        self.location = "graph".into();
        let cut = std::mem::take(&mut self.deferred.cut);
        let mut outputs = Vec::new();
        let mut seen = HashSet::new();
        for (name, op, _) in &cut {
            outputs.push((name.clone(), self.own_output(op.clone(), &mut seen)?));
        }
        let tail = Tail {
            path: self.src.path.clone(),
            nodes: std::mem::take(&mut self.deferred.nodes),
            consts: std::mem::take(&mut self.deferred.consts),
            cut: cut.into_iter().map(|(n, _, e)| (n, e)).collect(),
            outputs: declared
                .iter()
                .map(|(n, d, open)| (n.clone(), d.shape.clone(), open.clone()))
                .collect(),
        };
        let declared = declared.into_iter().map(|(n, d, _)| (n, d)).collect();
        Ok(Written {
            outputs,
            step: Some((Arc::new(tail), declared)),
        })
    }

    /// Defers node `n` to the host stage: its computed inputs are read back
    /// from the graph, and its outputs are known only there.
    fn defer(&mut self, n: &'s proto::NodeProto) -> Result<()> {
        let branches: Vec<&proto::GraphProto> = n
            .attribute
            .iter()
            .flat_map(|a| a.g.iter().chain(&a.graphs))
            .collect();
        if !branches.is_empty() && n.op_type() != "If" {
            return Err(self.err(
                "a subgraph after a data-dependent size (NonZero, NonMaxSuppression) is not \
                 supported (an If's is)",
            ));
        }
        let around = branches.into_iter().flat_map(super::tail::outer_names);
        let inputs: Vec<String> = n.input.iter().cloned().chain(around).collect();
        for name in inputs.iter().filter(|i| !i.is_empty()) {
            if self.deferred.is_late(name) {
                continue;
            }
            match self.values.get(name.as_str()).cloned() {
                Some(Value::Op { op, elem }) => self.deferred.read_back(name, &op, elem),
                Some(Value::Const(c)) => {
                    self.deferred.consts.insert(name.clone(), c);
                }
                None => return Err(self.err(format!("input '{name}' is not written yet"))),
            }
        }
        self.deferred
            .nodes
            .push((n.clone(), self.opset, self.location.clone()));
        self.deferred
            .late
            .extend(n.output.iter().filter(|o| !o.is_empty()).cloned());
        Ok(())
    }

    /// An input's shape for this build: a symbolic batch, or one the file
    /// fixes at 1, is the batch being written; a 4-D input's symbolic height
    /// and width are `hw`.
    fn input_shape(
        &self,
        shape: &[Option<usize>],
        hw: Option<(usize, usize)>,
    ) -> Result<Vec<usize>> {
        let rank = shape.len();
        shape
            .iter()
            .enumerate()
            .map(|(axis, d)| match (d, axis, hw) {
                (Some(d), 2 | 3, Some((h, w))) if rank == 4 => {
                    let want = if axis == 2 { h } else { w };
                    if *d != want {
                        Err(self.err(format!(
                            "is {shape:?}: its size is fixed and cannot be built for {h}x{w}"
                        )))
                    } else {
                        Ok(*d)
                    }
                }
                (Some(1) | None, 0, _) => Ok(self.batch),
                (Some(d), _, _) => Ok(*d),
                (None, 2, Some((h, _))) if rank == 4 => Ok(h),
                (None, 3, Some((_, w))) if rank == 4 => Ok(w),
                (None, 2 | 3, None) if rank == 4 => {
                    Err(self.err("has a symbolic height or width: give an input size"))
                }
                (None, _, _) => Err(self.err(format!(
                    "dimension {axis} is symbolic and cannot be resolved (only the batch and a \
                     4-D image's height and width can be)"
                ))),
            })
            .collect()
    }

    fn write_node(&mut self, n: &'s proto::NodeProto, index: usize) -> Result<()> {
        let domain = n.domain();
        let default = domain.is_empty() || domain == "ai.onnx";
        if !default && domain != ops::CONTRIB_DOMAIN {
            let version = self
                .src
                .domain_versions
                .get(domain)
                .copied()
                .unwrap_or_default();
            self.location = describe(n, index, version);
            return Err(self.err(format!(
                "domain '{domain}' is not supported (only the default ai.onnx domain and \
                 onnxruntime's quantized operators of {} are)",
                ops::CONTRIB_DOMAIN
            )));
        }
        self.location = describe(n, index, self.src.opset);
        self.b.note_origin(&self.location);
        let Some(entry) = ops::entry(domain, n.op_type()) else {
            if default {
                return Err(self.err("operator not supported"));
            }
            return Err(self.err(format!(
                "operator not supported (of {}, wgnn reads {})",
                ops::CONTRIB_DOMAIN,
                ops::CONTRIB_NAMES.join(", ")
            )));
        };
        if self.folded.contains(&index) {
            // A BatchNormalization folded into the Conv that writes its input:
            // its output is that Conv's (already normalized) value.
            if let (Some(i), Some(o)) = (n.input.first(), n.output.first()) {
                let v = self
                    .values
                    .get(i.as_str())
                    .cloned()
                    .ok_or_else(|| self.err(format!("input '{i}' is not written yet")))?;
                self.values.insert(o.clone(), v);
            }
            return Ok(());
        }
        if n.input.iter().any(|i| self.deferred.is_late(i)) {
            if let Some(why) = ops::host_refusal(entry) {
                return Err(self.err(why));
            }
            return self.defer(n);
        }
        let inputs: Vec<Option<Value>> = n
            .input
            .iter()
            .map(|name| {
                if name.is_empty() {
                    Ok(None)
                } else {
                    self.values
                        .get(name.as_str())
                        .cloned()
                        .map(Some)
                        .ok_or_else(|| self.err(format!("input '{name}' is not written yet")))
                }
            })
            .collect::<Result<_>>()?;
        if ops::is_late(entry, &inputs) {
            return self.defer(n);
        }
        let attrs = Attrs(&n.attribute);
        let outputs = match fold::fold(self, &entry.fold, n, &attrs, &inputs)? {
            Some(consts) => consts
                .into_iter()
                .map(|c| Value::Const(Arc::new(c)))
                .collect(),
            None => (entry.write)(self, n, &attrs, &inputs)?,
        };
        for (k, name) in n.output.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            match outputs.get(k) {
                Some(v) => {
                    self.values.insert(name.clone(), v.clone());
                }
                None if self.readers.contains_key(name.as_str()) => {
                    return Err(self.err(format!(
                        "output {k} ('{name}') is read, but wgnn computes only the first {} \
                         output(s) of this operator",
                        outputs.len()
                    )))
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Writes the nodes of an `If` branch (chosen at import) into this
    /// graph, as if they stood in place of the `If`, and returns the
    /// branch's outputs.
    pub(super) fn inline_branch(&mut self, g: &'s proto::GraphProto) -> Result<Vec<Value>> {
        let location = self.location.clone();
        for t in &g.initializer {
            let c = super::tensor::decode(t, None)
                .map_err(|e| self.err(format!("initializer '{}': {e}", t.name())))?;
            self.values
                .insert(t.name().to_string(), Value::Const(Arc::new(c)));
        }
        for (k, n) in g.node.iter().enumerate() {
            // Indices past the enclosing graph's: nothing is folded there.
            self.write_node(n, usize::MAX - k)?;
        }
        self.location = location;
        g.output
            .iter()
            .map(|o| {
                self.values.get(o.name()).cloned().ok_or_else(|| {
                    self.err(format!("the branch never writes its output '{}'", o.name()))
                })
            })
            .collect()
    }

    /// The input at `i`, which must be present.
    pub(super) fn need<'v>(&self, inputs: &'v [Option<Value>], i: usize) -> Result<&'v Value> {
        inputs
            .get(i)
            .and_then(Option::as_ref)
            .ok_or_else(|| self.err(format!("input {i} is missing")))
    }

    /// The input at `i` as a host constant (shape-like inputs: axes, pads, sizes).
    pub(super) fn need_const(
        &self,
        inputs: &[Option<Value>],
        i: usize,
        what: &str,
    ) -> Result<Option<Arc<Const>>> {
        match inputs.get(i).and_then(Option::as_ref) {
            None => Ok(None),
            Some(Value::Const(c)) => Ok(Some(c.clone())),
            Some(Value::Op { .. }) => Err(self.err(format!(
                "input {i} ({what}) must be known at import (a constant or computed from shapes); \
                 here it depends on the model's input values"
            ))),
        }
    }
}

/// "node 'NAME' (OpType, opset N)", naming the node by its first output
/// when it has no name.
/// Names a subgraph (and the subgraphs inside it) reads from enclosing
/// graphs: inputs of its nodes that none of its nodes, initializers or
/// inputs define.
fn outer_reads<'a>(g: &'a proto::GraphProto, reads: &mut Vec<&'a String>) {
    let mut defined: HashSet<&str> = g.initializer.iter().map(|t| t.name()).collect();
    defined.extend(g.input.iter().map(|i| i.name()));
    for n in &g.node {
        let mut inner = n.input.iter().collect::<Vec<_>>();
        for a in &n.attribute {
            if let Some(sub) = &a.g {
                outer_reads(sub, &mut inner);
            }
        }
        reads.extend(
            inner
                .into_iter()
                .filter(|name| !defined.contains(name.as_str())),
        );
        defined.extend(n.output.iter().map(String::as_str));
    }
}

pub(super) fn describe(n: &proto::NodeProto, index: usize, opset: i64) -> String {
    let name = if n.name().is_empty() {
        match n.output.first() {
            Some(o) => format!("#{index} (output '{o}')"),
            None => format!("#{index}"),
        }
    } else {
        format!("'{}'", n.name())
    };
    format!("node {name} ({}, opset {opset})", n.op_type())
}

/// A node's attributes by name.
#[derive(Clone, Copy)]
pub(super) struct Attrs<'a>(pub &'a [proto::AttributeProto]);

impl<'a> Attrs<'a> {
    pub(super) fn get(&self, name: &str) -> Option<&'a proto::AttributeProto> {
        self.0.iter().find(|a| a.name() == name)
    }
    pub(super) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
    pub(super) fn int(&self, name: &str, default: i64) -> i64 {
        self.get(name).and_then(|a| a.i).unwrap_or(default)
    }
    pub(super) fn float(&self, name: &str, default: f32) -> f32 {
        self.get(name).and_then(|a| a.f).unwrap_or(default)
    }
    pub(super) fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.get(name).map(|a| a.ints.clone())
    }
    pub(super) fn floats(&self, name: &str) -> Option<Vec<f32>> {
        self.get(name).map(|a| a.floats.clone())
    }
    pub(super) fn string(&self, name: &str, default: &str) -> String {
        self.get(name)
            .and_then(|a| a.s.as_ref())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .unwrap_or_else(|| default.to_string())
    }
    pub(super) fn tensor(&self, name: &str) -> Option<&'a proto::TensorProto> {
        self.get(name).and_then(|a| a.t.as_ref())
    }
}
