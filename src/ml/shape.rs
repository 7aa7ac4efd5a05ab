//! Build-time shape inference: each function checks its operands and returns
//! the output descriptor, or an error naming the op and the mismatch.

use super::ops::*;
use super::types::{DataType, OperandDescriptor};
use crate::error::{Error, Result};

fn err<T>(msg: String) -> Result<T> {
    Err(Error::invalid(msg))
}

pub(crate) fn require_float(op: &str, d: &OperandDescriptor) -> Result<()> {
    if d.data_type.is_float() {
        Ok(())
    } else {
        err(format!("{op}: needs a float32 or float16 operand, got {d}"))
    }
}

fn same_type(op: &str, a: &OperandDescriptor, b: &OperandDescriptor) -> Result<()> {
    if a.data_type == b.data_type {
        Ok(())
    } else {
        err(format!("{op}: data types differ ({a} and {b})"))
    }
}

fn rank4(op: &str, what: &str, d: &OperandDescriptor) -> Result<[usize; 4]> {
    <[usize; 4]>::try_from(d.shape.as_slice())
        .map_err(|_| Error::invalid(format!("{op}: {what} must be 4-D, got {d}")))
}

/// (batch, channels, height, width) of a 4-D input in the given layout.
pub(crate) fn nchw(layout: InputLayout, s: [usize; 4]) -> [usize; 4] {
    match layout {
        InputLayout::Nchw => s,
        InputLayout::Nhwc => [s[0], s[3], s[1], s[2]],
    }
}

pub(crate) fn from_nchw(layout: InputLayout, n: usize, c: usize, h: usize, w: usize) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    }
}

/// (out channels, in channels per group, kh, kw) of a conv2d filter.
pub(crate) fn conv_filter_ochw(layout: Conv2dFilterLayout, s: [usize; 4]) -> [usize; 4] {
    match layout {
        Conv2dFilterLayout::Oihw => s,
        Conv2dFilterLayout::Hwio => [s[3], s[2], s[0], s[1]],
        Conv2dFilterLayout::Ohwi => [s[0], s[3], s[1], s[2]],
        Conv2dFilterLayout::Ihwo => [s[3], s[0], s[1], s[2]],
    }
}

/// (in channels, out channels per group, kh, kw) of a convTranspose2d filter.
pub(crate) fn conv_transpose_filter_iohw(
    layout: ConvTranspose2dFilterLayout,
    s: [usize; 4],
) -> [usize; 4] {
    match layout {
        ConvTranspose2dFilterLayout::Iohw => s,
        ConvTranspose2dFilterLayout::Hwoi => [s[3], s[2], s[0], s[1]],
        ConvTranspose2dFilterLayout::Ohwi => [s[3], s[0], s[1], s[2]],
    }
}

fn conv_out(
    op: &str,
    input: usize,
    k: usize,
    pad0: usize,
    pad1: usize,
    stride: usize,
    dilation: usize,
) -> Result<usize> {
    if stride == 0 || dilation == 0 {
        return err(format!("{op}: strides and dilations must be positive"));
    }
    // Sizes come from model files: an absurd kernel, dilation or padding
    // is an error here, not an overflow.
    let (Some(effective), Some(padded)) = (
        k.saturating_sub(1)
            .checked_mul(dilation)
            .and_then(|e| e.checked_add(1)),
        input.checked_add(pad0).and_then(|p| p.checked_add(pad1)),
    ) else {
        return err(format!(
            "{op}: kernel {k}, dilation {dilation} and padding {pad0}+{pad1} of input {input} \
             overflow"
        ));
    };
    if padded < effective {
        return err(format!(
            "{op}: window {effective} (kernel {k}, dilation {dilation}) is larger than the padded input {padded}"
        ));
    }
    Ok((padded - effective) / stride + 1)
}

