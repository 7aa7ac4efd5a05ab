//! STRIDED_SLICE's begin/end/strides and five masks resolved to one plain
//! slice per axis, as LiteRT resolves them (`BuildStridedSliceParams`, then
//! `StartForAxis` / `StopForAxis`): the ellipsis expands to the axes the spec
//! leaves out, each new axis is an input axis of size 1, masked bounds take
//! the whole axis in the stride's direction, negative indices count from the
//! end, and bounds are clamped to the axis.

/// The spec as the operator holds it (one entry per sparse index).
#[derive(Clone, Debug, Default)]
pub(super) struct Spec {
    pub begin: Vec<i64>,
    pub end: Vec<i64>,
    pub strides: Vec<i64>,
    pub begin_mask: i32,
    pub end_mask: i32,
    pub ellipsis_mask: i32,
    pub new_axis_mask: i32,
    pub shrink_axis_mask: i32,
    /// TFLite's `offset`: `end` is relative to `begin`.
    pub offset: bool,
}

/// One axis of the effective input (the input with new axes inserted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Axis {
    /// Element `k` of the result is input index `start + k * stride`, k < size.
    pub start: usize,
    pub size: usize,
    pub stride: i64,
    /// A new axis of size 1 that the input does not have.
    pub new: bool,
    /// Removed from the output's shape (shrink_axis_mask).
    pub shrink: bool,
}

/// Bit `i` of a mask; bits past 31 are never set.
fn bit(mask: i32, i: usize) -> bool {
    i < 32 && (mask >> i) & 1 == 1
}

/// Resolves `spec` against an input of `shape`.
pub(super) fn resolve(shape: &[usize], spec: &Spec) -> Result<Vec<Axis>, String> {
    let count = spec.begin.len();
    if spec.end.len() != count || spec.strides.len() != count {
        return Err(format!(
            "begin, end and strides have {}, {} and {} entries",
            count,
            spec.end.len(),
            spec.strides.len()
        ));
    }
    if count > 32 {
        return Err(format!("{count} index entries (at most 32)"));
    }
    let new_axes = (0..count)
        .filter(|&i| !bit(spec.ellipsis_mask, i) && bit(spec.new_axis_mask, i))
        .count();
    let rank = shape.len();
    let dims = rank + new_axes;
    if count > dims + usize::from(spec.ellipsis_mask != 0) {
        return Err(format!(
            "{count} index entries for a rank-{rank} input with {new_axes} new axes"
        ));
    }
    // Which effective axes the ellipsis covers and which are new, as
    // LiteRT's BuildStridedSliceParams marks them.
    let mut ellipsis = vec![false; dims];
    let mut new = vec![false; dims];
    let (mut ellipsis_start, mut expanded) = (dims, 0usize);
    let mut i = 0;
    while i < dims {
        if bit(spec.ellipsis_mask, i) {
            ellipsis_start = i;
            let end = (i + 1).max((i + 1 + new_axes + rank).saturating_sub(count).min(dims));
            expanded = end - i - 1;
            for e in &mut ellipsis[i..end] {
                *e = true;
            }
            i = end;
            continue;
        }
        if i >= expanded && bit(spec.new_axis_mask, i - expanded) {
            new[i] = true;
        }
        i += 1;
    }
    let mut axes = Vec::with_capacity(dims);
    let (mut added_ellipsis, mut added_axes) = (0usize, 0usize);
    for i in 0..dims {
        let full = Axis {
            start: 0,
            size: 0,
            stride: 1,
            new: false,
            shrink: false,
        };
        let input_dim = |added: usize| shape.get(i - added).copied();
        if ellipsis[i] {
            added_ellipsis = i.saturating_sub(ellipsis_start);
            let d = input_dim(added_axes).ok_or("the ellipsis runs past the input's rank")?;
            axes.push(Axis { size: d, ..full });
        } else if new[i] {
            axes.push(Axis {
                size: 1,
                new: true,
                ..full
            });
            added_axes += 1;
        } else if i >= count + expanded {
            let d = input_dim(added_axes).ok_or("more axes than the input has")?;
            axes.push(Axis { size: d, ..full });
        } else {
            let j = i - added_ellipsis;
            let d = input_dim(added_axes).ok_or("more index entries than input axes")?;
            let (begin, mut end, stride) = (spec.begin[j], spec.end[j], spec.strides[j]);
            if spec.offset {
                end = begin.saturating_add(end);
            }
            axes.push(axis(
                d,
                begin,
                end,
                stride,
                bit(spec.begin_mask, j),
                bit(spec.end_mask, j),
                bit(spec.shrink_axis_mask, j),
            )?);
        }
    }
    Ok(axes)
}

