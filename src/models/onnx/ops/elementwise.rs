//! Element-wise operators: activations and unary maths, the (variadic)
//! arithmetic, Mod, comparisons, Not, Where, Cast, Clip, PRelu and Gelu,
//! with their import-time evaluation on constants.

use crate::error::Result;
use crate::ml::{DataType, Operand};
use crate::models::onnx::fold::{broadcast, broadcast_to, get, Args, Msg};
use crate::models::onnx::graph::{Attrs, Value, Writer};
use crate::models::onnx::proto;
use crate::models::onnx::tensor::{Const, Data, Elem};

/// Stand-ins for Clip's absent bounds: WGSL has no infinity literal.
const NO_MIN: f32 = -f32::MAX;
const NO_MAX: f32 = f32::MAX;

pub(super) fn unary<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let v = wr.need(inputs, 0)?.clone();
    let x = wr.operand(&v)?;
    let y = match op_type {
        "Relu" if !v.elem().is_float() => {
            let zero = wr.scalar_like(&x, 0.0)?;
            b.max(&x, &zero)
        }
        "Relu" => b.relu(&x),
        "Sigmoid" => b.sigmoid(&x),
        "Tanh" => b.tanh(&x),
        "HardSwish" => b.hard_swish(&x),
        "Softplus" => b.softplus(&x),
        "Mish" => b.mish(&x),
        "Cos" => b.cos(&x),
        "Sin" => b.sin(&x),
        "Ceil" => b.ceil(&x),
        "Floor" => b.floor(&x),
        "Erf" => b.erf(&x),
        "Abs" => b.abs(&x),
        "Neg" => b.neg(&x),
        "Exp" => b.exp(&x),
        "Log" => b.log(&x),
        "Sqrt" => b.sqrt(&x),
        "Reciprocal" => b.reciprocal(&x),
        "LeakyRelu" => b.leaky_relu(&x, attrs.float("alpha", 0.01)),
        "HardSigmoid" => b.hard_sigmoid(&x, attrs.float("alpha", 0.2), attrs.float("beta", 0.5)),
        "Elu" => b.elu(&x, attrs.float("alpha", 1.0)),
        _ => {
            // Selu = gamma * elu(x, alpha).
            let alpha = attrs.float("alpha", 1.673_263_2);
            let gamma = attrs.float("gamma", 1.050_701);
            let e = wr.ctx(b.elu(&x, alpha))?;
            let g = wr.scalar_like(&e, gamma)?;
            b.mul(&e, &g)
        }
    };
    Ok(wr.keep(wr.ctx(y)?, v.elem()))
}

pub(super) fn arithmetic<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let present: Vec<Value> = inputs.iter().flatten().cloned().collect();
    let first = present.first().ok_or_else(|| wr.err("has no inputs"))?;
    let elem = first.elem();
    let mut acc = wr.operand(first)?;
    let out_type = acc.data_type();
    // WebNN's arithmetic takes float or int32: uint8 (and bool)
    // runs as int32, and pow of integers as float32 (exact for
    // the integer results ONNX defines).
    let work = match (op_type, out_type) {
        ("Pow", t) if !t.is_float() => DataType::Float32,
        (_, DataType::Uint8) => DataType::Int32,
        (_, t) => t,
    };
    if work != out_type {
        acc = wr.ctx(b.cast(&acc, work))?;
    }
    for v in &present[1..] {
        let mut o = wr.operand(v)?;
        if o.data_type() != work {
            o = wr.ctx(b.cast(&o, work))?;
        }
        acc = wr.ctx(match op_type {
            "Add" | "Sum" | "Mean" => b.add(&acc, &o),
            "Sub" => b.sub(&acc, &o),
            "Mul" => b.mul(&acc, &o),
            "Div" => b.div(&acc, &o),
            "Pow" => b.pow(&acc, &o),
            "Max" => b.max(&acc, &o),
            _ => b.min(&acc, &o),
        })?;
    }
    if op_type == "Mean" && present.len() > 1 {
        let k = wr.scalar_like(&acc, present.len() as f32)?;
        acc = wr.ctx(b.div(&acc, &k))?;
    }
    if work != out_type {
        acc = wr.ctx(b.cast(&acc, out_type))?;
    }
    Ok(wr.keep(acc, elem))
}

pub(super) fn compare<'s>(
    wr: &mut Writer<'s>,
    n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let op_type = n.op_type();
    let (mut a, mut c) = (wr.opnd(inputs, 0)?, wr.opnd(inputs, 1)?);
    // WebNN compares float or int32 operands; bool compares as int.
    if a.data_type() == DataType::Uint8 {
        a = wr.ctx(b.cast(&a, DataType::Int32))?;
        c = wr.ctx(b.cast(&c, DataType::Int32))?;
    }
    let y = wr.ctx(match op_type {
        "Equal" => b.equal(&a, &c),
        "Greater" => b.greater(&a, &c),
        "GreaterOrEqual" => b.greater_or_equal(&a, &c),
        "LessOrEqual" => b.lesser_or_equal(&a, &c),
        _ => b.lesser(&a, &c),
    })?;
    Ok(wr.keep(y, Elem::Bool))
}

