//! Activations that exporters write out long-hand, as element-wise nodes,
//! become one `Op::Unary` node, which `fuse_activations` then folds into
//! the producer of its input: PyTorch's SiLU is sigmoid -> mul(x, s), its
//! GELU (before opset 20) div -> erf -> add -> mul -> mul, and TF/Keras
//! and older torch write HardSwish and HardSigmoid as add, clip, mul and div.
//! Each reads x twice or more, so that no single activation folds.
//!
//! Exporters order and group the arithmetic in many ways (`x * 0.5 * (1 +
//! erf(x / sqrt 2))` or `(x * (erf(x * 0.7071) + 1)) * 0.5`, a `pow(x, 3)`
//! or `x * x * x`), so nodes are not matched one by one: the nodes computing
//! a function of x alone (with scalar constants) are written as a sum of
//! products of x and of functions of such sums ([`Poly`]), which every
//! grouping of the same formula gives alike, and that is compared with each
//! activation's. Constants must match to [`F32_TOLERANCE`] (relative), or
//! [`F16_TOLERANCE`] in float16 graphs, whose constants were rounded.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::ml::graph_ir::{GraphIr, Node, OperandId};
use crate::ml::ops::{Activation, BinaryOp, Op, GELU_TANH_CUBE, GELU_TANH_SCALE};
use crate::ml::types::DataType;

/// How far a float32 graph's constants (or their products) may be from the
/// activation's, relative.
const F32_TOLERANCE: f64 = 1e-6;
/// float16 constants are the float32 ones rounded (half an ulp: 2^-11
/// relative), and a coefficient may be the product of two or three of them.
const F16_TOLERANCE: f64 = 2e-3;
/// The most nodes of one function of x looked at: an exporter's longest
/// activation (GELU's tanh form) takes nine.
const MAX_NODES: usize = 32;
/// The most terms of a sum, and factors of a product, followed: the
/// activations need at most two and three; a long polynomial of x is
/// something else.
const MAX_TERMS: usize = 8;
const MAX_FACTORS: usize = 4;

/// A function of x: the sum of each term's coefficient times the product of
/// its factors (none: a constant).
#[derive(Clone, Debug, Default)]
struct Poly(Vec<(Vec<Factor>, f64)>);

#[derive(Clone, Debug)]
enum Factor {
    X,
    Of(Func, Poly),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Func {
    Sigmoid,
    Tanh,
    Erf,
    Softplus,
    /// Bounds, infinite where there is none.
    Clamp(f64, f64),
}

impl Poly {
    fn constant(c: f64) -> Poly {
        Poly(vec![(Vec::new(), c)])
    }

    fn x() -> Poly {
        Poly(vec![(vec![Factor::X], 1.0)])
    }

    fn of(f: Func, p: Poly) -> Poly {
        // clamp(clamp(p)) is one clamp, to the narrower bounds.
        let f = match (f, p.0.as_slice()) {
            (Func::Clamp(lo, hi), [(factors, k)]) if *k == 1.0 => match factors.as_slice() {
                [Factor::Of(Func::Clamp(l, h), q)] => {
                    return Poly::of(Func::Clamp(lo.max(*l), hi.min(*h)), q.clone())
                }
                _ => f,
            },
            _ => f,
        };
        Poly(vec![(vec![Factor::Of(f, p)], 1.0)])
    }

    fn plus(mut self, other: &Poly) -> Option<Poly> {
        for (factors, k) in &other.0 {
            match self
                .0
                .iter_mut()
                .find(|(f, _)| same_factors(f, factors, 0.0))
            {
                Some((_, c)) => *c += k,
                None => self.0.push((factors.clone(), *k)),
            }
        }
        self.0.retain(|(_, k)| *k != 0.0);
        (self.0.len() <= MAX_TERMS).then_some(self)
    }

    fn scaled(mut self, s: f64) -> Poly {
        self.0.iter_mut().for_each(|(_, k)| *k *= s);
        self.0.retain(|(_, k)| *k != 0.0);
        self
    }

    fn times(&self, other: &Poly) -> Option<Poly> {
        let mut product = Poly::default();
        for (a, ka) in &self.0 {
            for (b, kb) in &other.0 {
                let factors: Vec<Factor> = a.iter().chain(b).cloned().collect();
                if factors.len() > MAX_FACTORS {
                    return None;
                }
                product = product.plus(&Poly(vec![(factors, ka * kb)]))?;
            }
        }
        Some(product)
    }