/// One axis: LiteRT's StartForAxis / StopForAxis and the output size.
fn axis(
    dim: usize,
    begin: i64,
    end: i64,
    stride: i64,
    begin_masked: bool,
    end_masked: bool,
    shrink: bool,
) -> Result<Axis, String> {
    if stride == 0 {
        return Err("a stride is 0".into());
    }
    let d = dim as i64;
    let clamp = |x: i64| {
        let x = if x < 0 { x.saturating_add(d) } else { x };
        if stride > 0 {
            x.clamp(0, d)
        } else {
            x.clamp(-1, d - 1)
        }
    };
    let start = clamp(match (begin_masked, stride > 0) {
        (false, _) => begin,
        (true, true) => i64::MIN / 2,
        (true, false) => i64::MAX / 2,
    });
    let stop = if shrink {
        start + 1
    } else {
        clamp(match (end_masked, stride > 0) {
            (false, _) => end,
            (true, true) => i64::MAX / 2,
            (true, false) => i64::MIN / 2,
        })
    };
    if shrink && !(0..d).contains(&start) {
        return Err(format!(
            "index {begin} is out of range for an axis of {dim}"
        ));
    }
    let length = stop - start;
    let size = if length == 0 || (length < 0) != (stride < 0) {
        0
    } else {
        (length + stride - stride.signum()) / stride
    };
    Ok(Axis {
        start: usize::try_from(start).unwrap_or(0),
        size: size as usize,
        stride: if shrink { 1 } else { stride },
        new: false,
        shrink,
    })
}

#[cfg(test)]
mod tests {
    use super::{resolve, Axis, Spec};

    fn spec(begin: &[i64], end: &[i64], strides: &[i64]) -> Spec {
        Spec {
            begin: begin.to_vec(),
            end: end.to_vec(),
            strides: strides.to_vec(),
            ..Spec::default()
        }
    }

    /// (start, size, stride) of each axis, and the output shape.
    fn plain(axes: &[Axis]) -> (Vec<(usize, usize, i64)>, Vec<usize>) {
        (
            axes.iter().map(|a| (a.start, a.size, a.stride)).collect(),
            axes.iter().filter(|a| !a.shrink).map(|a| a.size).collect(),
        )
    }

    #[test]
    fn plain_and_negative_bounds() {
        // x[1:-1, ::2] on [5, 7]
        let a = resolve(&[5, 7], &spec(&[1, 0], &[-1, 0], &[1, 2])).unwrap();
        // The second axis's end is 0 and unmasked: empty.
        assert_eq!(plain(&a).0, [(1, 3, 1), (0, 0, 2)]);
        let mut s = spec(&[1, 0], &[-1, 0], &[1, 2]);
        s.end_mask = 0b10;
        let a = resolve(&[5, 7], &s).unwrap();
        assert_eq!(plain(&a), (vec![(1, 3, 1), (0, 4, 2)], vec![3, 4]));
    }

    #[test]
    fn negative_strides() {
        // x[::-1] on [5]: masks take the axis from the end.
        let mut s = spec(&[0], &[0], &[-1]);
        s.begin_mask = 1;
        s.end_mask = 1;
        assert_eq!(plain(&resolve(&[5], &s).unwrap()).0, [(4, 5, -1)]);
        // x[3:0:-2] on [5] -> 3, 1
        assert_eq!(
            plain(&resolve(&[5], &spec(&[3], &[0], &[-2])).unwrap()).0,
            [(3, 2, -2)]
        );
        // x[-1:-6:-1] on [5]: the end clamps to -1, so all five.
        assert_eq!(
            plain(&resolve(&[5], &spec(&[-1], &[-6], &[-1])).unwrap()).0,
            [(4, 5, -1)]
        );
        // Bounds past the end clamp: x[10:2:-3] on [5] -> 4
        assert_eq!(
            plain(&resolve(&[5], &spec(&[10], &[2], &[-3])).unwrap()).0,
            [(4, 1, -3)]
        );
    }