pub(super) fn not<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let x = wr.opnd(inputs, 0)?;
    Ok(wr.keep(wr.ctx(b.logical_not(&x))?, Elem::Bool))
}

pub(super) fn gelu<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    // Opset 20's Gelu: exact (erf) or its tanh approximation.
    let x = wr.opnd(inputs, 0)?;
    let y = match attrs.string("approximate", "none").as_str() {
        "none" => b.gelu(&x),
        "tanh" => b.gelu_tanh(&x),
        other => return Err(wr.err(format!("approximate '{other}' is unknown"))),
    };
    Ok(wr.one(wr.ctx(y)?))
}

pub(super) fn where_<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let c = wr.opnd(inputs, 0)?;
    let v = wr.need(inputs, 1)?.elem();
    let (t, f) = (wr.opnd(inputs, 1)?, wr.opnd(inputs, 2)?);
    Ok(wr.keep(wr.ctx(b.where_(&c, &t, &f))?, v))
}

pub(super) fn prelu<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    _attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let (x, s) = (wr.opnd(inputs, 0)?, wr.opnd(inputs, 1)?);
    Ok(wr.one(wr.ctx(b.prelu(&x, &s))?))
}

/// Mod: `fmod` 1 is C's fmod (the dividend's sign), 0 the integer
/// modulo with the divisor's sign, which ONNX defines for integers only.
/// uint8 runs as int32.
pub(super) fn modulo<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let b = wr.b;
    let elem = wr.need(inputs, 0)?.elem();
    let fmod = attrs.int("fmod", 0) != 0;
    if elem.is_float() && !fmod {
        return Err(wr.err("fmod 0 (integer modulo) needs integer inputs; floats take fmod 1"));
    }
    let (mut x, mut d) = (wr.opnd(inputs, 0)?, wr.opnd(inputs, 1)?);
    let out_type = x.data_type();
    if out_type == DataType::Uint8 {
        x = wr.ctx(b.cast(&x, DataType::Int32))?;
        d = wr.ctx(b.cast(&d, DataType::Int32))?;
    }
    let mut y = wr.ctx(b.remainder(&x, &d, !fmod))?;
    if y.data_type() != out_type {
        y = wr.ctx(b.cast(&y, out_type))?;
    }
    Ok(wr.keep(y, elem))
}

pub(super) fn cast<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let v = wr.need(inputs, 0)?.clone();
    let to = wr.msg(Elem::from_onnx(attrs.int("to", 0) as i32))?;
    let x = wr.operand(&v)?;
    let b = wr.b;
    if to == Elem::Bool && v.elem() != Elem::Bool {
        // bool(x) is x != 0, not a truncation.
        let zero = wr.scalar_like(&x, 0.0)?;
        let eq = wr.ctx(b.equal(&x, &zero))?;
        return Ok(wr.keep(wr.ctx(b.logical_not(&eq))?, Elem::Bool));
    }
    if to.data_type() == x.data_type() {
        return Ok(wr.keep(x, to));
    }
    Ok(wr.keep(wr.ctx(b.cast(&x, to.data_type()))?, to))
}

pub(super) fn clip<'s>(
    wr: &mut Writer<'s>,
    _n: &'s proto::NodeProto,
    attrs: &Attrs<'_>,
    inputs: &[Option<Value>],
) -> Result<Vec<Value>> {
    let v = wr.need(inputs, 0)?.clone();
    let x = wr.operand(&v)?;
    let b = wr.b;
    let bound =
        |w: &mut Writer<'s>, i: usize, attr: &str, none: f32| -> Result<Result<f32, Operand>> {
            if w.opset < 11 {
                return Ok(Ok(attrs.float(attr, none)));
            }
            match inputs.get(i).and_then(Option::as_ref) {
                None => Ok(Ok(none)),
                Some(Value::Const(c)) if c.len() == 1 => Ok(Ok(c.as_f32()[0])),
                Some(o) => Ok(Err(w.operand(&o.clone())?)),
            }
        };
    let lo = bound(wr, 1, "min", NO_MIN)?;
    let hi = bound(wr, 2, "max", NO_MAX)?;
    let y = match (lo, hi) {
        (Ok(lo), Ok(hi)) if v.elem().is_float() => {
            // numpy's clip: with min > max every value is max.
            let lo = if lo > hi { hi } else { lo };
            wr.ctx(b.clamp(&x, lo, hi))?
        }
        (lo, hi) => {
            let mut y = x;
            for (bnd, is_max) in [(lo, true), (hi, false)] {
                let o = match bnd {
                    Ok(f) if f == NO_MIN || f == NO_MAX => continue,
                    Ok(f) => wr.scalar_like(&y, f)?,
                    Err(o) => o,
                };
                y = wr.ctx(if is_max { b.max(&y, &o) } else { b.min(&y, &o) })?;
            }
            y
        }
    };
    Ok(wr.keep(y, v.elem()))
}

