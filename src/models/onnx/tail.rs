//! The host stage of an ONNX graph whose results have sizes that only the
//! data decides (an Ultralytics `nms=True` export: NonZero, GatherND,
//! NonMaxSuppression, then shape arithmetic on the counts). The graph stays
//! static: the importer defers a host-only operator (`Fold::Late`) that
//! reads a computed value, and every node after it that reads a deferred
//! value, to this stage; the graph's outputs become the computed values
//! those nodes read (small detection tensors: scores and boxes), read back
//! after each dispatch, and the stage computes the model's outputs from them
//! with the import-time evaluations of `ops`. An `If` there (torchvision's
//! batched NMS branches on whether any box is left) runs the branch its
//! condition picks, reading the values around it by name.
//!
//! An output whose size the file leaves open (torchvision's boxes, scores
//! and labels: `[N, 4]`, `[N]`, `[N]`) is declared at a bound and padded
//! with zeros after the computed rows, a fixed-size formulation like the
//! `[1, 300, 6]` an Ultralytics export pads to itself: the rows are a
//! selection from the values read back, so no more of them than the largest
//! of those has elements.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::proto;
use super::tensor::{Const, Data, Elem};
use crate::error::Result;
use crate::ml::{HostData, HostStep, HostTensor, Operand};
use crate::models::model_error;

/// What the importer collects while it writes the graph.
#[derive(Default)]
pub(super) struct Deferred {
    /// The deferred nodes in order, with their opset and their location.
    pub nodes: Vec<(proto::NodeProto, i64, String)>,
    /// Host constants the deferred nodes read.
    pub consts: HashMap<String, Arc<Const>>,
    /// Values the graph computes that the deferred nodes read, in the
    /// graph's output order.
    pub cut: Vec<(String, Operand, Elem)>,
    /// Values only the host stage knows.
    pub late: HashSet<String>,
}

impl Deferred {
    pub(super) fn is_late(&self, name: &str) -> bool {
        self.late.contains(name)
    }

    /// Reads the computed value `name` back from the graph (once).
    pub(super) fn read_back(&mut self, name: &str, op: &Operand, elem: Elem) {
        if !self.cut.iter().any(|(n, _, _)| n == name) {
            self.cut.push((name.to_string(), op.clone(), elem));
        }
    }
}

/// The host stage: the deferred nodes run on the values read back.
pub(super) struct Tail {
    pub path: PathBuf,
    pub nodes: Vec<(proto::NodeProto, i64, String)>,
    pub consts: HashMap<String, Arc<Const>>,
    /// Names and ONNX types of the graph's outputs, in order.
    pub cut: Vec<(String, Elem)>,
    /// The model's outputs, in order, with the shapes declared for them
    /// and which of their axes the file leaves open (padded to the
    /// declared size).
    pub outputs: Vec<(String, Vec<usize>, Vec<bool>)>,
}

/// A value read back as the host constant the evaluations take.
fn from_host(t: HostTensor, elem: Elem) -> Const {
    let shape = t.shape;
    match t.data {
        HostData::F32(v) => Const::floats(elem, shape, v),
        HostData::F16(v) => Const::floats(elem, shape, v.iter().map(|h| h.to_f32()).collect()),
        HostData::I32(v) => Const::ints(elem, shape, v.into_iter().map(i64::from).collect()),
        HostData::U8(v) => Const::ints(elem, shape, v.into_iter().map(i64::from).collect()),
    }
}

