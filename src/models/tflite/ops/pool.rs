//! Pooling and reductions: AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM.

use super::{Call, Writer};
use crate::error::Result;
use crate::ml::{InputLayout, Operand, Pool2dOptions};
use crate::models::tflite::fb;

impl<'a> Writer<'_, 'a> {
    /// TFLite pools never count padding: SAME average pooling divides by the
    /// window's part inside the input (WebNN's default), and max pooling
    /// ignores padded positions.
    pub(super) fn pool2d(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Operand> {
        let o = call
            .op
            .builtin_options_as_pool_2_doptions()
            .ok_or_else(|| self.err("has no Pool2DOptions"))?;
        let (x, [_, h, w, _]) = self.input_nhwc(call, 0)?;
        let strides = self.pair(o.stride_h(), o.stride_w(), "stride")?;
        let window = self.pair(o.filter_height(), o.filter_width(), "filter size")?;
        let padding = self.padding(o.padding(), [h, w], window, strides, [1, 1])?;
        let options = Pool2dOptions {
            window_dimensions: Some(window),
            padding,
            strides,
            layout: InputLayout::Nhwc,
            ..Pool2dOptions::new()
        };
        let y = self.ctx(if builtin == fb::BuiltinOperator::MAX_POOL_2D {
            self.b.max_pool2d(&x, options)
        } else {
            self.b.average_pool2d(&x, options)
        })?;
        self.activation(y, o.fused_activation_function())
    }

    /// MEAN / SUM over the constant axes of input 1 (negative, repeated axes allowed).
    pub(super) fn reduce(
        &mut self,
        call: &Call<'_, 'a>,
        builtin: fb::BuiltinOperator,
    ) -> Result<Operand> {
        let x = self.input(call, 0)?;
        let rank = x.shape().len();
        let mut axes = Vec::new();
        for a in self.const_ints(self.arg(call, 1)?, "the axes")? {
            let axis = self.axis(a, rank)?;
            if !axes.contains(&axis) {
                axes.push(axis);
            }
        }
        axes.sort_unstable();
        let keep = call
            .op
            .builtin_options_as_reducer_options()
            .is_some_and(|o| o.keep_dims());
        self.ctx(if builtin == fb::BuiltinOperator::SUM {
            self.b.reduce_sum(&x, Some(&axes), keep)
        } else {
            self.b.reduce_mean(&x, Some(&axes), keep)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::ml::{GraphBuilder, InputLayout, OperandDescriptor, Pool2dOptions};
    use crate::models::same_padding;

    /// SAME and VALID pools give TF's output sizes: ceil(in / stride) and
    /// ceil((in - window + 1) / stride), for every small size.
    #[test]
    fn same_and_valid_pools_have_tf_output_sizes() {
        let b = GraphBuilder::shapes_only();
        for input in 1..14 {
            for window in 1..=input.min(5) {
                for stride in 1..4 {
                    let x = b
                        .input(
                            &format!("x{input}_{window}_{stride}"),
                            OperandDescriptor::f32([1, input, input + 1, 2]),
                        )
                        .unwrap();
                    let (t, bo) = same_padding(input, window, stride, 1);
                    let (l, r) = same_padding(input + 1, window, stride, 1);
                    for (padding, want) in [
                        (
                            [t, bo, l, r],
                            [input.div_ceil(stride), (input + 1).div_ceil(stride)],
                        ),
                        (
                            [0; 4],
                            [
                                (input - window + 1).div_ceil(stride),
                                (input + 2 - window).div_ceil(stride),
                            ],
                        ),
                    ] {
                        let y = b
                            .max_pool2d(
                                &x,
                                Pool2dOptions {
                                    window_dimensions: Some([window, window]),
                                    padding,
                                    strides: [stride, stride],
                                    layout: InputLayout::Nhwc,
                                    ..Pool2dOptions::new()
                                },
                            )
                            .unwrap();
                        assert_eq!(
                            y.shape(),
                            [1, want[0], want[1], 2],
                            "in {input} window {window} stride {stride} padding {padding:?}"
                        );
                    }
                }
            }
        }
    }
}