pub(super) fn fold_cast(args: &Args<'_>) -> Msg {
    let Args { c, attrs, .. } = *args;
    cast_const(get(c, 0)?, attrs.int("to", 0) as i32).map(|c| vec![c])
}

pub(super) fn fold_where(args: &Args<'_>) -> Msg {
    let Args { c, .. } = *args;
    let (cond, a, b) = (get(c, 0)?, get(c, 1)?, get(c, 2)?);
    let out = broadcast(&cond.shape, &a.shape)
        .and_then(|s| broadcast(&s, &b.shape))
        .ok_or("condition and values do not broadcast")?;
    let (cond, a, b) = (
        broadcast_to(cond, &out)?,
        broadcast_to(a, &out)?,
        broadcast_to(b, &out)?,
    );
    let pick = cond.as_i64();
    let data = match (&a.data, &b.data) {
        (Data::F(x), Data::F(y)) => Data::F(
            pick.iter()
                .enumerate()
                .map(|(i, &p)| if p != 0 { x[i] } else { y[i] })
                .collect(),
        ),
        (Data::I(x), Data::I(y)) => Data::I(
            pick.iter()
                .enumerate()
                .map(|(i, &p)| if p != 0 { x[i] } else { y[i] })
                .collect(),
        ),
        _ => return Err("the two values have different types".into()),
    };
    Ok(vec![Const {
        elem: a.elem,
        shape: out,
        data,
    }])
}

pub(super) fn fold_variadic(args: &Args<'_>) -> Msg {
    let Args { c, op, .. } = *args;
    variadic(op, c)
}

pub(super) fn fold_mod(args: &Args<'_>) -> Msg {
    let Args {
        c, attrs, op: _, ..
    } = *args;
    let op = if attrs.int("fmod", 0) != 0 {
        "Fmod"
    } else {
        "Mod"
    };
    binary(op, get(c, 0)?, get(c, 1)?).map(|c| vec![c])
}

pub(super) fn fold_unary(args: &Args<'_>) -> Msg {
    let Args { c, op, .. } = *args;
    unary_const(op, get(c, 0)?).map(|c| vec![c])
}

pub(super) fn cast_const(x: &Const, to: i32) -> std::result::Result<Const, String> {
    let elem = Elem::from_onnx(to)?;
    let shape = x.shape.clone();
    Ok(match (elem, &x.data) {
        (Elem::F32 | Elem::F16, _) => Const::floats(elem, shape, x.as_f32()),
        (Elem::Bool, Data::F(v)) => Const::ints(
            elem,
            shape,
            v.iter().map(|&f| i64::from(f != 0.0)).collect(),
        ),
        (Elem::Bool, Data::I(v)) => {
            Const::ints(elem, shape, v.iter().map(|&f| i64::from(f != 0)).collect())
        }
        (_, Data::F(v)) => Const::ints(
            elem,
            shape,
            v.iter().map(|&f| wrap(elem, f as i64)).collect(),
        ),
        (_, Data::I(v)) => Const::ints(elem, shape, v.iter().map(|&f| wrap(elem, f)).collect()),
    })
}

/// Integer conversion as C does it (two's complement wrap-around).
pub(super) fn wrap(elem: Elem, v: i64) -> i64 {
    match elem {
        Elem::I32 => i64::from(v as i32),
        Elem::U8 => i64::from(v as u8),
        Elem::I8 => i64::from(v as i8),
        _ => v,
    }
}

pub(super) fn variadic(op: &str, c: &[Option<&Const>]) -> Msg {
    let parts: Vec<&Const> = c.iter().flatten().copied().collect();
    let mut acc = (*parts.first().ok_or("no inputs")?).clone();
    let bop = match op {
        "Sum" | "Mean" => "Add",
        o => o,
    };
    for p in &parts[1..] {
        acc = binary(bop, &acc, p)?;
    }
    if op == "Mean" {
        let n = parts.len() as f32;
        if let Data::F(v) = &mut acc.data {
            v.iter_mut().for_each(|x| *x /= n);
        }
    }
    Ok(vec![acc])
}