    #[test]
    fn shrink_takes_one_index_and_drops_the_axis() {
        // x[:, -1] on [2, 3]: end is ignored when shrinking.
        let mut s = spec(&[0, -1], &[0, 0], &[1, 1]);
        s.begin_mask = 1;
        s.end_mask = 1;
        s.shrink_axis_mask = 0b10;
        let (axes, shape) = plain(&resolve(&[2, 3], &s).unwrap());
        assert_eq!(axes, [(0, 2, 1), (2, 1, 1)]);
        assert_eq!(shape, [2]);
        let mut s = spec(&[3], &[4], &[1]);
        s.shrink_axis_mask = 1;
        let e = resolve(&[3], &s).unwrap_err();
        assert!(e.contains("index 3 is out of range"), "{e}");
    }

    #[test]
    fn ellipsis_expands_to_the_missing_axes() {
        // x[..., 1:3] on [2, 3, 4, 5]: the ellipsis covers three axes.
        let mut s = spec(&[0, 1], &[0, 3], &[1, 1]);
        s.ellipsis_mask = 1;
        let (axes, shape) = plain(&resolve(&[2, 3, 4, 5], &s).unwrap());
        assert_eq!(shape, [2, 3, 4, 2]);
        assert_eq!(axes[3], (1, 2, 1));
        // x[0, ..., 0] on [2, 3, 4] -> [3]
        let mut s = spec(&[0, 0, 0], &[1, 0, 1], &[1, 1, 1]);
        s.ellipsis_mask = 0b010;
        s.shrink_axis_mask = 0b101;
        let (_, shape) = plain(&resolve(&[2, 3, 4], &s).unwrap());
        assert_eq!(shape, [3]);
    }

    #[test]
    fn new_axes_are_inserted() {
        // x[:, None, 1:] on [2, 3] -> [2, 1, 2]
        let mut s = spec(&[0, 0, 1], &[0, 0, 3], &[1, 1, 1]);
        s.begin_mask = 1;
        s.end_mask = 1;
        s.new_axis_mask = 0b010;
        let axes = resolve(&[2, 3], &s).unwrap();
        assert!(axes[1].new);
        assert_eq!(plain(&axes).1, [2, 1, 2]);
        // x[None, ..., 0] on [2, 3] -> [1, 2]
        let mut s = spec(&[0, 0, 0], &[0, 0, 1], &[1, 1, 1]);
        s.new_axis_mask = 0b001;
        s.ellipsis_mask = 0b010;
        s.shrink_axis_mask = 0b100;
        let axes = resolve(&[2, 3], &s).unwrap();
        assert_eq!(plain(&axes).1, [1, 2]);
    }

    #[test]
    fn fewer_entries_than_axes_take_the_rest_whole() {
        // x[1:] on [3, 4]
        let (axes, shape) = plain(&resolve(&[3, 4], &spec(&[1], &[3], &[1])).unwrap());
        assert_eq!(axes, [(1, 2, 1), (0, 4, 1)]);
        assert_eq!(shape, [2, 4]);
    }

    #[test]
    fn bad_specs_are_errors() {
        let e = resolve(&[3], &spec(&[0], &[1], &[0])).unwrap_err();
        assert!(e.contains("stride is 0"), "{e}");
        let e = resolve(&[3], &spec(&[0, 0], &[1, 1], &[1, 1])).unwrap_err();
        assert!(e.contains("2 index entries for a rank-1 input"), "{e}");
        let e = resolve(&[3], &spec(&[0], &[1, 2], &[1])).unwrap_err();
        assert!(e.contains("have 1, 2 and 1 entries"), "{e}");
    }
}