pub(crate) fn conv2d(
    input: &OperandDescriptor,
    filter: &OperandDescriptor,
    bias: Option<&OperandDescriptor>,
    o: &Conv2dOptions,
) -> Result<OperandDescriptor> {
    let op = "conv2d";
    require_float(op, input)?;
    same_type(op, input, filter)?;
    let [n, c, h, w] = nchw(o.input_layout, rank4(op, "input", input)?);
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, rank4(op, "filter", filter)?);
    if o.groups == 0 || c % o.groups != 0 || oc % o.groups != 0 {
        return err(format!(
            "{op}: groups {} must divide input channels {c} and output channels {oc}",
            o.groups
        ));
    }
    if c / o.groups != icg {
        return err(format!(
            "{op}: input has {c} channels, so with {} groups the filter needs {} input channels, but filter {filter} ({:?}) has {icg}",
            o.groups, c / o.groups, o.filter_layout
        ));
    }
    if let Some(b) = bias {
        same_type(op, input, b)?;
        if b.shape != [oc] {
            return err(format!("{op}: bias must have shape [{oc}], got {b}"));
        }
    }
    let oh = conv_out(
        op,
        h,
        kh,
        o.padding[0],
        o.padding[1],
        o.strides[0],
        o.dilations[0],
    )?;
    let ow = conv_out(
        op,
        w,
        kw,
        o.padding[2],
        o.padding[3],
        o.strides[1],
        o.dilations[1],
    )?;
    Ok(OperandDescriptor::new(
        input.data_type,
        from_nchw(o.input_layout, n, oc, oh, ow),
    ))
}

pub(crate) fn conv_transpose2d(
    input: &OperandDescriptor,
    filter: &OperandDescriptor,
    bias: Option<&OperandDescriptor>,
    o: &ConvTranspose2dOptions,
) -> Result<OperandDescriptor> {
    let op = "convTranspose2d";
    require_float(op, input)?;
    same_type(op, input, filter)?;
    let [n, c, h, w] = nchw(o.input_layout, rank4(op, "input", input)?);
    let [ic, ocg, kh, kw] =
        conv_transpose_filter_iohw(o.filter_layout, rank4(op, "filter", filter)?);
    if o.groups == 0 || c % o.groups != 0 {
        return err(format!(
            "{op}: groups {} must divide input channels {c}",
            o.groups
        ));
    }
    if ic != c {
        return err(format!(
            "{op}: input has {c} channels but filter {filter} ({:?}) expects {ic}",
            o.filter_layout
        ));
    }
    let oc = ocg * o.groups;
    if let Some(b) = bias {
        same_type(op, input, b)?;
        if b.shape != [oc] {
            return err(format!("{op}: bias must have shape [{oc}], got {b}"));
        }
    }
    if o.strides.contains(&0) || o.dilations.contains(&0) {
        return err(format!("{op}: strides and dilations must be positive"));
    }
    let size = |i: usize,
                k: usize,
                s: usize,
                d: usize,
                p0: usize,
                p1: usize,
                op_: usize|
     -> Result<usize> {
        let full = (i - 1) * s + (k - 1) * d + 1 + op_;
        full.checked_sub(p0 + p1).filter(|&v| v > 0).ok_or_else(|| {
            Error::invalid(format!(
                "{op}: padding {p0}+{p1} removes the whole output ({full})"
            ))
        })
    };
    let (oh, ow) = match o.output_sizes {
        Some([oh, ow]) => (oh, ow),
        None => (
            size(
                h,
                kh,
                o.strides[0],
                o.dilations[0],
                o.padding[0],
                o.padding[1],
                o.output_padding[0],
            )?,
            size(
                w,
                kw,
                o.strides[1],
                o.dilations[1],
                o.padding[2],
                o.padding[3],
                o.output_padding[1],
            )?,
        ),
    };
    Ok(OperandDescriptor::new(
        input.data_type,
        from_nchw(o.input_layout, n, oc, oh, ow),
    ))
}

