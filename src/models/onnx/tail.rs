//! The host stage of an ONNX graph whose results have sizes that only the
//! data decides (an Ultralytics `nms=True` export: NonZero, GatherND,
//! NonMaxSuppression, then shape arithmetic on the counts). The graph stays
//! static: the importer defers a host-only operator (`Fold::Late`) that
//! reads a computed value, and every node after it that reads a deferred
//! value, to this stage; the graph's outputs become the computed values
//! those nodes read (small detection tensors: scores and boxes), read back
//! after each dispatch, and the stage computes the model's outputs from them
//! with the import-time evaluations of `ops`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use super::proto;
use super::tensor::{Const, Elem};
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
    /// The model's outputs, in order.
    pub outputs: Vec<String>,
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

impl HostStep for Tail {
    fn run(&self, inputs: Vec<HostTensor>) -> Result<Vec<HostTensor>> {
        let mut values = self.consts.clone();
        for ((name, elem), t) in self.cut.iter().zip(inputs) {
            values.insert(name.clone(), Arc::new(from_host(t, *elem)));
        }
        for (n, opset, location) in &self.nodes {
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
            let outputs = super::ops::on_host(n, *opset, &inputs).map_err(err)?;
            for (name, c) in n.output.iter().zip(outputs) {
                values.insert(name.clone(), Arc::new(c));
            }
        }
        self.outputs
            .iter()
            .map(|name| {
                let err = |e: String| model_error(&self.path, format!("output '{name}'"), e);
                values
                    .get(name)
                    .ok_or_else(|| err("no node writes this graph output".into()))?
                    .to_host("the host stage's result")
                    .map_err(err)
            })
            .collect()
    }
}