    /// The function divided by x, where every term has x as a factor.
    fn over_x(&self) -> Option<Poly> {
        let terms = self.0.iter().map(|(factors, k)| {
            let at = factors.iter().position(|f| matches!(f, Factor::X))?;
            let mut rest = factors.clone();
            rest.remove(at);
            Some((rest, *k))
        });
        Some(Poly(terms.collect::<Option<_>>()?))
    }

    /// (c, k, p) where the function is c + k * clamp(lo, hi)(p), with its
    /// bounds.
    fn clamped(&self) -> Option<(f64, f64, (f64, f64), &Poly)> {
        let mut c = 0.0;
        let mut clamp = None;
        for (factors, k) in &self.0 {
            match factors.as_slice() {
                [] => c = *k,
                [Factor::Of(Func::Clamp(lo, hi), p)] if clamp.is_none() => {
                    clamp = Some((*k, (*lo, *hi), p))
                }
                _ => return None,
            }
        }
        clamp.map(|(k, bounds, p)| (c, k, bounds, p))
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    a == b || (a - b).abs() <= tol * b.abs()
}

/// The same multiset of factors, constants within `tol`.
fn same_factors(a: &[Factor], b: &[Factor], tol: f64) -> bool {
    let mut used = vec![false; b.len()];
    a.len() == b.len()
        && a.iter().all(|f| {
            let found = (0..b.len()).find(|&j| !used[j] && same_factor(f, &b[j], tol));
            found.map(|j| used[j] = true).is_some()
        })
}

fn same_factor(a: &Factor, b: &Factor, tol: f64) -> bool {
    match (a, b) {
        (Factor::X, Factor::X) => true,
        (Factor::Of(f, p), Factor::Of(g, q)) => {
            let funcs = match (f, g) {
                (Func::Clamp(a, b), Func::Clamp(c, d)) => close(*a, *c, tol) && close(*b, *d, tol),
                _ => f == g,
            };
            funcs && same(p, q, tol)
        }
        _ => false,
    }
}

/// The same terms, coefficients and constants within `tol` (relative).
fn same(a: &Poly, b: &Poly, tol: f64) -> bool {
    let mut used = vec![false; b.0.len()];
    a.0.len() == b.0.len()
        && a.0.iter().all(|(fa, ka)| {
            let found = (0..b.0.len()).find(|&j| {
                !used[j] && close(*ka, b.0[j].1, tol) && same_factors(fa, &b.0[j].0, tol)
            });
            found.map(|j| used[j] = true).is_some()
        })
}

/// (alpha, beta) where `g` is clamp(alpha x + beta, 0, 1), however its
/// constants are spread (clamp(x + 3, 0, 6) / 6 is (1/6, 1/2)).
fn hard_sigmoid(g: &Poly, tol: f64) -> Option<(f64, f64)> {
    let (c, k, (lo, hi), p) = g.clamped()?;
    let (lo, hi) = (k * lo + c, k * hi + c);
    let (lo, hi) = if k < 0.0 { (hi, lo) } else { (lo, hi) };
    if lo.abs() > tol || !close(hi, 1.0, tol) {
        return None;
    }
    let (mut a, mut b) = (0.0, 0.0);
    for (factors, v) in &p.0 {
        match factors.as_slice() {
            [] => b = *v,
            [Factor::X] => a = *v,
            _ => return None,
        }
    }
    (a != 0.0).then_some((k * a, k * b + c))
}

/// The activation `f` is, if any.
fn activation(f: &Poly, tol: f64) -> Option<Activation> {
    let x = Poly::x;
    let half_plus_half = |func, p| Poly::constant(0.5).plus(&Poly::of(func, p).scaled(0.5));
    if let Some(g) = f.over_x() {
        let gelu_tanh_inner = x()
            .plus(&x().times(&x())?.times(&x())?.scaled(GELU_TANH_CUBE))?
            .scaled(GELU_TANH_SCALE);
        let known = [
            (Activation::Silu, Poly::of(Func::Sigmoid, x())),
            (
                Activation::Mish,
                Poly::of(Func::Tanh, Poly::of(Func::Softplus, x())),
            ),
            (
                Activation::Gelu,
                half_plus_half(Func::Erf, x().scaled(std::f64::consts::FRAC_1_SQRT_2))?,
            ),
            (
                Activation::GeluTanh,
                half_plus_half(Func::Tanh, gelu_tanh_inner)?,
            ),
        ];
        if let Some((act, _)) = known.iter().find(|(_, want)| same(&g, want, tol)) {
            return Some(*act);
        }
        let hard_swish = hard_sigmoid(&g, tol)
            .is_some_and(|(a, b)| close(a, 1.0 / 6.0, tol) && close(b, 0.5, tol));
        if hard_swish {
            return Some(Activation::HardSwish);
        }
    }
    hard_sigmoid(f, tol).map(|(alpha, beta)| Activation::HardSigmoid {
        alpha: alpha as f32,
        beta: beta as f32,
    })
}

/// What one argument of a node is: a function of x, or a scalar constant.
enum Arg<'a> {
    F(&'a Poly),
    C(f64),
}

/// A clamp bound: the importers' stand-ins for none (±f32::MAX) are none.
fn bound(v: f32) -> f64 {
    match v {
        v if v >= f32::MAX => f64::INFINITY,
        v if v <= -f32::MAX => f64::NEG_INFINITY,
        v => f64::from(v),
    }
}

fn unary(act: Activation, p: &Poly) -> Option<Poly> {
    let p = p.clone();
    Some(match act {
        Activation::Sigmoid => Poly::of(Func::Sigmoid, p),
        Activation::Tanh => Poly::of(Func::Tanh, p),
        Activation::Erf => Poly::of(Func::Erf, p),
        Activation::Softplus => Poly::of(Func::Softplus, p),
        Activation::Relu => Poly::of(Func::Clamp(0.0, f64::INFINITY), p),
        Activation::Clamp { min, max } => Poly::of(Func::Clamp(bound(min), bound(max)), p),
        Activation::Neg => p.scaled(-1.0),
        Activation::Linear { alpha, beta } => {
            p.scaled(alpha.into()).plus(&Poly::constant(beta.into()))?
        }
        Activation::HardSigmoid { alpha, beta } => {
            let p = p.scaled(alpha.into()).plus(&Poly::constant(beta.into()))?;
            Poly::of(Func::Clamp(0.0, 1.0), p)
        }
        _ => return None,
    })
}

fn binary(op: BinaryOp, a: Arg<'_>, b: Arg<'_>) -> Option<Poly> {
    use Arg::{C, F};
    let clamp = |p: &Poly, lo, hi| Poly::of(Func::Clamp(lo, hi), p.clone());
    match (op, a, b) {
        (BinaryOp::Add, F(p), F(q)) => p.clone().plus(q),
        (BinaryOp::Add, F(p), C(c)) | (BinaryOp::Add, C(c), F(p)) => {
            p.clone().plus(&Poly::constant(c))
        }
        (BinaryOp::Sub, F(p), F(q)) => p.clone().plus(&q.clone().scaled(-1.0)),
        (BinaryOp::Sub, F(p), C(c)) => p.clone().plus(&Poly::constant(-c)),
        (BinaryOp::Sub, C(c), F(p)) => p.clone().scaled(-1.0).plus(&Poly::constant(c)),
        (BinaryOp::Mul, F(p), F(q)) => p.times(q),
        (BinaryOp::Mul, F(p), C(c)) | (BinaryOp::Mul, C(c), F(p)) => Some(p.clone().scaled(c)),
        (BinaryOp::Div, F(p), C(c)) if c != 0.0 => Some(p.clone().scaled(1.0 / c)),
        (BinaryOp::Max, F(p), C(c)) | (BinaryOp::Max, C(c), F(p)) => {
            Some(clamp(p, c, f64::INFINITY))
        }
        (BinaryOp::Min, F(p), C(c)) | (BinaryOp::Min, C(c), F(p)) => {
            Some(clamp(p, f64::NEG_INFINITY, c))
        }
        (BinaryOp::Pow, F(p), C(2.0)) => p.times(p),
        (BinaryOp::Pow, F(p), C(3.0)) => p.times(p)?.times(p),
        _ => None,
    }
}

/// The value of every element of a float constant of type `dt` whose
/// elements are all the same.
fn scalar(ir: &GraphIr, id: OperandId, dt: DataType) -> Option<f64> {
    let bytes = ir.constant(id)?;
    let mut values: Box<dyn Iterator<Item = f64>> = match ir.desc(id).data_type {
        d if d != dt => return None,
        DataType::Float32 => Box::new(
            bytes
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        ),
        DataType::Float16 => Box::new(
            bytes
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64()),
        ),
        _ => return None,
    };
    let first = values.next()?;
    values.all(|v| v == first).then_some(first)
}

/// What `node` computes as a function of x, where its operands are x's
/// functions in `known` or scalar constants (at least one of them x's) and
/// its output is shaped as x.
fn node_poly(
    ir: &GraphIr,
    node: &Node,
    x: OperandId,
    known: &HashMap<OperandId, Poly>,
) -> Option<Poly> {
    let plain = node.outputs.len() == 1
        && node.activations.is_empty()
        && !node.residual
        && !node.input_scale
        && node.input_upsample.is_none()
        && ir.desc(node.outputs[0]) == ir.desc(x);
    if !plain || !node.inputs.iter().any(|i| known.contains_key(i)) {
        return None;
    }
    let dt = ir.desc(x).data_type;
    let arg = |i: OperandId| match known.get(&i) {
        Some(p) => Some(Arg::F(p)),
        None => scalar(ir, i, dt).map(Arg::C),
    };
    match (&node.op, node.inputs.as_slice()) {
        (Op::Unary(act), &[a]) => unary(*act, known.get(&a)?),
        (Op::Binary(op), &[a, b]) => binary(*op, arg(a)?, arg(b)?),
        _ => None,
    }
}

/// Each node rewritten: the activation that replaces a pattern ending in
/// it, on x.
struct Found {
    root: usize,
    act: Activation,
    folded: Vec<usize>,
}

/// The last node of a pattern on x: the nodes computing functions of x
/// alone are followed from x in order, and the last one whose function is
/// an activation wins, where its nodes (at least two) are read by nothing
/// outside them.
fn find(
    ir: &GraphIr,
    x: OperandId,
    readers: &[Vec<usize>],
    keep: &[bool],
    outputs: &HashSet<OperandId>,
) -> Option<Found> {
    let tol = match ir.desc(x).data_type {
        DataType::Float16 => F16_TOLERANCE,
        _ => F32_TOLERANCE,
    };
    let live = |o: OperandId| readers[o].iter().copied().filter(|&n| keep[n]);
    let mut known = HashMap::from([(x, Poly::x())]);
    let mut producer = HashMap::new();
    let mut region = Vec::new();
    let mut pending: BTreeSet<usize> = live(x).collect();
    // In node order, so that a node's operands are known before it.
    while let Some(n) = pending.pop_first() {
        let node = &ir.nodes[n];
        let Some(p) = node_poly(ir, node, x, &known) else {
            continue;
        };
        let out = node.outputs[0];
        known.insert(out, p);
        producer.insert(out, n);
        region.push(n);
        if region.len() == MAX_NODES {
            break;
        }
        pending.extend(live(out));
    }
    region.iter().rev().find_map(|&root| {
        let act = activation(&known[&ir.nodes[root].outputs[0]], tol)?;
        // The nodes the root's value comes from, back to x.
        let mut nodes = BTreeSet::from([root]);
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            for i in &ir.nodes[n].inputs {
                if let Some(&p) = producer.get(i) {
                    if nodes.insert(p) {
                        stack.push(p);
                    }
                }
            }
        }
        let folded: Vec<usize> = nodes.into_iter().filter(|&n| n != root).collect();
        let inside = folded.iter().all(|&n| {
            let out = ir.nodes[n].outputs[0];
            !outputs.contains(&out) && live(out).all(|r| r == root || folded.contains(&r))
        });
        (inside && !folded.is_empty()).then_some(Found { root, act, folded })
    })
}