/// Returns the output and the options with the window resolved (global pooling).
pub(crate) fn pool2d(
    op: &str,
    input: &OperandDescriptor,
    o: &Pool2dOptions,
) -> Result<(OperandDescriptor, Pool2dOptions)> {
    require_float(op, input)?;
    let [n, c, h, w] = nchw(o.layout, rank4(op, "input", input)?);
    let mut o = o.clone();
    let [kh, kw] = *o.window_dimensions.get_or_insert([h, w]);
    if kh == 0 || kw == 0 {
        return err(format!("{op}: window dimensions must be positive"));
    }
    let (oh, ow) = match o.output_sizes {
        Some([oh, ow]) => (oh, ow),
        None => {
            let dim =
                |i: usize, k: usize, p0: usize, p1: usize, s: usize, d: usize| -> Result<usize> {
                    if s == 0 || d == 0 {
                        return err(format!("{op}: strides and dilations must be positive"));
                    }
                    let eff = (k - 1) * d + 1;
                    let padded = i + p0 + p1;
                    if padded < eff {
                        return err(format!(
                            "{op}: window {eff} is larger than the padded input {padded}"
                        ));
                    }
                    Ok(match o.rounding_type {
                        RoundingType::Floor => (padded - eff) / s + 1,
                        // A last window that would start in the end padding
                        // is dropped, as onnxruntime and PyTorch drop it.
                        RoundingType::Ceil => {
                            let out = (padded - eff).div_ceil(s) + 1;
                            if (out - 1) * s >= i + p0 {
                                out - 1
                            } else {
                                out
                            }
                        }
                    })
                };
            (
                dim(
                    h,
                    kh,
                    o.padding[0],
                    o.padding[1],
                    o.strides[0],
                    o.dilations[0],
                )?,
                dim(
                    w,
                    kw,
                    o.padding[2],
                    o.padding[3],
                    o.strides[1],
                    o.dilations[1],
                )?,
            )
        }
    };
    o.output_sizes = Some([oh, ow]);
    Ok((
        OperandDescriptor::new(input.data_type, from_nchw(o.layout, n, c, oh, ow)),
        o,
    ))
}

pub(crate) fn resample2d(
    input: &OperandDescriptor,
    o: &Resample2dOptions,
) -> Result<OperandDescriptor> {
    let op = "resample2d";
    require_float(op, input)?;
    rank4(op, "input", input)?;
    let [a0, a1] = o.axes;
    if a0 >= 4 || a1 != a0 + 1 {
        return err(format!(
            "{op}: axes must be two consecutive axes of a 4-D input, got {:?}",
            o.axes
        ));
    }
    let mut shape = input.shape.clone();
    match o.sizes {
        Some([h, w]) => {
            shape[a0] = h;
            shape[a1] = w;
        }
        None => {
            for (i, &axis) in o.axes.iter().enumerate() {
                let s = o.scales[i];
                if !(s.is_finite() && s > 0.0) {
                    return err(format!("{op}: scale {s} must be positive"));
                }
                shape[axis] = (input.shape[axis] as f32 * s).floor() as usize;
            }
        }
    }
    Ok(OperandDescriptor::new(input.data_type, shape))
}

pub(crate) fn concat(inputs: &[&OperandDescriptor], axis: usize) -> Result<OperandDescriptor> {
    let first = inputs
        .first()
        .ok_or_else(|| Error::invalid("concat: no inputs"))?;
    if axis >= first.rank() {
        return err(format!("concat: axis {axis} out of range for {first}"));
    }
    let mut shape = first.shape.clone();
    for (i, d) in inputs.iter().enumerate().skip(1) {
        same_type("concat", first, d)?;
        let compatible = d.rank() == first.rank()
            && (0..first.rank()).all(|k| k == axis || d.shape[k] == first.shape[k]);
        if !compatible {
            return err(format!(
                "concat: input {i} {d} does not match input 0 {first} outside axis {axis}"
            ));
        }
        shape[axis] += d.shape[axis];
    }
    Ok(OperandDescriptor::new(first.data_type, shape))
}

