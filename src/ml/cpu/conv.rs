//! conv2d and convTranspose2d, computed in NCHW with OIHW / IOHW filters.

use rayon::prelude::*;

use super::layout::transpose;
use super::Values;
use crate::ml::ops::{Conv2dOptions, ConvTranspose2dOptions, InputLayout};
use crate::ml::shape::{conv_filter_ochw, conv_transpose_filter_iohw, nchw};
use crate::ml::types::OperandDescriptor;

const NHWC_TO_NCHW: [usize; 4] = [0, 3, 1, 2];
const NCHW_TO_NHWC: [usize; 4] = [0, 2, 3, 1];

/// The input as NCHW values.
pub(crate) fn to_nchw(arg: (&Values, &OperandDescriptor), layout: InputLayout) -> Vec<f32> {
    match layout {
        InputLayout::Nchw => arg.0.f32().to_vec(),
        InputLayout::Nhwc => transpose(arg, &NHWC_TO_NCHW).f32().to_vec(),
    }
}

/// NCHW values of shape `nchw` back into the requested layout.
pub(crate) fn from_nchw(v: Vec<f32>, shape: [usize; 4], layout: InputLayout) -> Values {
    match layout {
        InputLayout::Nchw => Values::F32(v),
        InputLayout::Nhwc => {
            let d = OperandDescriptor::f32(shape.to_vec());
            transpose((&Values::F32(v), &d), &NCHW_TO_NHWC)
        }
    }
}

/// Reorders a 4-D filter so that axis k of the result is axis `order[k]` of the source.
fn reorder(arg: (&Values, &OperandDescriptor), order: [usize; 4]) -> Vec<f32> {
    transpose(arg, &order).f32().to_vec()
}

fn shape4(d: &OperandDescriptor) -> [usize; 4] {
    [d.shape[0], d.shape[1], d.shape[2], d.shape[3]]
}

pub(crate) fn conv2d(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    o: &Conv2dOptions,
) -> Values {
    use crate::ml::ops::Conv2dFilterLayout::*;
    let [n, c, h, w] = nchw(o.input_layout, shape4(args[0].1));
    let [oc, icg, kh, kw] = conv_filter_ochw(o.filter_layout, shape4(args[1].1));
    let [_, _, oh, ow] = nchw(o.input_layout, shape4(out));
    let x = to_nchw(args[0], o.input_layout);
    let order = match o.filter_layout {
        Oihw => [0, 1, 2, 3],
        Hwio => [3, 2, 0, 1],
        Ohwi => [0, 3, 1, 2],
        Ihwo => [3, 0, 1, 2],
    };
    let f = reorder(args[1], order);
    let bias = args.get(2).map(|b| b.0.f32().to_vec());
    let ocg = oc / o.groups;
    let mut y = vec![0.0f32; n * oc * oh * ow];
    y.par_chunks_mut(oh * ow)
        .enumerate()
        .for_each(|(plane, dst)| {
            let (b, m) = (plane / oc, plane % oc);
            let g = m / ocg;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = bias.as_ref().map_or(0.0, |b| b[m]);
                    for ci in 0..icg {
                        let cin = g * icg + ci;
                        for ky in 0..kh {
                            let iy = (oy * o.strides[0] + ky * o.dilations[0]) as isize
                                - o.padding[0] as isize;
                            if iy < 0 || iy >= h as isize {
                                continue;
                            }
                            for kx in 0..kw {
                                let ix = (ox * o.strides[1] + kx * o.dilations[1]) as isize
                                    - o.padding[2] as isize;
                                if ix < 0 || ix >= w as isize {
                                    continue;
                                }
                                let xv = x[((b * c + cin) * h + iy as usize) * w + ix as usize];
                                acc += xv * f[((m * icg + ci) * kh + ky) * kw + kx];
                            }
                        }
                    }
                    dst[oy * ow + ox] = acc;
                }
            }
        });
    from_nchw(y, [n, oc, oh, ow], o.input_layout)
}

pub(crate) fn conv_transpose2d(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    o: &ConvTranspose2dOptions,
) -> Values {
    use crate::ml::ops::ConvTranspose2dFilterLayout::*;
    let [n, c, h, w] = nchw(o.input_layout, shape4(args[0].1));
    let [_, ocg, kh, kw] = conv_transpose_filter_iohw(o.filter_layout, shape4(args[1].1));
    let [_, oc, oh, ow] = nchw(o.input_layout, shape4(out));
    let x = to_nchw(args[0], o.input_layout);
    let order = match o.filter_layout {
        Iohw => [0, 1, 2, 3],
        Hwoi => [3, 2, 0, 1],
        Ohwi => [3, 0, 1, 2],
    };
    let f = reorder(args[1], order);
    let bias = args.get(2).map(|b| b.0.f32().to_vec());
    let icg = c / o.groups;
    let mut y = vec![0.0f32; n * oc * oh * ow];
    // Gather form: each output pixel sums the inputs that scatter onto it.
    y.par_chunks_mut(oh * ow)
        .enumerate()
        .for_each(|(plane, dst)| {
            let (b, m) = (plane / oc, plane % oc);
            let (g, mo) = (m / ocg, m % ocg);
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = bias.as_ref().map_or(0.0, |b| b[m]);
                    for ky in 0..kh {
                        let ty = (oy + o.padding[0]) as isize - (ky * o.dilations[0]) as isize;
                        if ty < 0 || ty % o.strides[0] as isize != 0 {
                            continue;
                        }
                        let iy = (ty / o.strides[0] as isize) as usize;
                        if iy >= h {
                            continue;
                        }
                        for kx in 0..kw {
                            let tx = (ox + o.padding[2]) as isize - (kx * o.dilations[1]) as isize;
                            if tx < 0 || tx % o.strides[1] as isize != 0 {
                                continue;
                            }
                            let ix = (tx / o.strides[1] as isize) as usize;
                            if ix >= w {
                                continue;
                            }
                            for ci in 0..icg {
                                let cin = g * icg + ci;
                                acc += x[((b * c + cin) * h + iy) * w + ix]
                                    * f[((cin * ocg + mo) * kh + ky) * kw + kx];
                            }
                        }
                    }
                    dst[oy * ow + ox] = acc;
                }
            }
        });
    from_nchw(y, [n, oc, oh, ow], o.input_layout)
}