/// `c` padded with zeros along the `open` axes to `shape`; refused where
/// the stage computed more than the bound.
fn pad_open(c: &Const, shape: &[usize], open: &[bool]) -> std::result::Result<Const, String> {
    if c.shape == shape {
        return Ok(c.clone());
    }
    let fits = c.shape.len() == shape.len()
        && c.shape
            .iter()
            .zip(shape)
            .zip(open)
            .all(|((&got, &want), &open)| got == want || (open && got <= want));
    if !fits {
        return Err(format!(
            "the host stage computed {:?}, which does not fit the {shape:?} declared for it \
             (the file leaves open the axes whose size is up to that)",
            c.shape
        ));
    }
    // Row-major: each source element's index, axis by axis, in the target.
    let mut map = vec![0usize; c.len()];
    let mut index = vec![0usize; shape.len()];
    for slot in map.iter_mut() {
        *slot = index.iter().zip(shape).fold(0, |at, (&i, &d)| at * d + i);
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < c.shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    let size = shape.iter().product();
    Ok(match &c.data {
        Data::F(v) => {
            let mut out = vec![0.0; size];
            map.iter().zip(v).for_each(|(&at, &x)| out[at] = x);
            Const::floats(c.elem, shape.to_vec(), out)
        }
        Data::I(v) => {
            let mut out = vec![0; size];
            map.iter().zip(v).for_each(|(&at, &x)| out[at] = x);
            Const::ints(c.elem, shape.to_vec(), out)
        }
    })
}

/// The names an `If` branch reads from around it (recursively through the
/// branches inside it): what the host stage must have when it runs.
pub(super) fn outer_names(g: &proto::GraphProto) -> Vec<String> {
    let mut known: HashSet<&str> = g.initializer.iter().map(|t| t.name()).collect();
    known.extend(g.input.iter().map(|v| v.name()));
    let mut names = Vec::new();
    for n in &g.node {
        let inner = n
            .attribute
            .iter()
            .flat_map(|a| a.g.iter().chain(&a.graphs))
            .flat_map(outer_names);
        for name in n.input.iter().cloned().chain(inner) {
            if !name.is_empty() && !known.contains(name.as_str()) && !names.contains(&name) {
                names.push(name);
            }
        }
        known.extend(n.output.iter().map(String::as_str));
    }
    names
}

type Values = HashMap<String, Arc<Const>>;

impl Tail {
    /// Runs `nodes` on `values`, adding their outputs.
    fn run_nodes<'a>(
        &self,
        nodes: impl Iterator<Item = (&'a proto::NodeProto, i64, &'a str)>,
        values: &mut Values,
    ) -> Result<()> {
        for (n, opset, location) in nodes {
            let err = |e: String| model_error(&self.path, location, e);
            let inputs: Vec<Option<Arc<Const>>> = n
                .input
                .iter()
                .map(|name| match name.as_str() {
                    "" => Ok(None),
                    name => values
                        .get(name)
                        .cloned()
                        .map(Some)
                        .ok_or_else(|| err(format!("input '{name}' is not written yet"))),
                })
                .collect::<Result<_>>()?;
            let outputs = if n.op_type() == "If" {
                self.run_if(n, opset, location, &inputs, values)?
            } else {
                super::ops::on_host(n, opset, &inputs).map_err(err)?
            };
            for (name, c) in n.output.iter().zip(outputs) {
                values.insert(name.clone(), Arc::new(c));
            }
        }
        Ok(())
    }

    /// An `If`: the branch its condition picks, run on `values`.
    fn run_if(
        &self,
        n: &proto::NodeProto,
        opset: i64,
        location: &str,
        inputs: &[Option<Arc<Const>>],
        values: &mut Values,
    ) -> Result<Vec<Const>> {
        let err = |e: String| model_error(&self.path, location, e);
        let cond = inputs
            .first()
            .cloned()
            .flatten()
            .ok_or_else(|| err("input 0 (cond) is missing".into()))?;
        let g = super::ops::taken_branch(n, &cond).map_err(err)?;
        for t in &g.initializer {
            let c = super::tensor::decode(t, None)
                .map_err(|e| err(format!("initializer '{}': {e}", t.name())))?;
            values.insert(t.name().to_string(), Arc::new(c));
        }
        self.run_nodes(g.node.iter().map(|b| (b, opset, location)), values)?;
        g.output
            .iter()
            .map(|o| {
                values
                    .get(o.name())
                    .map(|c| c.as_ref().clone())
                    .ok_or_else(|| {
                        err(format!(
                            "its branch does not write its output '{}'",
                            o.name()
                        ))
                    })
            })
            .collect()
    }
}

impl HostStep for Tail {
    fn run(&self, inputs: Vec<HostTensor>) -> Result<Vec<HostTensor>> {
        let mut values = self.consts.clone();
        for ((name, elem), t) in self.cut.iter().zip(inputs) {
            values.insert(name.clone(), Arc::new(from_host(t, *elem)));
        }
        let nodes = self.nodes.iter().map(|(n, o, l)| (n, *o, l.as_str()));
        self.run_nodes(nodes, &mut values)?;
        self.outputs
            .iter()
            .map(|(name, shape, open)| {
                let err = |e: String| model_error(&self.path, format!("output '{name}'"), e);
                let c = values
                    .get(name)
                    .ok_or_else(|| err("no node writes this graph output".into()))?;
                pad_open(c, shape, open)
                    .and_then(|c| c.to_host("the host stage's result"))
                    .map_err(err)
            })
            .collect()
    }
}