pub(crate) fn transpose(input: &OperandDescriptor, perm: &[usize]) -> Result<OperandDescriptor> {
    let rank = input.rank();
    let mut seen = vec![false; rank];
    if perm.len() != rank
        || perm
            .iter()
            .any(|&p| p >= rank || std::mem::replace(&mut seen[p], true))
    {
        return err(format!(
            "transpose: {perm:?} is not a permutation of the {rank} axes of {input}"
        ));
    }
    Ok(OperandDescriptor::new(
        input.data_type,
        perm.iter().map(|&p| input.shape[p]).collect::<Vec<_>>(),
    ))
}

pub(crate) fn slice(
    input: &OperandDescriptor,
    starts: &[usize],
    sizes: &[usize],
    strides: &[usize],
) -> Result<OperandDescriptor> {
    let rank = input.rank();
    if starts.len() != rank || sizes.len() != rank || strides.len() != rank {
        return err(format!(
            "slice: starts, sizes and strides need {rank} entries for {input}"
        ));
    }
    let mut shape = Vec::with_capacity(rank);
    for i in 0..rank {
        if sizes[i] == 0 || strides[i] == 0 {
            return err(format!(
                "slice: size and stride of axis {i} must be positive"
            ));
        }
        if starts[i] + (sizes[i] - 1) * strides[i] >= input.shape[i] {
            return err(format!(
                "slice: axis {i}: start {} + size {} (stride {}) runs past dimension {} of {input}",
                starts[i], sizes[i], strides[i], input.shape[i]
            ));
        }
        shape.push(sizes[i]);
    }
    Ok(OperandDescriptor::new(input.data_type, shape))
}

pub(crate) fn pad(
    input: &OperandDescriptor,
    beginning: &[usize],
    ending: &[usize],
    mode: PaddingMode,
) -> Result<OperandDescriptor> {
    let rank = input.rank();
    if beginning.len() != rank || ending.len() != rank {
        return err(format!(
            "pad: beginning and ending need {rank} entries for {input}"
        ));
    }
    for i in 0..rank {
        let limit = match mode {
            PaddingMode::Reflection => input.shape[i] - 1,
            _ => usize::MAX,
        };
        if beginning[i] > limit || ending[i] > limit {
            return err(format!(
                "pad: reflection padding on axis {i} must be smaller than its size {}",
                input.shape[i]
            ));
        }
    }
    let shape: Vec<usize> = (0..rank)
        .map(|i| input.shape[i] + beginning[i] + ending[i])
        .collect();
    Ok(OperandDescriptor::new(input.data_type, shape))
}

pub(crate) fn split(
    input: &OperandDescriptor,
    sizes: &[usize],
    axis: usize,
) -> Result<Vec<OperandDescriptor>> {
    let dim = *input
        .shape
        .get(axis)
        .ok_or_else(|| Error::invalid(format!("split: axis {axis} out of range for {input}")))?;
    if sizes.is_empty() || sizes.contains(&0) || sizes.iter().sum::<usize>() != dim {
        return err(format!("split: sizes {sizes:?} must be positive and sum to dimension {axis} of {input} ({dim})"));
    }
    Ok(sizes
        .iter()
        .map(|&s| {
            let mut shape = input.shape.clone();
            shape[axis] = s;
            OperandDescriptor::new(input.data_type, shape)
        })
        .collect())
}

/// Numpy-style broadcasting of two shapes.
pub(crate) fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

pub(crate) fn binary(
    op: &str,
    a: &OperandDescriptor,
    b: &OperandDescriptor,
) -> Result<OperandDescriptor> {
    same_type(op, a, b)?;
    if a.data_type == DataType::Uint8 {
        return err(format!(
            "{op}: uint8 operands are not supported; cast to float32 or int32 first"
        ));
    }
    let shape = broadcast_shapes(&a.shape, &b.shape).ok_or_else(|| {
        Error::invalid(format!(
            "{op}: shapes {:?} and {:?} do not broadcast",
            a.shape, b.shape
        ))
    })?;
    Ok(OperandDescriptor::new(a.data_type, shape))
}