pub(super) fn binary(op: &str, a: &Const, b: &Const) -> std::result::Result<Const, String> {
    let out = broadcast(&a.shape, &b.shape)
        .ok_or_else(|| format!("shapes {:?} and {:?} do not broadcast", a.shape, b.shape))?;
    let (x, y) = (broadcast_to(a, &out)?, broadcast_to(b, &out)?);
    let compare = matches!(op, "Equal" | "Greater" | "Less");
    let elem = if compare { Elem::Bool } else { a.elem };
    let data = match (&x.data, &y.data) {
        (Data::F(p), Data::F(q)) => {
            let f = |u: f32, v: f32| -> f32 {
                match op {
                    "Add" => u + v,
                    "Sub" => u - v,
                    "Mul" => u * v,
                    "Div" => u / v,
                    "Pow" => u.powf(v),
                    "Max" => u.max(v),
                    "Min" => u.min(v),
                    // Rust's `%` on floats is C's fmod, exact.
                    "Fmod" => u % v,
                    "Mod" => floor_mod(u % v, v, 0.0),
                    "Equal" => f32::from(u8::from(u == v)),
                    "Greater" => f32::from(u8::from(u > v)),
                    _ => f32::from(u8::from(u < v)),
                }
            };
            let v: Vec<f32> = p.iter().zip(q).map(|(&u, &v)| f(u, v)).collect();
            if compare {
                Data::I(v.iter().map(|&x| x as i64).collect())
            } else {
                return Ok(Const::floats(elem, out, v));
            }
        }
        (Data::I(p), Data::I(q)) => {
            let f = |u: i64, v: i64| -> std::result::Result<i64, String> {
                Ok(match op {
                    "Add" => u.wrapping_add(v),
                    "Sub" => u.wrapping_sub(v),
                    "Mul" => u.wrapping_mul(v),
                    // Truncating, as integer Div does in C and onnxruntime.
                    "Div" => u.checked_div(v).ok_or("integer division by zero")?,
                    "Pow" => (u as f64).powf(v as f64) as i64,
                    "Max" => u.max(v),
                    "Min" => u.min(v),
                    "Fmod" | "Mod" if v == 0 => return Err("integer modulo by zero".into()),
                    "Fmod" => u.wrapping_rem(v),
                    "Mod" => floor_mod(u.wrapping_rem(v), v, 0),
                    "Equal" => i64::from(u == v),
                    "Greater" => i64::from(u > v),
                    _ => i64::from(u < v),
                })
            };
            Data::I(
                p.iter()
                    .zip(q)
                    .map(|(&u, &v)| f(u, v).map(|r| if compare { r } else { wrap(elem, r) }))
                    .collect::<std::result::Result<_, _>>()?,
            )
        }
        // Pow's exponent may have another type than its base.
        (Data::F(p), Data::I(q)) if op == "Pow" => {
            return Ok(Const::floats(
                elem,
                out,
                p.iter().zip(q).map(|(&u, &v)| u.powf(v as f32)).collect(),
            ))
        }
        _ => {
            return Err(format!(
                "inputs of types {} and {} differ",
                a.elem.name(),
                b.elem.name()
            ))
        }
    };
    Ok(Const {
        elem,
        shape: out,
        data,
    })
}

/// A truncated remainder `r` of a division by `d` moved to `d`'s sign.
pub(super) fn floor_mod<T: PartialOrd + std::ops::Add<Output = T> + Copy>(
    r: T,
    d: T,
    zero: T,
) -> T {
    if (r < zero && d > zero) || (r > zero && d < zero) {
        r + d
    } else {
        r
    }
}

pub(super) fn unary_const(op: &str, x: &Const) -> std::result::Result<Const, String> {
    Ok(match &x.data {
        Data::F(v) => {
            let f = |u: f32| match op {
                "Neg" => -u,
                "Abs" => u.abs(),
                "Sqrt" => u.sqrt(),
                "Exp" => u.exp(),
                "Log" => u.ln(),
                "Relu" => u.max(0.0),
                "Ceil" => u.ceil(),
                "Floor" => u.floor(),
                _ => 1.0 / u,
            };
            Const::floats(x.elem, x.shape.clone(), v.iter().map(|&u| f(u)).collect())
        }
        Data::I(v) => {
            let f = |u: i64| match op {
                "Neg" => Ok(u.wrapping_neg()),
                "Abs" => Ok(u.wrapping_abs()),
                "Relu" => Ok(u.max(0)),
                "Ceil" | "Floor" => Ok(u),
                _ => Err(format!("{op} of an integer tensor")),
            };
            Const::ints(
                x.elem,
                x.shape.clone(),
                v.iter()
                    .map(|&u| f(u))
                    .collect::<std::result::Result<_, _>>()?,
            )
        }
    })
}
