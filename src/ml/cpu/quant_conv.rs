//! quantConv2d (`ml/quant_conv.rs`): the input quantized once into int8
//! (NHWC), each output's products summed in i32 over its taps, the same
//! integers the GPU kernel sums, then scaled into float.

use rayon::prelude::*;

use super::conv::{from_nhwc, shape4, to_nhwc};
use super::epilogue::Epilogue;
use super::Values;
use crate::ml::quant_conv::QuantConv2dOptions;
use crate::ml::shape::nchw;
use crate::ml::types::OperandDescriptor;

pub(super) fn quant_conv2d(
    args: &[(&Values, &OperandDescriptor)],
    out: &OperandDescriptor,
    o: &QuantConv2dOptions,
    ep: Epilogue,
) -> Values {
    let c = &o.conv;
    let [n, ch, h, w] = nchw(c.input_layout, shape4(args[0].1));
    let [oc, icg, kh, kw] = o.filter_shape;
    let [_, _, oh, ow] = nchw(c.input_layout, shape4(out));
    let ocg = oc / c.groups;
    let q: Vec<i8> = to_nhwc(args[0], c.input_layout)
        .iter()
        .map(|&x| o.quantize(x) as i8)
        .collect();
    // The filter as [oc][kh][kw][icg], so that a tap's products run over
    // adjacent channels on both sides; and each tap's sum, what a padded
    // pixel (every channel at the zero point) adds.
    let taps = kh * kw;
    let mut filter = vec![0i32; o.filter.len()];
    let mut tap_sums = vec![0i32; oc * taps];
    for m in 0..oc {
        for i in 0..icg {
            for t in 0..taps {
                let v = o.filter[(m * icg + i) * taps + t] as i32;
                filter[(m * taps + t) * icg + i] = v;
                tap_sums[m * taps + t] += v;
            }
        }
    }
    let zx = o.held_input_zero();
    let scales = o.channel_scales();
    let corrections = o.corrections();
    let bias = args.get(1).map(|b| b.0.f32());
    let mut y = vec![0.0f32; n * oh * ow * oc];
    y.par_chunks_mut((ow * oc).max(1))
        .enumerate()
        .for_each(|(row, out_row)| {
            let (b, oy) = (row / oh, row % oh);
            for ox in 0..ow {
                for m in 0..oc {
                    let g = m / ocg;
                    let (mut acc, mut xsum) = (0i32, 0i32);
                    for ky in 0..kh {
                        let iy = (oy * c.strides[0] + ky * c.dilations[0]) as isize
                            - c.padding[0] as isize;
                        for kx in 0..kw {
                            let ix = (ox * c.strides[1] + kx * c.dilations[1]) as isize
                                - c.padding[2] as isize;
                            let t = ky * kw + kx;
                            if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                                acc += zx * tap_sums[m * taps + t];
                                xsum += zx * icg as i32;
                                continue;
                            }
                            let at = ((b * h + iy as usize) * w + ix as usize) * ch + g * icg;
                            let xs = &q[at..at + icg];
                            let ws = &filter[(m * taps + t) * icg..][..icg];
                            acc += xs.iter().zip(ws).map(|(&a, &v)| a as i32 * v).sum::<i32>();
                            xsum += xs.iter().map(|&a| a as i32).sum::<i32>();
                        }
                    }
                    let total = acc + corrections[m] - o.filter_zero[m] * xsum;
                    let bias = bias.map_or(0.0, |b| b[m]);
                    out_row[ox * oc + m] = total as f32 * scales[m] + bias;
                }
            }
            ep.apply(out_row);
        });
    from_nhwc(y, [n, oh, ow, oc], c.input_layout)
}