pub(crate) fn matmul(a: &OperandDescriptor, b: &OperandDescriptor) -> Result<OperandDescriptor> {
    let op = "matmul";
    require_float(op, a)?;
    same_type(op, a, b)?;
    if a.rank() < 2 || b.rank() < 2 {
        return err(format!(
            "matmul: operands must be at least 2-D, got {a} and {b}"
        ));
    }
    let (m, k) = (a.shape[a.rank() - 2], a.shape[a.rank() - 1]);
    let (k2, n) = (b.shape[b.rank() - 2], b.shape[b.rank() - 1]);
    if k != k2 {
        return err(format!(
            "matmul: inner dimensions differ ({a} x {b}: {k} vs {k2})"
        ));
    }
    let mut shape = broadcast_shapes(&a.shape[..a.rank() - 2], &b.shape[..b.rank() - 2])
        .ok_or_else(|| {
            Error::invalid(format!(
                "matmul: batch dimensions of {a} and {b} do not broadcast"
            ))
        })?;
    shape.extend([m, n]);
    Ok(OperandDescriptor::new(a.data_type, shape))
}

pub(crate) fn gemm(
    a: &OperandDescriptor,
    b: &OperandDescriptor,
    c: Option<&OperandDescriptor>,
    o: &GemmOptions,
) -> Result<OperandDescriptor> {
    let op = "gemm";
    require_float(op, a)?;
    same_type(op, a, b)?;
    if a.rank() != 2 || b.rank() != 2 {
        return err(format!("gemm: operands must be 2-D, got {a} and {b}"));
    }
    let (m, k) = if o.a_transpose {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let (k2, n) = if o.b_transpose {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    if k != k2 {
        return err(format!(
            "gemm: inner dimensions differ ({k} vs {k2}) for {a} and {b}"
        ));
    }
    if let Some(c) = c {
        same_type(op, a, c)?;
        if broadcast_shapes(&c.shape, &[m, n]).as_deref() != Some(&[m, n][..]) {
            return err(format!("gemm: c {c} does not broadcast to [{m}, {n}]"));
        }
    }
    Ok(OperandDescriptor::new(a.data_type, vec![m, n]))
}

/// A comparison's output: uint8 0/1 of the broadcast shape, for two float or
/// two int32 operands of one type.
pub(crate) fn compare(
    op: &str,
    a: &OperandDescriptor,
    b: &OperandDescriptor,
) -> Result<OperandDescriptor> {
    let out = binary(op, a, b)?;
    Ok(OperandDescriptor::new(DataType::Uint8, out.shape))
}

/// `where`'s output: the values' type, the three shapes broadcast.
pub(crate) fn where_(
    condition: &OperandDescriptor,
    t: &OperandDescriptor,
    f: &OperandDescriptor,
) -> Result<OperandDescriptor> {
    let op = "where";
    if condition.data_type != DataType::Uint8 {
        return err(format!(
            "{op}: the condition must be uint8, got {condition}"
        ));
    }
    same_type(op, t, f)?;
    let shape = broadcast_shapes(&t.shape, &f.shape)
        .and_then(|s| broadcast_shapes(&condition.shape, &s))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{op}: shapes {:?} (condition), {:?} and {:?} do not broadcast",
                condition.shape, t.shape, f.shape
            ))
        })?;
    Ok(OperandDescriptor::new(t.data_type, shape))
}

// ------------------------------------------------------------------------
// Reductions, arg-min/max, gather, expand/tile, normalizations.

/// Checks a reduction's operand and axes; returns the output and the axes
/// sorted and deduplicated. `None` reduces every axis, an empty slice none.
pub(crate) fn reduce(
    kind: ReduceKind,
    input: &OperandDescriptor,
    axes: Option<&[usize]>,
    keep: bool,
) -> Result<(OperandDescriptor, Vec<usize>)> {
    let op = kind.name();
    let int_ok = kind.takes_int32() && input.data_type == DataType::Int32;
    if !input.data_type.is_float() && !int_ok {
        let wanted = if kind.takes_int32() {
            "float32, float16 or int32"
        } else {
            "float32 or float16"
        };
        return err(format!("{op}: needs a {wanted} operand, got {input}"));
    }
    let rank = input.rank();
    let mut axes: Vec<usize> = axes.map_or_else(|| (0..rank).collect(), |a| a.to_vec());
    axes.sort_unstable();
    axes.dedup();
    if let Some(&bad) = axes.iter().find(|&&a| a >= rank) {
        return err(format!("{op}: axis {bad} out of range for {input}"));
    }
    let shape: Vec<usize> = (0..rank)
        .filter_map(|i| match (axes.contains(&i), keep) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(input.shape[i]),
        })
        .collect();
    Ok((OperandDescriptor::new(input.data_type, shape), axes))
}

