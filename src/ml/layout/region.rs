//! Regions of operands that share a layout, and which of them to convert.

use super::nodes::{self, Form};
use super::Policy;
use crate::ml::graph_ir::{GraphIr, OperandId};

/// The pass's decision: which nodes run in NHWC, which operands are stored
/// NHWC.
pub(super) struct Regions {
    /// Per node: its NHWC form where it is in a converted region.
    pub forms: Vec<Option<Form>>,
    /// Per operand: stored NHWC (in a converted region).
    pub flipped: Vec<bool>,
}

/// What converting one region costs and gains.
#[derive(Clone, Copy, Default)]
struct Tally {
    convs: usize,
    /// Those of `convs` the float16 tensor cores take.
    tensor_core_convs: usize,
    transposes: usize,
}

impl Tally {
    /// The rules of the module's documentation.
    fn pays(self, policy: Policy) -> bool {
        match policy {
            Policy::FewerTransposes => self.transposes < self.convs,
            Policy::TensorCores => {
                let others = self.convs - self.tensor_core_convs;
                self.tensor_core_convs > self.transposes + others
            }
            Policy::Never => false,
        }
    }
}

impl Regions {
    pub fn find(ir: &GraphIr, policy: Policy) -> Regions {
        let forms: Vec<Option<Form>> = ir.nodes.iter().map(|n| nodes::form(ir, n)).collect();
        let mut sets = DisjointSets::new(ir.operands.len());
        for (node, form) in ir.nodes.iter().zip(&forms) {
            let Some(form) = form else { continue };
            let carried = node.inputs.iter().zip(&form.carried).filter(|(_, &c)| c);
            for (&x, _) in carried {
                sets.join(x, node.outputs[0]);
            }
            for &y in &node.outputs[1..] {
                sets.join(y, node.outputs[0]);
            }
        }
        let mut member = vec![false; ir.operands.len()];
        let mut tally = vec![Tally::default(); ir.operands.len()];
        for (node, form) in ir.nodes.iter().zip(&forms) {
            if let Some(form) = form {
                let root = sets.root(node.outputs[0]);
                tally[root].convs += nodes::is_conv(&node.op) as usize;
                tally[root].tensor_core_convs += nodes::tensor_cores_take(ir, node) as usize;
                for (&x, _) in node.inputs.iter().zip(&form.carried).filter(|(_, &c)| c) {
                    member[x] = true;
                }
                for &y in &node.outputs {
                    member[y] = true;
                }
            }
        }
        let edges = Edges::find(ir, &forms, &member);
        for x in (0..ir.operands.len()).filter(|&x| member[x]) {
            tally[sets.root(x)].transposes += edges.entry[x] as usize + edges.exit[x] as usize;
        }
        let flipped: Vec<bool> = (0..ir.operands.len())
            .map(|x| member[x] && tally[sets.root(x)].pays(policy))
            .collect();
        let forms = ir
            .nodes
            .iter()
            .zip(forms)
            .map(|(node, form)| form.filter(|_| flipped[node.outputs[0]]))
            .collect();
        Regions { forms, flipped }
    }

    pub fn any_flipped(&self) -> bool {
        self.flipped.iter().any(|&f| f)
    }
}

/// Where region operands cross the region's edge, each crossing one
/// transpose if the region is converted.
pub(super) struct Edges {
    /// Computed outside any region (a graph input, a node without an
    /// NHWC form) and read inside one.
    pub entry: Vec<bool>,
    /// Computed inside a region and read outside it (a graph output, a node
    /// without an NHWC form, or a slot that takes no layout).
    pub exit: Vec<bool>,
}

impl Edges {
    pub fn find(ir: &GraphIr, forms: &[Option<Form>], member: &[bool]) -> Edges {
        let mut inside = vec![false; ir.operands.len()];
        let mut exit = vec![false; ir.operands.len()];
        for (node, form) in ir.nodes.iter().zip(forms) {
            for (k, &x) in node.inputs.iter().enumerate() {
                if !form.as_ref().is_some_and(|f| f.carried[k]) {
                    exit[x] = true;
                }
            }
            if form.is_some() {
                for &y in &node.outputs {
                    inside[y] = true;
                }
            }
        }
        for (_, y) in &ir.outputs {
            exit[*y] = true;
        }
        let entry = (0..ir.operands.len())
            .map(|x| member[x] && !inside[x])
            .collect();
        let exit = (0..ir.operands.len())
            .map(|x| member[x] && inside[x] && exit[x])
            .collect();
        Edges { entry, exit }
    }
}

/// Union-find over operands.
struct DisjointSets(Vec<OperandId>);

impl DisjointSets {
    fn new(n: usize) -> Self {
        DisjointSets((0..n).collect())
    }

    fn root(&mut self, mut x: OperandId) -> OperandId {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }

    fn join(&mut self, a: OperandId, b: OperandId) {
        let (a, b) = (self.root(a), self.root(b));
        self.0[a] = b;
    }
}