/// Every pattern replaced by its activation, on the graph's inputs and
/// every node's outputs in order.
pub(super) fn fuse_activation_patterns(mut ir: GraphIr) -> GraphIr {
    let mut readers = vec![Vec::new(); ir.operands.len()];
    for (i, node) in ir.nodes.iter().enumerate() {
        for &x in &node.inputs {
            readers[x].push(i);
        }
    }
    let outputs: HashSet<OperandId> = ir.outputs.iter().map(|(_, o)| *o).collect();
    let mut keep = vec![true; ir.nodes.len()];
    // (the node computing it, if any; x)
    let candidates: Vec<(Option<usize>, OperandId)> = (ir.inputs.iter().map(|(_, x)| (None, *x)))
        .chain(
            ir.nodes
                .iter()
                .enumerate()
                .flat_map(|(i, n)| n.outputs.iter().map(move |&x| (Some(i), x))),
        )
        .filter(|&(_, x)| ir.desc(x).data_type.is_float())
        .collect();
    for (at, x) in candidates {
        if at.is_some_and(|i| !keep[i]) {
            continue;
        }
        while let Some(Found { root, act, folded }) = find(&ir, x, &readers, &keep, &outputs) {
            for n in folded {
                keep[n] = false;
            }
            let node = &mut ir.nodes[root];
            node.op = Op::Unary(act);
            node.inputs = vec![x];
            readers[x].push(root);
        }
    }
    super::without_folded(ir, keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn affine(a: f64, b: f64) -> Poly {
        Poly::x().scaled(a).plus(&Poly::constant(b)).unwrap()
    }

    fn clamp(lo: f64, hi: f64, p: Poly) -> Poly {
        Poly::of(Func::Clamp(lo, hi), p)
    }

    #[test]
    fn a_hard_sigmoid_is_found_however_its_constants_are_spread() {
        let forms = [
            clamp(0.0, 6.0, affine(1.0, 3.0)).scaled(1.0 / 6.0),
            clamp(0.0, 1.0, affine(1.0 / 6.0, 0.5)),
            // 1 - clamp(0.5 - x / 6, 0, 1)
            Poly::constant(1.0)
                .plus(&clamp(0.0, 1.0, affine(-1.0 / 6.0, 0.5)).scaled(-1.0))
                .unwrap(),
            // max(min(x + 3, 6), 0) / 6: two clamps, merged.
            clamp(
                0.0,
                f64::INFINITY,
                clamp(f64::NEG_INFINITY, 6.0, affine(1.0, 3.0)),
            )
            .scaled(1.0 / 6.0),
        ];
        for (i, f) in forms.iter().enumerate() {
            let (a, b) = hard_sigmoid(f, F32_TOLERANCE).unwrap_or_else(|| panic!("form {i}"));
            assert!(
                close(a, 1.0 / 6.0, 1e-12) && close(b, 0.5, 1e-12),
                "form {i}"
            );
            let swish = Poly::x().times(f).unwrap();
            assert_eq!(
                activation(&swish, F32_TOLERANCE),
                Some(Activation::HardSwish)
            );
        }
        // relu6 alone is not one.
        assert_eq!(activation(&clamp(0.0, 6.0, Poly::x()), F32_TOLERANCE), None);
    }

    #[test]
    fn constants_match_to_the_tolerance_of_their_type() {
        let silu = |k: f64| {
            let s = Poly::of(Func::Sigmoid, Poly::x().scaled(k));
            activation(&Poly::x().times(&s).unwrap(), F32_TOLERANCE)
        };
        assert_eq!(silu(1.0 + 5e-7), Some(Activation::Silu));
        assert_eq!(silu(1.0 + 5e-6), None);
        // 0.044715 as float16 (0.04471588) is a GELU constant in float16
        // graphs only.
        let cube = f64::from(half::f16::from_f64(GELU_TANH_CUBE).to_f32());
        let x3 = Poly::x()
            .times(&Poly::x())
            .unwrap()
            .times(&Poly::x())
            .unwrap();
        let inner = Poly::x().plus(&x3.scaled(cube)).unwrap();
        let t = Poly::of(Func::Tanh, inner.scaled(GELU_TANH_SCALE));
        let g = Poly::x()
            .plus(&Poly::x().times(&t).unwrap())
            .unwrap()
            .scaled(0.5);
        assert_eq!(activation(&g, F32_TOLERANCE), None);
        assert_eq!(activation(&g, F16_TOLERANCE), Some(Activation::GeluTanh));
    }
}