/// argMin / argMax: int32 indices along `axis`.
pub(crate) fn arg_min_max(
    op: &str,
    input: &OperandDescriptor,
    axis: usize,
    keep: bool,
) -> Result<OperandDescriptor> {
    if axis >= input.rank() {
        return err(format!("{op}: axis {axis} out of range for {input}"));
    }
    let shape: Vec<usize> = (0..input.rank())
        .filter_map(|i| match (i == axis, keep) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(input.shape[i]),
        })
        .collect();
    Ok(OperandDescriptor::new(DataType::Int32, shape))
}

/// gather: `input[..axis] ++ indices.shape ++ input[axis + 1..]`.
pub(crate) fn gather(
    input: &OperandDescriptor,
    indices: &OperandDescriptor,
    axis: usize,
) -> Result<OperandDescriptor> {
    if indices.data_type != DataType::Int32 {
        return err(format!("gather: indices must be int32, got {indices}"));
    }
    if axis >= input.rank() {
        return err(format!("gather: axis {axis} out of range for {input}"));
    }
    if input.shape[axis] > i32::MAX as usize {
        return err(format!(
            "gather: dimension {axis} of {input} is too long for int32 indices"
        ));
    }
    let mut shape = input.shape[..axis].to_vec();
    shape.extend(&indices.shape);
    shape.extend(&input.shape[axis + 1..]);
    Ok(OperandDescriptor::new(input.data_type, shape))
}

/// expand: the input broadcasts (numpy rules) to `new_shape`, which it must
/// equal or be stretched to along its size-1 axes.
pub(crate) fn expand(input: &OperandDescriptor, new_shape: &[usize]) -> Result<OperandDescriptor> {
    if broadcast_shapes(&input.shape, new_shape).as_deref() != Some(new_shape) {
        return err(format!(
            "expand: {input} does not broadcast to {new_shape:?}"
        ));
    }
    Ok(OperandDescriptor::new(input.data_type, new_shape))
}

/// tile: each axis repeated `repetitions[axis]` times.
pub(crate) fn tile(input: &OperandDescriptor, repetitions: &[usize]) -> Result<OperandDescriptor> {
    if repetitions.len() != input.rank() {
        return err(format!(
            "tile: {} repetitions for {input}, which has {} axes",
            repetitions.len(),
            input.rank()
        ));
    }
    if repetitions.contains(&0) {
        return err(format!(
            "tile: repetitions {repetitions:?} must be positive"
        ));
    }
    let shape: Vec<usize> = input
        .shape
        .iter()
        .zip(repetitions)
        .map(|(&d, &r)| d.saturating_mul(r))
        .collect();
    Ok(OperandDescriptor::new(input.data_type, shape))
}

/// The normalization core: `mean` and `variance` broadcast to the input.
pub(crate) fn batch_normalization_core(
    input: &OperandDescriptor,
    mean: &OperandDescriptor,
    variance: &OperandDescriptor,
) -> Result<OperandDescriptor> {
    let op = "batchNormalization";
    require_float(op, input)?;
    for (what, d) in [("mean", mean), ("variance", variance)] {
        same_type(op, input, d)?;
        if broadcast_shapes(&d.shape, &input.shape).as_deref() != Some(&input.shape[..]) {
            return err(format!("{op}: {what} {d} does not broadcast to {input}"));
        }
    }
    Ok(input.clone())
}
