//! A fused squeeze-and-excitation node (`Op::SqueezeExcite`): the mean of
//! each channel over the image, then its fully connected layers, all in f32
//! with no rounding between them, as the GPU kernel computes it.

use super::Values;
use crate::ml::ops::{InputLayout, SqueezeExciteOptions};
use crate::ml::shape::{conv_filter_ochw, nchw};
use crate::ml::types::OperandDescriptor;

/// `args`: the input, then each layer's filter and bias (if any).
pub(crate) fn squeeze_excite(
    args: &[(&Values, &OperandDescriptor)],
    o: &SqueezeExciteOptions,
) -> Values {
    let s = &args[0].1.shape;
    let [n, c, h, w] = nchw(o.layout, [s[0], s[1], s[2], s[3]]);
    let x = args[0].0.f32();
    let hw = h * w;
    // (pixel, channel) strides within an image.
    let [ps, cs] = match o.layout {
        InputLayout::Nhwc => [c, 1],
        InputLayout::Nchw => [1, hw],
    };
    let mut out = Vec::new();
    for image in 0..n {
        let base = image * c * hw;
        let mut v: Vec<f32> = (0..c)
            .map(|ch| {
                let sum: f64 = (0..hw).map(|p| x[base + ch * cs + p * ps] as f64).sum();
                (sum / hw as f64) as f32
            })
            .collect();
        let mut at = 1;
        for layer in &o.layers {
            let (f, fd) = args[at];
            let fs = &fd.shape;
            let [oc, ic, _, _] =
                conv_filter_ochw(layer.filter_layout, [fs[0], fs[1], fs[2], fs[3]]);
            let [so, si] = layer.filter_layout.pointwise_strides(oc, ic);
            let f = f.f32();
            let bias = layer.bias.then(|| args[at + 1].0.f32());
            at += 1 + layer.bias as usize;
            v = (0..oc)
                .map(|m| {
                    let dot: f32 = (0..ic).map(|i| f[m * so + i * si] * v[i]).sum();
                    let y = dot + bias.map_or(0.0, |b| b[m]);
                    layer.activations.iter().fold(y, |y, a| a.apply(y))
                })
                .collect();
        }
        out.extend(v);
    }
    Values::F32(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ml::ops::{Activation, Conv2dFilterLayout, SqueezeExciteLayer};
    use crate::ml::types::DataType;

    /// Known values: two images, NCHW, two channels; one layer with a bias
    /// and a relu, one with none.
    #[test]
    fn means_then_layers() {
        let d = |shape: &[usize]| OperandDescriptor::new(DataType::Float32, shape);
        // Image 0 channel means 2.5 and -1; image 1: 0 and 4.
        let x = Values::F32(vec![
            1., 2., 3., 4., -1., -1., -1., -1., 0., 0., 0., 0., 4., 4., 4., 4.,
        ]);
        // Layer 1 (OIHW, 3 x 2): rows [1, 1], [1, -1], [0, 2]; bias [0, 0, -1].
        let f1 = Values::F32(vec![1., 1., 1., -1., 0., 2.]);
        let b1 = Values::F32(vec![0., 0., -1.]);
        // Layer 2 (HWIO, 1 x 3): [1, 2, 3].
        let f2 = Values::F32(vec![1., 2., 3.]);
        let (xd, f1d, b1d, f2d) = (
            d(&[2, 2, 2, 2]),
            d(&[3, 2, 1, 1]),
            d(&[3]),
            d(&[1, 1, 3, 1]),
        );
        let o = SqueezeExciteOptions {
            layout: InputLayout::Nchw,
            layers: vec![
                SqueezeExciteLayer {
                    filter_layout: Conv2dFilterLayout::Oihw,
                    bias: true,
                    activations: vec![Activation::Relu],
                },
                SqueezeExciteLayer {
                    filter_layout: Conv2dFilterLayout::Hwio,
                    bias: false,
                    activations: vec![],
                },
            ],
        };
        let y = squeeze_excite(&[(&x, &xd), (&f1, &f1d), (&b1, &b1d), (&f2, &f2d)], &o);
        // Image 0: hidden relu([1.5, 3.5, -3]) = [1.5, 3.5, 0] -> 1.5 + 7 = 8.5.
        // Image 1: hidden relu([4, -4, 7]) = [4, 0, 7] -> 4 + 21 = 25.
        assert_eq!(y, Values::F32(vec![8.5, 25.0]));
    }
}
