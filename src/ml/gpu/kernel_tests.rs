//! The kernels as the lowering generates them, checked without a GPU: small
//! graphs built on the CPU context (and the bundled models) are fused and
//! lowered by a recording lowering, and every kernel variant it produces
//! (op x data type x fused activation, scale and residual x layout) must
//! pass naga's validator and SPIR-V writer, declare exactly the bindings it
//! is given, and read a `struct Params` laid out as the Rust struct it is
//! handed. The tensor-core conv2d needs cooperative matrices, which
//! lavapipe lacks: this is what CI can check of it. One GPU test closes:
//! a new input size or a second context compiles no new pipeline.

use std::collections::{BTreeSet, HashSet};

use wgpu::naga;

use super::{axes, Lowering, Recorded, Target, MAX_RANK};
use crate::ml::gpu::lower_node;
use crate::ml::graph_ir::GraphIr;
use crate::ml::ops::*;
use crate::ml::{Context, DataType, GraphBuilder, Operand, OperandDescriptor, QuantConv2dOptions};

type Built = crate::error::Result<Operand>;
type Act = fn(&GraphBuilder, &Operand) -> Built;
type Reduce = fn(&GraphBuilder, &Operand, Option<&[usize]>, bool) -> Built;

const FLOATS: [DataType; 2] = [DataType::Float32, DataType::Float16];
const NUMBERS: [DataType; 3] = [DataType::Float32, DataType::Float16, DataType::Int32];
const ALL_TYPES: [DataType; 4] = [
    DataType::Float32,
    DataType::Float16,
    DataType::Int32,
    DataType::Uint8,
];

/// Every activation the builder makes, with the constants that stress
/// their literals (an infinite clamp bound has no WGSL literal).
const ACTIVATIONS: [Act; 27] = [
    |b, x| b.relu(x),
    |b, x| b.clamp(x, -1.0, 6.0),
    |b, x| b.clamp(x, f32::NEG_INFINITY, 0.5),
    |b, x| b.sigmoid(x),
    |b, x| b.tanh(x),
    |b, x| b.leaky_relu(x, 0.1),
    |b, x| b.hard_swish(x),
    |b, x| b.hard_sigmoid(x, 0.2, 0.5),
    // A chain, folded into one kernel's epilogue.
    |b, x| b.sigmoid(&b.relu(x)?),
    |b, x| b.abs(x),
    |b, x| b.neg(x),
    |b, x| b.exp(x),
    |b, x| b.log(x),
    |b, x| b.sqrt(x),
    |b, x| b.reciprocal(x),
    |b, x| b.erf(x),
    |b, x| b.elu(x, 0.5),
    |b, x| b.softplus(x),
    // SiLU as exporters write it, made one activation by the fusion.
    |b, x| b.mul(x, &b.sigmoid(x)?),
    |b, x| b.gelu(x),
    |b, x| b.gelu_tanh(x),
    |b, x| b.mish(x),
    |b, x| b.cos(x),
    |b, x| b.sin(x),
    |b, x| b.ceil(x),
    |b, x| b.floor(x),
    |b, x| b.fake_quantize(x, 0.05, -3.0, (-128.0, 127.0)),
];

/// A lowering may use everything, or have no tensor cores (the other
/// conv2d kernel for float16).
const TARGETS: [Target; 2] = [
    Target {
        shader_f16: true,
        f16_tensor_cores: true,
    },
    Target {
        shader_f16: true,
        f16_tensor_cores: false,
    },
];

fn desc(dt: DataType, shape: &[usize]) -> OperandDescriptor {
    OperandDescriptor::new(dt, shape)
}

fn zeros(b: &GraphBuilder, dt: DataType, shape: &[usize]) -> Operand {
    let d = desc(dt, shape);
    b.constant(d.clone(), &vec![0; d.byte_length()]).unwrap()
}

/// The graph `f` builds on the CPU context, fused as every context fuses it.
fn graph(ctx: &Context, f: impl FnOnce(&GraphBuilder) -> Built) -> GraphIr {
    graph_n(ctx, |b| Ok(vec![f(b)?]))
}

fn graph_n(
    ctx: &Context,
    f: impl FnOnce(&GraphBuilder) -> crate::error::Result<Vec<Operand>>,
) -> GraphIr {
    let b = GraphBuilder::new(ctx);
    let outs = f(&b).unwrap();
    let names: Vec<String> = (0..outs.len()).map(|i| format!("y{i}")).collect();
    let named: Vec<(&str, &Operand)> = names.iter().map(String::as_str).zip(&outs).collect();
    let g = b.build(&named).unwrap();
    (*g.inner.ir).clone()
}

/// What a recording lowering of `ir` produces for `target`.
fn record(ir: &GraphIr, target: Target) -> crate::error::Result<Vec<Recorded>> {
    let mut l = Lowering::record(ir, target);
    for node in &ir.nodes {
        lower_node(&mut l, node)?;
    }
    Ok(l.recorded)
}

/// Which `Op` a node is: a match the compiler keeps exhaustive, so that a
/// new op fails to build this test until the zoo covers it.
fn op_kind(op: &Op) -> usize {
    match op {
        Op::Conv2d(_) => 0,
        Op::ConvTranspose2d(_) => 1,
        Op::Pool2d(..) => 2,
        Op::Reduce { .. } => 3,
        Op::Resample2d(_) => 4,
        Op::Concat { .. } => 5,
        Op::Reshape => 6,
        Op::Transpose { .. } => 7,
        Op::Slice { .. } => 8,
        Op::Pad { .. } => 9,
        Op::Split { .. } => 10,
        Op::Binary(_) => 11,
        Op::Unary(_) => 12,
        Op::Prelu => 13,
        Op::Softmax { .. } => 14,
        Op::Matmul => 15,
        Op::Gemm(_) => 16,
        Op::Cast => 17,
        Op::Compare(_) => 18,
        Op::LogicalNot => 19,
        Op::Where => 20,
        Op::Identity => 21,
        Op::ArgMinMax { .. } => 22,
        Op::Gather { .. } => 23,
        Op::Expand => 24,
        Op::Tile { .. } => 25,
        Op::BatchNormalization { .. } => 26,
        Op::SqueezeExcite(_) => 27,
        Op::DepthwisePointwise(_) => 28,
        Op::QuantConv2d(_) => 29,
    }
}
const OP_KINDS: usize = 30;

fn nchw_shape(layout: InputLayout, [n, c, h, w]: [usize; 4]) -> Vec<usize> {
    match layout {
        InputLayout::Nchw => vec![n, c, h, w],
        InputLayout::Nhwc => vec![n, h, w, c],
    }
}

fn conv_filter_shape(layout: Conv2dFilterLayout, [o, i, h, w]: [usize; 4]) -> Vec<usize> {
    match layout {
        Conv2dFilterLayout::Oihw => vec![o, i, h, w],
        Conv2dFilterLayout::Hwio => vec![h, w, i, o],
        Conv2dFilterLayout::Ohwi => vec![o, h, w, i],
        Conv2dFilterLayout::Ihwo => vec![i, h, w, o],
    }
}

/// conv2d problems that pick each kernel: (channels, output channels,
/// groups, spatial size, filter size). The GEMM ones are past the 32 tiles
/// below which a short reduction takes the direct kernel (conv2d/choose.rs). The wide ones have 265 tiles of 128
/// pixels, just past the 264 from which the 128 x 64 kernels are used. The
/// fourth takes the staged tensor-core kernel in float16 NHWC (16 input
/// channels a group, 48 output channels: a padded 64-channel tile); the
/// next two the narrow kernel (one group, few outputs), with channels in
/// runs of 4 (vector loads in NHWC) and not, then a short reduction onto
/// many outputs (the GEMM kernels). In NHWC the second and third take conv2d_gemm_vec.wgsl (64- and
/// 128-pixel tiles) where tensor cores do not; the eighth (33 input channels,
/// not in runs of 4) keeps the wide tiles in NHWC too. The ninth has an odd
/// number of outputs: in float16 NHWC, a 32-channel tensor-core tile that
/// stores its channels one by one (the third's 12 outputs go in pairs).
/// The two after are for the other tensor-core kernels: a 1x1 (one tap, the
/// direct kernel, 64-channel tiles on a 132 x 132 map, past choose.rs's
/// `TC_SMALL_TILE_BELOW`) and a 3x3 onto 20 outputs (the staged
/// kernel's 32-channel tile); then a 5x5 and a 7x7, whose larger patches
/// the staged kernel holds too. Then Winograd F(2x2, 3x3) in float32
/// (and float16 without tensor cores): 276 blocks of 4 x 8 tiles; and a
/// 7x7 map over 256 channels, one tile over 2304 rows, whose reduction the
/// 64 x 64 GEMM splits in NCHW; last a 1x1 8192 -> 32 on a 40x40 map,
/// whose 512 reduction steps the direct tensor-core kernel splits over 8
/// subgroups of 8 workgroups, and a 3x3 64 -> 4096 on a 14x14 map, whose 14-pixel rows
/// take the im2col copy (enough channel tiles to fill the GPU from one
/// image), and a 3x3 128 -> 128 on a 20x20 map (YOLOv8n's last stage),
/// whose one-row staged workgroups split each row's 8 steps of 16
/// channels over 8 subgroups. The other tensor-core ones are 66 rows of
/// two 64-pixel runs: past the conv2d/choose.rs `TC_MIN_WORKGROUPS` an
/// image, in its small tile.
const CONV_PROBLEMS: [(usize, usize, usize, usize, usize); 18] = [
    (4, 4, 4, 6, 3),      // depthwise: the direct kernel
    (8, 12, 1, 46, 3),    // 64 x 64 tiles
    (48, 12, 1, 184, 1),  // wide (or tensor-core) tiles
    (32, 96, 2, 66, 3),   // staged tensor-core tiles, two groups
    (12, 3, 1, 5, 3),     // narrow, vector loads in NHWC
    (6, 5, 1, 5, 3),      // narrow, channels one by one past 4
    (3, 20, 1, 66, 3),    // 64 x 64 tiles over a short reduction (an RGB stem)
    (33, 12, 1, 184, 1),  // wide tiles, also in NHWC
    (16, 5, 1, 66, 3),    // narrow; 32-channel tensor-core tiles, odd outputs
    (32, 96, 2, 132, 1),  // direct 64-channel tensor-core tiles, one tap
    (32, 20, 1, 66, 3),   // staged 32-channel tensor-core tiles
    (16, 64, 1, 66, 5),   // staged, 32-byte pixels (5x5)
    (16, 64, 1, 66, 7),   // staged, one patch buffer (7x7)
    (16, 64, 1, 184, 3),  // Winograd
    (256, 64, 1, 7, 3),   // split reduction (NCHW)
    (8192, 32, 1, 40, 1), // direct tensor-core kernel, its reduction split
    (64, 4096, 1, 14, 3), // im2col copy, then the direct tensor-core kernel
    (128, 128, 1, 20, 3), // staged, one-row workgroups split over subgroups
];

/// One conv2d graph of the zoo.
struct Conv {
    dt: DataType,
    layout: InputLayout,
    filter: Conv2dFilterLayout,
    problem: (usize, usize, usize, usize, usize),
    bias: bool,
    scale: bool,
    residual: bool,
    /// The residual added after the activation (a late residual).
    late: bool,
    act: Option<Act>,
    /// A cast of the result to this type last (folded into the conv).
    cast: Option<DataType>,
}

impl Conv {
    fn new(
        dt: DataType,
        layout: InputLayout,
        problem: (usize, usize, usize, usize, usize),
    ) -> Self {
        Conv {
            dt,
            layout,
            filter: Conv2dFilterLayout::Oihw,
            problem,
            bias: false,
            scale: false,
            residual: false,
            late: false,
            act: None,
            cast: None,
        }
    }

    fn graph(&self, ctx: &Context) -> GraphIr {
        let (dt, layout) = (self.dt, self.layout);
        let (c, oc, groups, size, k) = self.problem;
        graph(ctx, |b| {
            let x = b.input("x", desc(dt, &nchw_shape(layout, [1, c, size, size])))?;
            let x = if self.scale {
                let gate = b.input("gate", desc(dt, &nchw_shape(layout, [1, c, 1, 1])))?;
                b.mul(&x, &gate)?
            } else {
                x
            };
            let f = zeros(
                b,
                dt,
                &conv_filter_shape(self.filter, [oc, c / groups, k, k]),
            );
            let bias = self.bias.then(|| zeros(b, dt, &[oc]));
            let options = Conv2dOptions {
                padding: [k / 2; 4],
                groups,
                input_layout: layout,
                filter_layout: self.filter,
                ..Conv2dOptions::new()
            };
            let mut y = b.conv2d(&x, &f, bias.as_ref(), options)?;
            if self.residual && !self.late {
                let r = b.input("r", y.descriptor().clone())?;
                y = b.add(&y, &r)?;
            }
            let mut y = match self.act {
                Some(act) => act(b, &y)?,
                None => y,
            };
            if self.residual && self.late {
                let r = b.input("r", y.descriptor().clone())?;
                y = b.add(&y, &r)?;
            }
            match self.cast {
                Some(to) => b.cast(&y, to),
                None => Ok(y),
            }
        })
    }
}

/// Small graphs that between them reach every op, kernel and variant of
/// the lowering.
fn zoo(ctx: &Context) -> Vec<(String, GraphIr)> {
    let mut z: Vec<(String, GraphIr)> = Vec::new();
    let mut add = |what: String, ir: GraphIr| z.push((what, ir));

    for dt in NUMBERS {
        add(
            format!("binary {dt}"),
            graph_n(ctx, |b| {
                let a = b.input("a", desc(dt, &[2, 3, 4]))?;
                let c = b.input("c", desc(dt, &[3, 1]))?;
                Ok(vec![
                    b.add(&a, &c)?,
                    b.sub(&a, &c)?,
                    b.mul(&a, &c)?,
                    b.div(&a, &c)?,
                    b.max(&a, &c)?,
                    b.min(&a, &c)?,
                ])
            }),
        );
    }
    for dt in FLOATS {
        for (i, act) in ACTIVATIONS.iter().enumerate() {
            add(
                format!("add + activation {i} {dt}"),
                graph(ctx, |b| {
                    let a = b.input("a", desc(dt, &[2, 3]))?;
                    let c = b.input("c", desc(dt, &[2, 3]))?;
                    act(b, &b.add(&a, &c)?)
                }),
            );
            add(
                format!("activation {i} {dt}"),
                graph(ctx, |b| act(b, &b.input("x", desc(dt, &[5, 7]))?)),
            );
        }
    }
    // A float binary op with a residual add fused after it, with and
    // without activations after that.
    for dt in FLOATS {
        for (i, act) in [None, Some(ACTIVATIONS[6]), Some(ACTIVATIONS[16])]
            .into_iter()
            .enumerate()
        {
            add(
                format!("binary + residual, activations {i} {dt}"),
                graph_n(ctx, |b| {
                    let a = b.input("a", desc(dt, &[2, 3, 4]))?;
                    let c = b.input("c", desc(dt, &[3, 1]))?;
                    let r = b.input("r", desc(dt, &[2, 3, 4]))?;
                    let ys = [
                        b.mul(&a, &c)?,
                        b.add(&c, &a)?,
                        b.sub(&a, &c)?,
                        b.div(&a, &c)?,
                        b.max(&a, &c)?,
                        b.min(&c, &a)?,
                    ];
                    ys.iter()
                        .map(|y| {
                            let y = b.add(y, &r)?;
                            match act {
                                Some(act) => act(b, &y),
                                None => Ok(y),
                            }
                        })
                        .collect()
                }),
            );
        }
    }
    for dt in FLOATS {
        add(
            format!("pow {dt}"),
            graph(ctx, |b| {
                let a = b.input("a", desc(dt, &[2, 3, 4]))?;
                let c = b.input("c", desc(dt, &[3, 1]))?;
                b.pow(&a, &c)
            }),
        );
    }
    add(
        "int32 abs, neg".into(),
        graph_n(ctx, |b| {
            let x = b.input("x", desc(DataType::Int32, &[3, 5]))?;
            Ok(vec![b.abs(&x)?, b.neg(&x)?])
        }),
    );
    for dt in NUMBERS {
        add(
            format!("comparisons {dt}"),
            graph_n(ctx, |b| {
                let a = b.input("a", desc(dt, &[2, 3, 5]))?;
                let c = b.input("c", desc(dt, &[3, 1]))?;
                Ok(vec![
                    b.equal(&a, &c)?,
                    b.greater(&a, &c)?,
                    b.greater_or_equal(&a, &c)?,
                    b.lesser(&a, &c)?,
                    b.lesser_or_equal(&a, &c)?,
                ])
            }),
        );
    }
    for dt in ALL_TYPES {
        add(
            format!("where, identity {dt}"),
            graph_n(ctx, |b| {
                let c = b.input("c", desc(DataType::Uint8, &[3, 1]))?;
                let t = b.input("t", desc(dt, &[2, 3, 5]))?;
                let f = b.input("f", desc(dt, &[5]))?;
                Ok(vec![b.where_(&c, &t, &f)?, b.identity(&t)?])
            }),
        );
    }
    add(
        "logicalNot".into(),
        graph(ctx, |b| {
            b.logical_not(&b.input("x", desc(DataType::Uint8, &[3, 7]))?)
        }),
    );
    // No builder call makes a linear activation; folded in by hand.
    let mut linear = graph(ctx, |b| {
        let a = b.input("a", desc(DataType::Float32, &[4]))?;
        b.relu(&a)
    });
    linear.nodes[0].activations.push(Activation::Linear {
        alpha: 0.5,
        beta: -1.0,
    });
    add("linear activation".into(), linear);
    for from in ALL_TYPES {
        for to in ALL_TYPES {
            add(
                format!("cast {from} -> {to}"),
                graph(ctx, |b| b.cast(&b.input("x", desc(from, &[2, 5]))?, to)),
            );
        }
    }

    let layouts = [InputLayout::Nchw, InputLayout::Nhwc];
    let conv_filters = [
        Conv2dFilterLayout::Oihw,
        Conv2dFilterLayout::Hwio,
        Conv2dFilterLayout::Ohwi,
        Conv2dFilterLayout::Ihwo,
    ];
    for dt in FLOATS {
        for layout in layouts {
            for filter in conv_filters {
                for problem in CONV_PROBLEMS {
                    for bias in [false, true] {
                        let conv = Conv {
                            filter,
                            bias,
                            ..Conv::new(dt, layout, problem)
                        };
                        add(
                            format!("conv2d {dt} {layout:?} {filter:?} {problem:?} bias {bias}"),
                            conv.graph(ctx),
                        );
                    }
                }
            }
            for problem in CONV_PROBLEMS {
                for (i, act) in ACTIVATIONS.iter().enumerate() {
                    let conv = Conv {
                        bias: true,
                        act: Some(*act),
                        ..Conv::new(dt, layout, problem)
                    };
                    add(
                        format!("conv2d {dt} {layout:?} {problem:?} activation {i}"),
                        conv.graph(ctx),
                    );
                }
            }
        }
    }
    // Each problem's result cast to the other float type: the kernels
    // write T (the output's type) from sums of TI (the input's).
    for (dt, to) in [
        (DataType::Float16, DataType::Float32),
        (DataType::Float32, DataType::Float16),
    ] {
        for layout in layouts {
            for problem in CONV_PROBLEMS.into_iter().chain(FEW_OUTPUT_PROBLEMS) {
                let conv = Conv {
                    bias: true,
                    act: Some(ACTIVATIONS[0]),
                    cast: Some(to),
                    ..Conv::new(dt, layout, problem)
                };
                add(
                    format!("conv2d {dt} {layout:?} {problem:?} cast to {to}"),
                    conv.graph(ctx),
                );
            }
        }
    }
    // Input scales and residuals, in either float type.
    for dt in FLOATS {
        for layout in layouts {
            for problem in CONV_PROBLEMS {
                for flags in 0..8u8 {
                    let [bias, scale, residual] = [1, 2, 4].map(|bit| flags & bit != 0);
                    let conv = Conv {
                        bias,
                        scale,
                        residual,
                        act: Some(ACTIVATIONS[0]),
                        ..Conv::new(dt, layout, problem)
                    };
                    let ir = conv.graph(ctx);
                    let node = ir
                        .nodes
                        .iter()
                        .find(|n| matches!(n.op, Op::Conv2d(_)))
                        .unwrap();
                    assert_eq!((node.input_scale, node.residual), (scale, residual));
                    add(
                        format!("conv2d {dt} {layout:?} {problem:?} bias {bias} scale {scale} residual {residual}"),
                        ir,
                    );
                }
                // A residual after the activation: every kernel's `finish`.
                let conv = Conv {
                    bias: true,
                    residual: true,
                    late: true,
                    act: Some(ACTIVATIONS[0]),
                    ..Conv::new(dt, layout, problem)
                };
                let ir = conv.graph(ctx);
                assert!(ir.nodes.iter().any(|n| n.late_residual));
                add(
                    format!("conv2d {dt} {layout:?} {problem:?} late residual"),
                    ir,
                );
            }
        }
    }
    // A nearest x2 upsample folded into the narrow and direct kernels.
    for dt in FLOATS {
        for layout in layouts {
            for (c, oc, groups) in [(12, 3, 1), (4, 4, 4)] {
                let ir = graph(ctx, |b| {
                    let x = b.input("x", desc(dt, &nchw_shape(layout, [1, c, 3, 5])))?;
                    let axes = match layout {
                        InputLayout::Nchw => [2, 3],
                        InputLayout::Nhwc => [1, 2],
                    };
                    let up = b.resample2d(
                        &x,
                        Resample2dOptions {
                            scales: [2.0, 2.0],
                            axes,
                            ..Resample2dOptions::default()
                        },
                    )?;
                    let f = zeros(b, dt, &[oc, c / groups, 3, 3]);
                    let o = Conv2dOptions {
                        groups,
                        input_layout: layout,
                        ..Conv2dOptions::new()
                    };
                    b.conv2d(&up, &f, None, o)
                });
                assert!(ir.nodes.iter().all(|n| n.input_upsample == Some([2, 2])));
                add(
                    format!("conv2d {dt} {layout:?} {c}->{oc} groups {groups} upsampled"),
                    ir,
                );
            }
        }
    }

    let transpose_filters = [
        ConvTranspose2dFilterLayout::Iohw,
        ConvTranspose2dFilterLayout::Hwoi,
        ConvTranspose2dFilterLayout::Ohwi,
    ];
    for dt in FLOATS {
        for layout in layouts {
            for filter in transpose_filters {
                for bias in [false, true] {
                    add(
                        format!("convTranspose2d {dt} {layout:?} {filter:?} bias {bias}"),
                        graph(ctx, |b| {
                            let x = b.input("x", desc(dt, &nchw_shape(layout, [1, 4, 5, 5])))?;
                            let (i, o, k) = (4, 3, 3);
                            let shape = match filter {
                                ConvTranspose2dFilterLayout::Iohw => [i, o, k, k],
                                ConvTranspose2dFilterLayout::Hwoi => [k, k, o, i],
                                ConvTranspose2dFilterLayout::Ohwi => [o, k, k, i],
                            };
                            let f = zeros(b, dt, &shape);
                            let bias = bias.then(|| zeros(b, dt, &[o]));
                            let options = ConvTranspose2dOptions {
                                strides: [2, 2],
                                padding: [1; 4],
                                input_layout: layout,
                                filter_layout: filter,
                                ..ConvTranspose2dOptions::new()
                            };
                            b.relu(&b.conv_transpose2d(&x, &f, bias.as_ref(), options)?)
                        }),
                    );
                }
            }
        }

        for layout in layouts {
            for global in [false, true] {
                add(
                    format!("pool2d {dt} {layout:?} global {global}"),
                    graph_n(ctx, |b| {
                        let x = b.input("x", desc(dt, &nchw_shape(layout, [1, 3, 6, 6])))?;
                        let options = if global {
                            Pool2dOptions {
                                layout,
                                ..Pool2dOptions::new()
                            }
                        } else {
                            Pool2dOptions {
                                window_dimensions: Some([3, 3]),
                                padding: [1; 4],
                                strides: [2, 2],
                                layout,
                                ..Pool2dOptions::new()
                            }
                        };
                        let include_pad = Pool2dOptions {
                            count_include_pad: true,
                            rounding_type: RoundingType::Ceil,
                            ..options.clone()
                        };
                        Ok(vec![
                            b.average_pool2d(&x, options.clone())?,
                            b.max_pool2d(&x, options)?,
                            b.average_pool2d(&x, include_pad)?,
                        ])
                    }),
                );
            }
        }
        add(
            format!("reduceMean {dt}"),
            graph_n(ctx, |b| {
                let x = b.input("x", desc(dt, &[2, 3, 4, 5]))?;
                Ok(vec![
                    b.reduce_mean(&x, Some(&[1]), true)?,
                    b.reduce_mean(&x, Some(&[0, 2]), false)?,
                    b.reduce_mean(&x, None, false)?,
                ])
            }),
        );
        for mode in [
            InterpolationMode::NearestNeighbor,
            InterpolationMode::Linear,
        ] {
            for (shape, axes) in [([1, 2, 4, 5], [2, 3]), ([1, 4, 5, 2], [1, 2])] {
                add(
                    format!("resample2d {dt} {mode:?} axes {axes:?}"),
                    graph(ctx, |b| {
                        let x = b.input("x", desc(dt, &shape))?;
                        let options = Resample2dOptions {
                            mode,
                            scales: [2.0, 1.5],
                            axes,
                            ..Default::default()
                        };
                        b.resample2d(&x, options)
                    }),
                );
            }
        }
        add(
            format!("prelu {dt}"),
            graph(ctx, |b| {
                let x = b.input("x", desc(dt, &[2, 3, 4]))?;
                let s = b.input("s", desc(dt, &[3, 1]))?;
                b.prelu(&x, &s)
            }),
        );
        add(
            format!("softmax {dt}"),
            graph_n(ctx, |b| {
                let x = b.input("x", desc(dt, &[2, 5, 3]))?;
                Ok(vec![b.softmax(&x, 1)?, b.softmax(&x, 2)?])
            }),
        );
        add(
            format!("matmul {dt}"),
            graph_n(ctx, |b| {
                let a = b.input("a", desc(dt, &[2, 3, 4]))?;
                let m = b.input("m", desc(dt, &[4, 5]))?;
                let c = b.input("c", desc(dt, &[2, 1, 3, 4]))?;
                let d = b.input("d", desc(dt, &[3, 4, 5]))?;
                Ok(vec![b.relu(&b.matmul(&a, &m)?)?, b.matmul(&c, &d)?])
            }),
        );
        // Past one tile in every dimension, odd so that the edges are
        // partial tiles; a transposed B (an attention's K^T) is read in
        // place.
        add(
            format!("matmul blocks {dt}"),
            graph_n(ctx, |b| {
                let a = b.input("a", desc(dt, &[2, 67, 33]))?;
                let m = b.input("m", desc(dt, &[33, 65]))?;
                let k = b.input("k", desc(dt, &[2, 17, 33]))?;
                let kt = b.transpose(&k, Some(&[0, 2, 1]))?;
                Ok(vec![b.relu(&b.matmul(&a, &m)?)?, b.matmul(&a, &kt)?])
            }),
        );
        for (a_transpose, b_transpose) in
            [(false, false), (true, false), (false, true), (true, true)]
        {
            for with_c in [false, true] {
                add(
                    format!("gemm {dt} a' {a_transpose} b' {b_transpose} c {with_c}"),
                    graph(ctx, |b| {
                        let a =
                            b.input("a", desc(dt, if a_transpose { &[4, 3] } else { &[3, 4] }))?;
                        let m =
                            b.input("b", desc(dt, if b_transpose { &[5, 4] } else { &[4, 5] }))?;
                        let c = if with_c {
                            Some(b.input("c", desc(dt, &[5]))?)
                        } else {
                            None
                        };
                        let options = GemmOptions {
                            alpha: 0.5,
                            beta: 2.0,
                            a_transpose,
                            b_transpose,
                        };
                        b.clamp(&b.gemm(&a, &m, c.as_ref(), options)?, 0.0, 6.0)
                    }),
                );
            }
        }
    }

    for dt in NUMBERS {
        add(
            format!("data movement {dt}"),
            graph_n(ctx, |b| {
                let x = b.input("x", desc(dt, &[4, 6]))?;
                let y = b.input("y", desc(dt, &[4, 2]))?;
                let mut outs = vec![
                    b.concat(&[&x, &y], 1)?,
                    // Past one kernel's storage bindings: two kernels.
                    b.concat(&[&y, &x, &y, &x, &y, &x, &y, &x, &y], 1)?,
                    b.transpose(&x, None)?,
                    b.slice(&x, &[1, 0], &[2, 3], Some(&[1, 2]))?,
                    b.reshape(&x, &[2, 12])?,
                ];
                outs.extend(b.split(&x, 2, 1)?);
                for mode in [
                    PaddingMode::Constant,
                    PaddingMode::Edge,
                    PaddingMode::Reflection,
                ] {
                    outs.push(b.pad(&x, &[1, 0], &[0, 2], mode, 1.5)?);
                }
                Ok(outs)
            }),
        );
    }
    reductions_gathers_and_normalizations(ctx, &mut add);
    squeeze_excite_graphs(ctx, &mut add);
    depthwise_pointwise_graphs(ctx, &mut add);
    quant_conv_graphs(ctx, &mut add);
    few_output_graphs(ctx, &mut add);
    // Ten axes that fold to a few: the kernels take at most MAX_RANK.
    add(
        "ten axes".into(),
        graph_n(ctx, |b| {
            let a = b.input(
                "a",
                desc(DataType::Float32, &[2, 1, 3, 1, 2, 1, 2, 1, 2, 2]),
            )?;
            let c = b.input("c", desc(DataType::Float32, &[2, 1, 1]))?;
            Ok(vec![
                b.add(&a, &c)?,
                b.transpose(&a, Some(&[1, 0, 2, 3, 4, 5, 6, 7, 8, 9]))?,
            ])
        }),
    );
    z
}

/// Every reduction kind and type (axes kept, dropped, none, all), argMin
/// and argMax in every type, gather, expand and tile in every type, and the
/// normalizations (with a fused activation) and logSoftmax.
/// Squeeze-and-excitation chains (the mean over the image, then one or two
/// 1x1 conv2d with activations), each fused into one `SqueezeExcite` node:
/// both float types and layouts, every filter layout, with and without
/// biases, pooled by averagePool2d or reduceMean, and activation pairs whose
/// helpers must each be emitted once.
fn squeeze_excite_graphs(ctx: &Context, add: &mut impl FnMut(String, GraphIr)) {
    let filters = [
        Conv2dFilterLayout::Oihw,
        Conv2dFilterLayout::Hwio,
        Conv2dFilterLayout::Ohwi,
        Conv2dFilterLayout::Ihwo,
    ];
    // (first layer's, second layer's): log/sqrt, erf and softplus have helpers.
    let act_pairs: [(usize, usize); 4] = [(0, 3), (12, 13), (15, 15), (17, 7)];
    for dt in FLOATS {
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for (k, filter) in filters.into_iter().enumerate() {
                for layers in [1, 2] {
                    let bias = k % 2 == 0;
                    let reduce_mean = k >= 2;
                    let (a0, a1) = act_pairs[(k + layers) % act_pairs.len()];
                    let ir = graph(ctx, |b| {
                        let (c, hidden, h, w) = (6, 3, 5, 3);
                        let x = b.input("x", desc(dt, &nchw_shape(layout, [2, c, h, w])))?;
                        let mut v = if reduce_mean {
                            let axes: &[usize] = match layout {
                                InputLayout::Nchw => &[2, 3],
                                InputLayout::Nhwc => &[1, 2],
                            };
                            b.reduce_mean(&x, Some(axes), true)?
                        } else {
                            let o = Pool2dOptions {
                                layout,
                                ..Pool2dOptions::new()
                            };
                            b.average_pool2d(&x, o)?
                        };
                        let widths = if layers == 2 {
                            vec![(c, hidden, a0), (hidden, c, a1)]
                        } else {
                            vec![(c, hidden, a1)]
                        };
                        for (ic, oc, act) in widths {
                            let f = zeros(b, dt, &conv_filter_shape(filter, [oc, ic, 1, 1]));
                            let bias = bias.then(|| zeros(b, dt, &[oc]));
                            let o = Conv2dOptions {
                                input_layout: layout,
                                filter_layout: filter,
                                ..Conv2dOptions::new()
                            };
                            v = ACTIVATIONS[act](b, &b.conv2d(&v, &f, bias.as_ref(), o)?)?;
                        }
                        Ok(v)
                    });
                    assert_eq!(ir.nodes.len(), 1, "{:?}", ir.nodes);
                    assert!(matches!(ir.nodes[0].op, Op::SqueezeExcite(_)));
                    add(
                        format!(
                            "squeezeExcite {dt} {layout:?} {filter:?} {layers} layers bias {bias} \
                             reduceMean {reduce_mean}"
                        ),
                        ir,
                    );
                }
            }
        }
    }
}

/// A depthwise conv2d read only by a 1x1 conv2d, fused into one
/// `DepthwisePointwise` node: both float types and layouts, every filter
/// layout on either side, each bias, the input scale and the residual on and
/// off, a channel multiplier of 2, activations on both convs.
fn depthwise_pointwise_graphs(ctx: &Context, add: &mut impl FnMut(String, GraphIr)) {
    let filters = [
        Conv2dFilterLayout::Oihw,
        Conv2dFilterLayout::Hwio,
        Conv2dFilterLayout::Ohwi,
        Conv2dFilterLayout::Ihwo,
    ];
    for dt in FLOATS {
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for flags in 0..16u8 {
                let [dw_bias, pw_bias, scale, residual] = [1, 2, 4, 8].map(|bit| flags & bit != 0);
                let (dwl, pwl) = (filters[flags as usize % 4], filters[flags as usize / 4]);
                let mult = 1 + (flags as usize % 3 == 0) as usize;
                let ir = graph(ctx, |b| {
                    let (c, oc) = (3, 64);
                    let x = b.input("x", desc(dt, &nchw_shape(layout, [1, c, 7, 6])))?;
                    let x = if scale {
                        let gate = b.input("gate", desc(dt, &nchw_shape(layout, [1, c, 1, 1])))?;
                        b.mul(&x, &gate)?
                    } else {
                        x
                    };
                    let f = zeros(b, dt, &conv_filter_shape(dwl, [c * mult, 1, 3, 3]));
                    let bias = dw_bias.then(|| zeros(b, dt, &[c * mult]));
                    let o = Conv2dOptions {
                        padding: [1, 1, 0, 1],
                        strides: [2, 1],
                        groups: c,
                        input_layout: layout,
                        filter_layout: dwl,
                        ..Conv2dOptions::new()
                    };
                    let d = ACTIVATIONS[6](b, &b.conv2d(&x, &f, bias.as_ref(), o)?)?;
                    let f = zeros(b, dt, &conv_filter_shape(pwl, [oc, c * mult, 1, 1]));
                    let bias = pw_bias.then(|| zeros(b, dt, &[oc]));
                    let o = Conv2dOptions {
                        input_layout: layout,
                        filter_layout: pwl,
                        ..Conv2dOptions::new()
                    };
                    let mut y = b.conv2d(&d, &f, bias.as_ref(), o)?;
                    if residual {
                        let r = b.input("r", y.descriptor().clone())?;
                        y = b.add(&y, &r)?;
                    }
                    ACTIVATIONS[if residual { 12 } else { 0 }](b, &y)
                });
                assert_eq!(ir.nodes.len(), 1, "{:?}", ir.nodes);
                let node = &ir.nodes[0];
                assert!(matches!(node.op, Op::DepthwisePointwise(_)));
                assert_eq!((node.input_scale, node.residual), (scale, residual));
                add(
                    format!(
                        "depthwisePointwise {dt} {layout:?} {dwl:?} {pwl:?} bias {dw_bias} {pw_bias} \
                         scale {scale} residual {residual}"
                    ),
                    ir,
                );
            }
        }
    }
}

/// Quantized conv2d: both float types and layouts, int8 and uint8 inputs,
/// filter zero points (the input sum) or none, with and without a bias, a
/// fused activation, grouped and not.
fn quant_conv_graphs(ctx: &Context, add: &mut impl FnMut(String, GraphIr)) {
    for dt in FLOATS {
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for flags in 0..8u8 {
                let [signed, bias, grouped] = [1, 2, 4].map(|bit| flags & bit != 0);
                let (c, oc, groups) = if grouped { (6, 6, 3) } else { (5, 9, 1) };
                let options = QuantConv2dOptions {
                    conv: Conv2dOptions {
                        padding: [1, 0, 1, 1],
                        strides: [2, 1],
                        groups,
                        input_layout: layout,
                        ..Conv2dOptions::new()
                    },
                    input_scale: 0.1,
                    input_zero: if signed { -3 } else { 130 },
                    input_signed: signed,
                    filter_shape: [oc, c / groups, 3, 2],
                    filter: std::sync::Arc::new(vec![1; oc * c / groups * 6]),
                    filter_zero: vec![if signed { 0 } else { 2 }; oc],
                    filter_scale: vec![0.02; oc],
                };
                let ir = graph(ctx, |b| {
                    let x = b.input("x", desc(dt, &nchw_shape(layout, [1, c, 7, 6])))?;
                    let bias = bias.then(|| zeros(b, dt, &[oc]));
                    let y = b.quant_conv2d(&x, bias.as_ref(), options)?;
                    ACTIVATIONS[flags as usize % 3](b, &y)
                });
                assert!(matches!(ir.nodes[0].op, Op::QuantConv2d(_)));
                add(
                    format!(
                        "quantConv2d {dt} {layout:?} signed {signed} bias {bias} groups {groups}"
                    ),
                    ir,
                );
            }
        }
    }
}

fn reductions_gathers_and_normalizations(ctx: &Context, add: &mut impl FnMut(String, GraphIr)) {
    let kinds: [(ReduceKind, Reduce); 8] = [
        (ReduceKind::Mean, |b, x, a, k| b.reduce_mean(x, a, k)),
        (ReduceKind::Sum, |b, x, a, k| b.reduce_sum(x, a, k)),
        (ReduceKind::Max, |b, x, a, k| b.reduce_max(x, a, k)),
        (ReduceKind::Min, |b, x, a, k| b.reduce_min(x, a, k)),
        (ReduceKind::Product, |b, x, a, k| b.reduce_product(x, a, k)),
        (ReduceKind::SumSquare, |b, x, a, k| {
            b.reduce_sum_square(x, a, k)
        }),
        (ReduceKind::L2, |b, x, a, k| b.reduce_l2(x, a, k)),
        (ReduceKind::LogSumExp, |b, x, a, k| {
            b.reduce_log_sum_exp(x, a, k)
        }),
    ];
    for (kind, reduce) in kinds {
        for dt in NUMBERS {
            if dt == DataType::Int32 && !kind.takes_int32() {
                continue;
            }
            add(
                format!("{} {dt}", kind.name()),
                graph_n(ctx, |b| {
                    let x = b.input("x", desc(dt, &[2, 3, 4, 5]))?;
                    Ok(vec![
                        reduce(b, &x, Some(&[1]), true)?,
                        reduce(b, &x, Some(&[0, 2]), false)?,
                        reduce(b, &x, Some(&[]), false)?,
                        reduce(b, &x, None, false)?,
                    ])
                }),
            );
        }
    }
    for dt in ALL_TYPES {
        add(
            format!("argMin/argMax {dt}"),
            graph_n(ctx, |b| {
                let x = b.input("x", desc(dt, &[2, 3, 4]))?;
                Ok(vec![
                    b.arg_max(&x, 1, false, false)?,
                    b.arg_max(&x, 2, true, true)?,
                    b.arg_min(&x, 0, false, false)?,
                    b.arg_min(&x, 1, true, true)?,
                ])
            }),
        );
        add(
            format!("gather, expand, tile {dt}"),
            graph_n(ctx, |b| {
                let x = b.input("x", desc(dt, &[3, 4, 5]))?;
                let i = b.input("i", desc(DataType::Int32, &[2, 2]))?;
                let s = b.input("s", desc(DataType::Int32, &[]))?;
                let row = b.input("row", desc(dt, &[1, 5]))?;
                Ok(vec![
                    b.gather(&x, &i, 1)?,
                    b.gather(&x, &s, 0)?,
                    b.gather(&x, &i, 2)?,
                    b.expand(&row, &[2, 4, 5])?,
                    b.tile(&x, &[2, 1, 3])?,
                ])
            }),
        );
    }
    for dt in FLOATS {
        add(
            format!("normalizations {dt}"),
            graph_n(ctx, |b| {
                let x = b.input("x", desc(dt, &[2, 3, 4, 5]))?;
                let c = b.input("c", desc(dt, &[3]))?;
                let s = b.input("s", desc(dt, &[5, 4]))?;
                Ok(vec![
                    b.layer_normalization(&x, Some(&s), Some(&s), &[3, 2], 1e-5)?,
                    b.instance_normalization(&x, Some(&c), None, 1e-5, InputLayout::Nchw)?,
                    b.relu(&b.batch_normalization(&x, &c, &c, None, None, 1, 1e-3)?)?,
                    b.log_softmax(&x, 1)?,
                ])
            }),
        );
    }
}

/// The bundled models, as the CPU context builds them.
fn models(ctx: &Context) -> Vec<(String, GraphIr)> {
    use crate::models;
    let selfie = models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap();
    let esrgan = models::load(models::bundled("esrgan-slim/x2/model.json")).unwrap();
    vec![
        (
            "selfie".into(),
            (*selfie.build(ctx, None).unwrap().inner.ir).clone(),
        ),
        (
            "ESRGAN".into(),
            (*esrgan.build(ctx, Some((64, 96))).unwrap().inner.ir).clone(),
        ),
    ]
}

/// A recorded kernel passes naga's validator and SPIR-V writer, and
/// declares the params and bindings it is given.
fn validate(what: &str, k: &Recorded) {
    let caps =
        naga::valid::Capabilities::SHADER_FLOAT16 | naga::valid::Capabilities::COOPERATIVE_MATRIX;
    let module = naga::front::wgsl::parse_str(&k.source)
        .unwrap_or_else(|e| panic!("{what}: {}\n{}", e.emit_to_string(&k.source), k.source));
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {e:?}\n{}", k.source));
    naga::back::spv::write_vec(&module, &info, &Default::default(), None)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    params_agree(k, &module);
    bindings_agree(k, &module);
}

/// Element-wise groups' generated kernels (`pointwise.rs`), as the plan
/// groups them: every activation as a member, every binary op with a
/// residual (pow's and log's helpers together), and a box decoding's reads
/// through slices and stores into a concat.
#[test]
fn pointwise_group_kernels_validate_and_match_their_params() {
    use crate::ml::gpu::{concat_writes, pointwise, slice_reads};
    let ctx = Context::cpu();
    let mut graphs: Vec<(String, GraphIr)> = Vec::new();
    for dt in FLOATS {
        for (k, act) in ACTIVATIONS.iter().enumerate() {
            let ir = graph(&ctx, |b| {
                let x = b.input("x", desc(dt, &[3, 5]))?;
                let y = b.input("y", desc(dt, &[5]))?;
                b.sub(&b.mul(&act(b, &x)?, &y)?, &x)
            });
            graphs.push((format!("activation {k} ({dt})"), ir));
        }
        let ir = graph(&ctx, |b| {
            let x = b.input("x", desc(dt, &[2, 3, 4]))?;
            let y = b.input("y", desc(dt, &[4]))?;
            let z = b.input("z", desc(dt, &[2, 3, 4]))?;
            let t = b.add(&b.pow(&x, &y)?, &z)?;
            let t = b.div(&b.min(&b.max(&t, &x)?, &z)?, &y)?;
            b.log(&b.sub(&b.mul(&t, &z)?, &x)?)
        });
        graphs.push((format!("binary ops ({dt})"), ir));
        let ir = graph(&ctx, |b| {
            let d = b.input("d", desc(dt, &[1, 4, 7]))?;
            let anchors = b.input("a", desc(dt, &[2, 7]))?;
            let lt = b.slice(&d, &[0, 0, 0], &[1, 2, 7], None)?;
            let rb = b.slice(&d, &[0, 2, 0], &[1, 2, 7], None)?;
            let x1y1 = b.sub(&anchors, &lt)?;
            let x2y2 = b.add(&anchors, &rb)?;
            let c = b.add(&x1y1, &x2y2)?;
            b.concat(&[&c, &b.sub(&x2y2, &x1y1)?], 1)
        });
        graphs.push((format!("box decoding ({dt})"), ir));
    }
    let mut kernels = 0;
    for (what, ir) in &graphs {
        let writes = concat_writes::plan(ir);
        let reads = slice_reads::plan(ir);
        let groups = pointwise::plan(ir, &writes, &reads);
        assert_eq!(groups.groups.len(), 1, "{what}: groups");
        let mut l = Lowering::record(ir, TARGETS[0]);
        for members in &groups.groups {
            pointwise::lower(&mut l, &writes, &reads, members).unwrap();
        }
        for k in &l.recorded {
            validate(what, k);
            kernels += 1;
        }
    }
    assert_eq!(kernels, graphs.len());
}

/// The innermost scalar of a WGSL type: "u32", "i32" or "f32".
fn scalar_name(module: &naga::Module, ty: naga::Handle<naga::Type>) -> String {
    use naga::TypeInner as Ti;
    match &module.types[ty].inner {
        Ti::Scalar(s) | Ti::Vector { scalar: s, .. } => {
            let kind = match s.kind {
                naga::ScalarKind::Uint => "u",
                naga::ScalarKind::Sint => "i",
                naga::ScalarKind::Float => "f",
                other => panic!("{other:?} in Params"),
            };
            format!("{kind}{}", s.width * 8)
        }
        Ti::Array { base, .. } => scalar_name(module, *base),
        other => panic!("{other:?} in Params"),
    }
}

/// The Rust `Params` the lowering handed over and the WGSL `struct Params`
/// the kernel reads have the same fields at the same offsets, of the same
/// sizes and scalar types, and the same size (the Rust one padded to 16
/// bytes); Rust fields WGSL lacks are padding (named `_...`).
fn params_agree(k: &Recorded, module: &naga::Module) {
    let what = &k.label;
    let (ty, members, span) = module
        .types
        .iter()
        .find_map(|(h, t)| match (&t.name, &t.inner) {
            (Some(n), naga::TypeInner::Struct { members, span }) if n == "Params" => {
                Some((h, members, *span))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{what}: no struct Params\n{}", k.source));
    let mut layouter = naga::proc::Layouter::default();
    layouter.update(module.to_ctx()).unwrap();
    let size = k.params.len();
    assert_eq!(
        size % 16,
        0,
        "{what}: Params of {size} bytes, not a multiple of 16"
    );
    assert_eq!(
        size as u32,
        layouter[ty].size.next_multiple_of(16),
        "{what}: Rust Params of {size} bytes, WGSL of {span}"
    );
    for m in members {
        let name = m.name.as_deref().unwrap();
        let field = k
            .fields
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{what}: WGSL Params.{name} is not in the Rust struct"));
        assert_eq!(field.offset as u32, m.offset, "{what}: offset of {name}");
        assert_eq!(
            field.size as u32, layouter[m.ty].size,
            "{what}: size of {name}"
        );
        let scalar = scalar_name(module, m.ty);
        assert!(
            field.ty.contains(&scalar),
            "{what}: {name} is {} in Rust, of {scalar} in WGSL",
            field.ty
        );
    }
    for f in k.fields {
        assert!(
            f.name.starts_with('_') || members.iter().any(|m| m.name.as_deref() == Some(f.name)),
            "{what}: Rust Params.{} is not in the WGSL struct",
            f.name
        );
    }
}

/// The module declares binding 0 (the params uniform) and one storage
/// buffer per bound operand (and table), and nothing else.
fn bindings_agree(k: &Recorded, module: &naga::Module) {
    let mut found: Vec<(u32, naga::AddressSpace)> = module
        .global_variables
        .iter()
        .filter_map(|(_, g)| {
            g.binding
                .as_ref()
                .map(|b| (b.group * 100 + b.binding, g.space))
        })
        .collect();
    found.sort_by_key(|(b, _)| *b);
    let numbers: Vec<u32> = found.iter().map(|(b, _)| *b).collect();
    let want: Vec<u32> = (0..=k.storage_bindings as u32).collect();
    assert_eq!(numbers, want, "{}: bindings", k.label);
    assert_eq!(
        found[0].1,
        naga::AddressSpace::Uniform,
        "{}: params",
        k.label
    );
    for (b, space) in &found[1..] {
        assert!(
            matches!(space, naga::AddressSpace::Storage { .. }),
            "{}: binding {b} is {space:?}",
            k.label
        );
    }
}

/// conv2d problems (as `CONV_PROBLEMS`) for the kernels of few outputs:
/// conv2d_split.wgsl in NHWC (64 -> 4 and 32 -> 12 as in ESRGAN-slim, 16
/// lanes over 17 channel runs, 5 outputs, a 1x1 onto one output), then the
/// vec4 GEMM's 32-channel tiles (64 and 128 pixels), and its 64-channel
/// 128-pixel tile, which the problems above no longer reach (1x1s over
/// 20 input channels: up to 16, conv2d_pointwise.wgsl takes them); then
/// two for that kernel, channels in runs of 4 (vector loads) and not;
/// last, a 32 -> 12 on a map large enough for the staged tensor-core
/// kernel's 16-channel tile in float16, unsplit (the split kernel with a
/// residual).
const FEW_OUTPUT_PROBLEMS: [(usize, usize, usize, usize, usize); 11] = [
    (64, 4, 1, 5, 3),
    (32, 12, 1, 5, 3),
    (68, 16, 1, 4, 3),
    (32, 5, 1, 5, 3),
    (256, 1, 1, 3, 1),
    (16, 32, 1, 6, 3),
    (20, 20, 1, 184, 1),
    (20, 72, 1, 184, 1),
    (4, 64, 1, 9, 1),
    (6, 12, 1, 5, 1),
    (32, 12, 1, 144, 3),
];

/// [`FEW_OUTPUT_PROBLEMS`] in both float types and layouts, with every
/// combination of bias, input scale and residual under a relu, and with a
/// chain of activations.
fn few_output_graphs(ctx: &Context, add: &mut impl FnMut(String, GraphIr)) {
    for dt in FLOATS {
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for problem in FEW_OUTPUT_PROBLEMS {
                for flags in 0..8u8 {
                    let [bias, scale, residual] = [1, 2, 4].map(|bit| flags & bit != 0);
                    let conv = Conv {
                        filter: Conv2dFilterLayout::Ohwi,
                        bias,
                        scale,
                        residual,
                        act: Some(ACTIVATIONS[0]),
                        ..Conv::new(dt, layout, problem)
                    };
                    add(
                        format!("few outputs {dt} {layout:?} {problem:?} bias {bias} scale {scale} residual {residual}"),
                        conv.graph(ctx),
                    );
                }
                let conv = Conv {
                    bias: true,
                    act: Some(ACTIVATIONS[8]),
                    ..Conv::new(dt, layout, problem)
                };
                add(
                    format!("few outputs {dt} {layout:?} {problem:?} sigmoid(relu)"),
                    conv.graph(ctx),
                );
            }
        }
    }
}

/// A short reduction over a small map (selfie's 1x1 convolutions on 16x16
/// and 32x32 maps) takes the direct kernel: a GEMM would run 4 to 16
/// workgroups there. From 32 of its 64 x 64 tiles, or past 256 products per
/// output, the GEMM again, its reduction split over workgroups below 66
/// tiles.
#[test]
fn small_maps_with_short_reductions_take_the_direct_kernel() {
    let ctx = Context::cpu();
    let tc = TARGETS[0];
    for (c, oc, size, k, want) in [
        (128, 32, 16, 1, "lanes"),
        (96, 24, 32, 1, "lanes"),
        (16, 24, 16, 3, "direct"),
        (128, 32, 64, 1, "vec4 x 64"),
        // Past 256 products, 4 tiles over 288 rows: the split reduction.
        (32, 32, 16, 3, "split reduction"),
        (32, 32, 96, 3, "vec4 x 64"),
    ] {
        for dt in [DataType::Float32, DataType::Float16] {
            let conv = Conv {
                filter: Conv2dFilterLayout::Ohwi,
                bias: true,
                scale: true,
                residual: true,
                ..Conv::new(dt, InputLayout::Nhwc, (c, oc, 1, size, k))
            };
            let recorded = record(&conv.graph(&ctx), tc).unwrap();
            let kernels: Vec<_> = recorded
                .iter()
                .filter(|k| k.label == "conv2d")
                .map(|k| conv_kernel(&k.source).unwrap())
                .collect();
            assert_eq!(kernels, [want], "{dt} {c} -> {oc} {k}x{k} at {size}x{size}");
        }
    }
}

/// In NCHW (ONNX models), few 64 x 64 tiles an image over a long
/// reduction split it over workgroups, then add up the runs; 132 tiles or
/// more, or a short reduction, take one pass.
#[test]
fn few_tiles_over_long_reductions_split_them() {
    let ctx = Context::cpu();
    for (problem, want) in [
        // ResNet-50's 7x7 stage (narrowed): 1 tile, 2304 rows: 36 runs.
        ((256, 64, 1, 7, 3), Some(36)),
        // 14x14, two groups of 128 -> 96: 4 x 2 x 2 tiles, 1152 rows: 17.
        ((256, 192, 2, 14, 3), Some(17)),
        // 96x96: 144 tiles.
        ((64, 64, 1, 96, 3), None),
        // 48 rows: 3 slices.
        ((48, 64, 1, 7, 1), None),
    ] {
        let conv = Conv {
            bias: true,
            residual: true,
            act: Some(ACTIVATIONS[0]),
            ..Conv::new(DataType::Float32, InputLayout::Nchw, problem)
        };
        let recorded = record(&conv.graph(&ctx), TARGETS[0]).unwrap();
        let labels: Vec<_> = recorded.iter().map(|k| k.label.as_str()).collect();
        match want {
            Some(splits) => {
                assert_eq!(labels, ["conv2d", "conv2d sum"], "{problem:?}");
                let constant = format!("const SPLITS: u32 = {splits}u;");
                assert!(
                    recorded.iter().all(|k| k.source.contains(&constant)),
                    "{problem:?}"
                );
            }
            None => assert_eq!(labels, ["conv2d"], "{problem:?}"),
        }
    }
}

/// Each of ESRGAN-slim's convolution shapes (3x3, NHWC) takes the kernel
/// meant for it, in float32 and in float16 with and without tensor cores.
#[test]
fn few_output_convolutions_take_their_kernels() {
    let ctx = Context::cpu();
    let [tc, no_tc] = TARGETS;
    let f32 = DataType::Float32;
    let f16 = DataType::Float16;
    // (data type, target, input channels, output channels, size, kernel)
    let cases = [
        (f32, tc, 64, 4, 9, "split"),
        (f16, tc, 64, 4, 9, "split"),
        (f16, no_tc, 64, 4, 9, "split"),
        (f32, tc, 32, 12, 9, "split"),
        (f16, no_tc, 32, 12, 9, "split"),
        // On tensor cores in float16, the staged kernel's 16-channel tile
        // over 4 outputs.
        (f16, tc, 32, 12, 184, "tensor cores staged x16"),
        (f16, tc, 64, 16, 184, "tensor cores staged x16"),
        (f16, tc, 64, 4, 184, "split"),
        (f32, tc, 64, 16, 9, "split"),
        // Past 16 outputs, the vec4 GEMM's 128 x 32 tile from 264 such
        // tiles on (64 x 64 below), or the tensor cores in float16 (their
        // 32-channel tile up to 32 outputs).
        (f32, tc, 64, 32, 9, "split reduction"),
        (f32, tc, 64, 32, 92, "vec4 x 64"),
        (f32, tc, 64, 32, 184, "vec4 32 x 128"),
        (f32, tc, 64, 20, 184, "vec4 32 x 128"),
        (f16, no_tc, 64, 32, 184, "vec4 32 x 128"),
        (f16, tc, 64, 32, 184, "tensor cores staged x32"),
        (f16, tc, 64, 48, 184, "tensor cores staged"),
        // A small map leaves the tensor cores (TC_MIN_WORKGROUPS).
        (f16, tc, 64, 32, 9, "split reduction"),
        // An RGB head (fewer than 16 input channels) takes the blocked
        // copy's kernel.
        (f16, tc, 3, 32, 184, "tensor cores blocked x32"),
        (f32, tc, 64, 64, 9, "split reduction"),
        (f32, tc, 64, 36, 184, "vec4 x 128"),
        // ESRGAN-slim's body: Winograd in float32, and in float16 without
        // tensor cores; the staged kernel with them.
        (f32, tc, 64, 64, 184, "winograd"),
        (f16, no_tc, 64, 64, 184, "winograd"),
        (f16, tc, 64, 64, 184, "tensor cores staged"),
        // Short reductions keep the narrow kernel: 12 -> 3 (108 long), and
        // 16 channels (64 bytes a pixel).
        (f32, tc, 12, 3, 9, "narrow vector"),
        (f32, tc, 16, 4, 9, "narrow vector"),
        (f16, no_tc, 12, 3, 9, "narrow vector"),
    ];
    for (dt, target, c, oc, size, want) in cases {
        let conv = Conv {
            filter: Conv2dFilterLayout::Ohwi,
            bias: true,
            ..Conv::new(dt, InputLayout::Nhwc, (c, oc, 1, size, 3))
        };
        let recorded = record(&conv.graph(&ctx), target).unwrap();
        let kernels: Vec<_> = recorded
            .iter()
            .filter(|k| k.label == "conv2d")
            .map(|k| conv_kernel(&k.source).unwrap())
            .collect();
        assert_eq!(
            kernels,
            [want],
            "{dt} {c} -> {oc} at {size}x{size}, tensor cores {}",
            target.f16_tensor_cores
        );
    }
    // Depthwise and narrow groups stay off the tensor cores in float16:
    // padding one input channel to 16 would waste 15 of 16 products.
    for problem in [(16, 16, 16, 46, 3), (32, 64, 16, 46, 3)] {
        let conv = Conv::new(f16, InputLayout::Nhwc, problem);
        let recorded = record(&conv.graph(&ctx), tc).unwrap();
        let kernel = conv_kernel(&recorded[0].source).unwrap();
        assert!(!kernel.starts_with("tensor cores"), "{problem:?}: {kernel}");
    }
    // A 1x1 over up to 16 input channels onto outputs in runs of 4 takes
    // the pointwise kernel in NHWC, in either float type, tensor cores or
    // not (ESRGAN-slim's 4 -> 64 pieces); 20 channels or NCHW do not.
    for (dt, target, layout, c, oc, want) in [
        (f16, tc, InputLayout::Nhwc, 4, 64, "pointwise"),
        (f32, tc, InputLayout::Nhwc, 4, 64, "pointwise"),
        (f16, no_tc, InputLayout::Nhwc, 16, 72, "pointwise"),
        (f32, tc, InputLayout::Nhwc, 20, 64, "vec4 x 64"),
        (f32, tc, InputLayout::Nchw, 4, 64, "64x64"),
    ] {
        let conv = Conv::new(dt, layout, (c, oc, 1, 64, 1));
        let recorded = record(&conv.graph(&ctx), target).unwrap();
        assert_eq!(
            conv_kernel(&recorded[0].source),
            Some(want),
            "{dt} {layout:?} 1x1 {c} -> {oc}"
        );
    }
    // NCHW keeps the kernels it had.
    let conv = Conv::new(f32, InputLayout::Nchw, (64, 4, 1, 9, 3));
    let recorded = record(&conv.graph(&ctx), tc).unwrap();
    assert_eq!(conv_kernel(&recorded[0].source), Some("narrow"));
}

/// What sets each conv2d kernel apart in its source.
fn conv_kernel(source: &str) -> Option<&'static str> {
    [
        ("winograd", "Winograd F(2x2, 3x3)"),
        // The first pass of conv2d_gemm.wgsl with its reduction split.
        ("split reduction", "part[split * params.total"),
        ("depthwise", "Depthwise conv2d (one input channel per group"),
        ("lanes", "const LANES: u32 = 8u;"),
        ("direct", "const LANES: u32 = 1u;"),
        ("split", "the reduction is split over L lanes"),
        ("pointwise", "conv2d 1x1 over a short reduction"),
        ("upsampled", "output pixels of input pixel (Y, X)"),
        (
            "vec4 32 x 128",
            "const TM: u32 = 128u;\nconst TN: u32 = 32u;",
        ),
        ("vec4 32 x 64", "const TM: u32 = 64u;\nconst TN: u32 = 32u;"),
        // conv2d_gemm_vec.wgsl's tiles (both buffers' vec4s of A, 2 x 8 x
        // (TM / 4 + 1)), before the narrow kernel's mark: both read x as
        // vec4s.
        ("vec4 x 128", "const A_TILE: u32 = 528u;"),
        ("vec4 x 64", "const A_TILE: u32 = 272u;"),
        ("narrow vector", "x: array<vec4<TI>>"),
        ("narrow", "conv2d with few output channels"),
        ("64x64", "conv2d as an implicit GEMM, for convolutions"),
        ("wide along k", "const ALONG_K: bool = true;"),
        ("wide", "const ALONG_K: bool = false;"),
        (
            "tensor cores split",
            "let e = split * params.total + mo * params.pixels",
        ),
        ("tensor cores blocked x32", "fn a_at(&const BN: u32 = 2u;"),
        ("tensor cores blocked", "fn a_at("),
        (
            "tensor cores staged split",
            "var<workgroup> staged&const R: u32 = 1u;",
        ),
        (
            "tensor cores staged x16",
            "var<workgroup> staged&const BN: u32 = 1u;",
        ),
        (
            "tensor cores staged x32",
            "var<workgroup> staged&const BN: u32 = 2u;",
        ),
        ("tensor cores staged", "var<workgroup> staged"),
        ("tensor cores x32", "const BN: u32 = 2u;"),
        ("tensor cores", "coopMultiplyAdd"),
    ]
    .into_iter()
    // A mark of several parts (joined by '&') needs them all.
    .find(|(_, mark)| mark.split('&').all(|part| source.contains(part)))
    .map(|(name, _)| name)
}

#[test]
fn every_kernel_variant_validates_translates_to_spirv_and_matches_its_params() {
    let ctx = Context::cpu();
    let mut graphs = zoo(&ctx);
    graphs.extend(models(&ctx));
    let mut ops = [false; OP_KINDS];
    let mut conv_kernels = BTreeSet::new();
    let mut labels = BTreeSet::new();
    let mut seen = HashSet::new();
    let mut kernels = 0;
    for (what, ir) in &graphs {
        for node in &ir.nodes {
            ops[op_kind(&node.op)] = true;
        }
        for target in TARGETS {
            let recorded = record(ir, target).unwrap_or_else(|e| panic!("{what}: {e}"));
            for k in recorded {
                kernels += 1;
                labels.insert(k.label.clone());
                if k.label == "conv2d" {
                    conv_kernels.insert(conv_kernel(&k.source).unwrap());
                }
                if !seen.insert((k.source.clone(), k.params.len())) {
                    continue;
                }
                validate(&format!("{what}, {}", k.label), &k);
            }
        }
    }
    for copy in ["conv2d blocks", "conv2d im2col", "conv2d sum"] {
        assert!(labels.contains(copy), "no {copy} kernel in {labels:?}");
    }
    let missing: Vec<usize> = (0..OP_KINDS).filter(|&i| !ops[i]).collect();
    assert!(
        missing.is_empty(),
        "ops never lowered: {missing:?} (see op_kind)"
    );
    assert_eq!(
        conv_kernels.into_iter().collect::<Vec<_>>(),
        [
            "64x64",
            "depthwise",
            "direct",
            "lanes",
            "narrow",
            "narrow vector",
            "pointwise",
            "split",
            "split reduction",
            "tensor cores",
            "tensor cores blocked",
            "tensor cores blocked x32",
            "tensor cores split",
            "tensor cores staged",
            "tensor cores staged split",
            "tensor cores staged x16",
            "tensor cores staged x32",
            "tensor cores x32",
            "upsampled",
            "vec4 32 x 128",
            "vec4 x 128",
            "vec4 x 64",
            "wide",
            "wide along k",
            "winograd"
        ]
    );
    assert!(
        seen.len() >= 200,
        "{} distinct kernels of {kernels}",
        seen.len()
    );
}

#[test]
fn a_new_input_size_generates_the_same_kernel_sources() {
    let ctx = Context::cpu();
    let esrgan = crate::models::load(crate::models::bundled("esrgan-slim/x2/model.json")).unwrap();
    // Both sizes past conv2d's wide-tile threshold (which kernel a conv
    // uses follows its size; nothing else in the source may).
    let sources = |hw| -> Vec<String> {
        let ir = esrgan.build(&ctx, Some(hw)).unwrap().inner.ir.clone();
        let recorded = record(&ir, TARGETS[0]).unwrap();
        assert!(!recorded.is_empty());
        recorded.into_iter().map(|k| k.source).collect()
    };
    assert_eq!(sources((180, 320)), sources((240, 328)));
}

#[test]
fn axes_fold_to_few_and_refuse_past_max_rank() {
    // a: contiguous [2, 3, 4, 5, 6, 7, 2, 2, 2]; b: [7, 1, 1, 1] broadcast.
    let shape = [2, 3, 4, 5, 6, 7, 2, 2, 2];
    let a = crate::ml::types::strides(&shape);
    let b = [0, 0, 0, 0, 0, 1, 0, 0, 0];
    let (rank, folded) = axes("add", &shape, &[&a, &b[..]]).unwrap();
    assert_eq!(rank, 3);
    assert_eq!(folded[..3], [[720, 56, 0, 0], [7, 8, 1, 0], [8, 1, 0, 0]]);
    assert!(folded[3..].iter().all(|a| *a == [0; 4]));
    // Reversing nine axes leaves nothing to merge.
    let shape = [2; 9];
    let reversed: Vec<usize> = crate::ml::types::strides(&shape)
        .into_iter()
        .rev()
        .collect();
    let e = axes("transpose", &shape, &[&reversed])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("more than the GPU kernels take ({MAX_RANK})")),
        "{e}"
    );

    let ctx = Context::cpu();
    let ir = graph(&ctx, |b| {
        b.transpose(&b.input("x", desc(DataType::Float32, &shape))?, None)
    });
    let e = record(&ir, TARGETS[0]).err().unwrap().to_string();
    assert!(e.contains("transpose"), "{e}");
}

/// On a GPU: the selfie model on a second context, and ESRGAN at a second
/// input size, compile no pipeline the device has not compiled before.
#[test]
fn a_new_input_size_or_context_compiles_no_new_pipeline() {
    use crate::models;
    let gpu = crate::gpu::Gpu::new().unwrap();
    let selfie = models::load(models::bundled("selfie/selfie_segmentation.tflite")).unwrap();
    selfie.build(&Context::gpu(&gpu), None).unwrap();
    let compiled = gpu.pipelines_compiled();
    assert!(compiled > 0);
    selfie.build(&Context::gpu(&gpu), None).unwrap();
    assert_eq!(
        gpu.pipelines_compiled(),
        compiled,
        "selfie on a second context"
    );

    let ctx = Context::gpu(&gpu);
    let esrgan = models::load(models::bundled("esrgan-slim/x2/model.json")).unwrap();
    esrgan.build(&ctx, Some((180, 320))).unwrap();
    let compiled = gpu.pipelines_compiled();
    esrgan.build(&ctx, Some((240, 328))).unwrap();
    assert_eq!(
        gpu.pipelines_compiled(),
        compiled,
        "ESRGAN at a second size"
    );
}

/// On a GPU (lavapipe in CI, which has no cooperative matrices but runs the
/// copy): the blocked tensor-core conv2d's first pass lays a float16 NHWC
/// input out as conv2d_coop_block.wgsl says, padding written as zeros over
/// whatever the recycled scratch held, for channels one by one (3 a group),
/// in runs of 4 (12) and of 8 (24), two groups.
/// A float16 copy kernel of conv2d (`source`, `spec`) over `invocations`
/// in workgroups of `wg`, as `run_copy` runs it.
fn copy_kernel<'a>(
    source: &'a str,
    spec: crate::gpu::Specialization,
    params: &super::super::conv2d::Params,
    invocations: usize,
    wg: u32,
) -> super::Kernel<'a> {
    use super::{grid, Kernel};
    Kernel {
        label: "conv2d copy".into(),
        source,
        spec,
        output_type: DataType::Float16,
        input_type: DataType::Float16,
        activations: &[],
        params: Kernel::params(params),
        table: None,
        inputs: vec![],
        outputs: vec![],
        workgroups: grid(invocations, wg),
        workgroup_size: wg,
    }
}

/// Runs a copy kernel (`kernel`: x at binding 1, the copy at 2) over `x`
/// into a scratch of `bytes` every byte of which was set (so unwritten
/// padding shows), and reads the copy back.
fn run_copy(
    gpu: &crate::gpu::Gpu,
    kernel: &super::Kernel<'_>,
    x: &[half::f16],
    bytes: usize,
) -> Vec<half::f16> {
    use super::kernel_source;
    use crate::gpu::Checks;
    let pipeline = gpu
        .compute_pipeline(&kernel.label, &kernel_source(kernel), Checks::Trusted)
        .unwrap();
    let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let uniform = gpu
        .create_buffer_with_data("params", &kernel.params.bytes, wgpu::BufferUsages::UNIFORM)
        .unwrap();
    let xbuf = gpu
        .create_buffer_with_data("x", bytemuck::cast_slice(x), storage)
        .unwrap();
    let xb = gpu
        .create_buffer_with_data("xb", &vec![0xff; bytes], storage)
        .unwrap();
    let group = gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: uniform.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: xbuf.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: xb.as_entire_binding(),
            },
        ],
    });
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        let [gx, gy, gz] = kernel.workgroups;
        pass.dispatch_workgroups(gx, gy, gz);
    }
    gpu.submit("kernel test", [encoder.finish()]).unwrap();
    let got = gpu
        .download_buffer(&xb, 0, bytes as u64)
        .unwrap()
        .wait()
        .unwrap();
    bytemuck::cast_slice(&got).to_vec()
}

#[test]
fn the_blocked_copy_pads_and_blocks_the_input() {
    use super::super::conv2d::Blocked;
    use super::super::conv2d::Params;
    let gpu = crate::gpu::Gpu::new().unwrap();
    if !gpu.has(wgpu::Features::SHADER_F16) {
        panic!("the blocked copy test needs SHADER_F16 (lavapipe has it)");
    }
    let (n, h, groups, k) = (2usize, 5usize, 2usize, 3usize);
    // Rows of 7 pixels take short runs of 32, of 37 long ones of 64.
    for (w, icg) in [(7usize, 3usize), (7, 12), (7, 24), (37, 12)] {
        let c = groups * icg;
        // Small integers: exact in float16, and none is zero.
        let x: Vec<half::f16> = (0..n * h * w * c)
            .map(|i| half::f16::from_f32((i % 997 + 1) as f32))
            .collect();
        let run = if w == 7 { 32 } else { 64 };
        let blocked = Blocked::choose((k, k), [1, 1], [1, 1], (h, w, run), groups, icg).unwrap();
        assert_eq!(blocked.columns, w.div_ceil(run) * run + k - 1);
        let params = Params {
            x_strides: [(h * w * c) as u32, 1, (w * c) as u32, c as u32],
            f_strides: [0; 4],
            stride: [1, 1],
            dilation: [1, 1],
            padding: [1, 1],
            filter_size: [k as u32, k as u32],
            total: (n * h * w * 16 * groups) as u32,
            pixels: (n * h * w) as u32,
            oc: (16 * groups) as u32,
            ocg: 16,
            oh: h as u32,
            ow: w as u32,
            ohw: (h * w) as u32,
            nhwc: 1,
            h: h as u32,
            w: w as u32,
            icg: icg as u32,
            kdim: (icg * k * k) as u32,
            channel_tiles: 1,
            ocp: 32,
            upsample: [1, 1],
        };
        let source = Blocked::copy_source();
        let kernel = copy_kernel(
            &source,
            blocked.copy_spec(icg),
            &params,
            blocked.copy_invocations(n, icg),
            Blocked::copy_workgroup_size(),
        );
        let got = run_copy(&gpu, &kernel, &x, blocked.bytes(n) as usize);
        let (rows, columns, icb) = (blocked.rows, blocked.columns, icg.div_ceil(16));
        assert_eq!(blocked.channel_blocks, groups * icb);
        for (at, value) in got.iter().enumerate() {
            let j = at % 16;
            let col = at / 16 % columns;
            let row = at / (16 * columns) % rows;
            let cb = at / (16 * columns * rows) % blocked.channel_blocks;
            let img = at / (16 * columns * rows * blocked.channel_blocks);
            let (g, channel) = (cb / icb, (cb % icb) * 16 + j);
            let (iy, ix) = (row as isize - 1, col as isize - 1);
            let inside = (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix);
            let want = if inside && channel < icg {
                x[((img * h + iy as usize) * w + ix as usize) * c + g * icg + channel]
            } else {
                half::f16::ZERO
            };
            assert_eq!(
                value.to_bits(),
                want.to_bits(),
                "icg {icg}: image {img} block {cb} row {row} column {col} channel {j}"
            );
        }
    }
}

/// The im2col copy (`conv2d_coop_im2col.wgsl`) on lavapipe: every output
/// pixel's patch, tap by tap, zero outside the image, for strides, padding,
/// dilations and a 1x1 at stride 2 (its tensor-core second pass runs only
/// where the adapter has cooperative matrices).
#[test]
fn the_im2col_copy_gathers_each_pixels_patch() {
    use super::super::conv2d::{im2col_copy, Params};
    let gpu = crate::gpu::Gpu::new().unwrap();
    assert!(
        gpu.has(wgpu::Features::SHADER_F16),
        "lavapipe has SHADER_F16"
    );
    let (n, h, w) = (2usize, 9usize, 7usize);
    let mut cases = 0;
    // (channels, filter size, stride, padding, dilation)
    for (c, k, s, pad, d) in [
        (16usize, 3usize, 2usize, 1usize, 1usize),
        (32, 3, 1, 2, 2),
        (16, 1, 2, 0, 1),
    ] {
        let (oh, ow) = (
            (h + 2 * pad - d * (k - 1) - 1) / s + 1,
            (w + 2 * pad - d * (k - 1) - 1) / s + 1,
        );
        let x: Vec<half::f16> = (0..n * h * w * c)
            .map(|i| half::f16::from_f32((i % 997 + 1) as f32))
            .collect();
        let (pixels, kk) = (n * oh * ow, k * k * c);
        let params = Params {
            x_strides: [(h * w * c) as u32, 1, (w * c) as u32, c as u32],
            f_strides: [0; 4],
            stride: [s as u32; 2],
            dilation: [d as u32; 2],
            padding: [pad as u32; 2],
            filter_size: [k as u32; 2],
            total: (pixels * 64) as u32,
            pixels: pixels as u32,
            oc: 64,
            ocg: 64,
            oh: oh as u32,
            ow: ow as u32,
            ohw: (oh * ow) as u32,
            nhwc: 1,
            h: h as u32,
            w: w as u32,
            icg: c as u32,
            kdim: kk as u32,
            channel_tiles: 1,
            ocp: 64,
            upsample: [1, 1],
        };
        let source = im2col_copy::source();
        let spec = crate::gpu::Specialization::new();
        let kernel = copy_kernel(&source, spec, &params, pixels * kk / 8, im2col_copy::WG);
        let got = run_copy(&gpu, &kernel, &x, im2col_copy::bytes(pixels, kk) as usize);
        assert_eq!(got.len(), pixels * kk);
        for (at, value) in got.iter().enumerate() {
            let (p, t, ch) = (at / kk, at % kk / c, at % c);
            let (img, oy, ox) = (p / (oh * ow), p / ow % oh, p % ow);
            let iy = (oy * s + t / k * d) as isize - pad as isize;
            let ix = (ox * s + t % k * d) as isize - pad as isize;
            let inside = (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix);
            let want = match inside {
                true => x[((img * h + iy as usize) * w + ix as usize) * c + ch],
                false => half::f16::ZERO,
            };
            assert_eq!(
                value.to_bits(),
                want.to_bits(),
                "{k}x{k} s{s}: pixel {p} tap {t} channel {ch}"
            );
        }
        cases += 1;
    }
    assert_eq!(cases, 3);
}

/// An ONNX model as PyTorch exports it (NCHW, squeezenet 1.1) runs its
/// convolutions in NHWC (`ml/layout`), which the tensor-core kernels serve
/// only; in float16, NCHW convolutions on a map large enough take them.
#[test]
fn an_onnx_conv_model_in_float16_takes_the_tensor_core_kernels() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/onnx/torch/squeezenet1_1_dynamo/model.onnx"
    );
    let model = crate::models::load(path).unwrap();
    let built = model
        .build_with(&Context::cpu(), None, crate::ml::Precision::F16)
        .unwrap();
    let ir = &built.inner.ir;
    let mut convs = 0;
    for node in &ir.nodes {
        let layout = match &node.op {
            Op::Conv2d(o) => o.input_layout,
            Op::DepthwisePointwise(o) => o.depthwise.input_layout,
            Op::SqueezeExcite(o) => o.layout,
            _ => continue,
        };
        assert_eq!(layout, InputLayout::Nhwc, "{}", ir.describe(node));
        convs += 1;
    }
    assert!(convs >= 20, "{convs} convolutions");
    // Its maps (55 x 55 and less past the stem) leave many of its
    // convolutions short of the tensor cores' TC_MIN_WORKGROUPS
    // (ml/gpu/conv2d/choose.rs); three NCHW convolutions written as an
    // exporter writes them, on a 66 x 66 map, reach them (in the small
    // 32-channel tile: short of TC_SMALL_TILE_BELOW; 396 one-row
    // workgroups, short of TC_SPLIT_SUBGROUPS, so each row's reduction
    // split over 2 subgroups).
    let ctx = Context::cpu();
    let chain = graph(&ctx, |b| {
        let dt = DataType::Float16;
        let mut x = b.input("x", desc(dt, &[1, 64, 66, 66]))?;
        for _ in 0..3 {
            let f = zeros(b, dt, &[64, 64, 3, 3]);
            let options = Conv2dOptions {
                padding: [1; 4],
                ..Conv2dOptions::new()
            };
            x = b.relu(&b.conv2d(&x, &f, None, options)?)?;
        }
        Ok(x)
    });
    let kernels: Vec<&str> = record(&chain, TARGETS[0])
        .unwrap()
        .iter()
        .filter_map(|k| conv_kernel(&k.source))
        .collect();
    assert_eq!(kernels, ["tensor cores staged split"; 3], "{kernels:?}");
}

/// One convolution of the kernel-choice table.
#[derive(Clone, Copy)]
struct Choice {
    c: usize,
    oc: usize,
    groups: usize,
    size: usize,
    k: usize,
    stride: usize,
    dilation: usize,
    batch: usize,
    /// A nearest x2 upsample of the input, fused into the convolution.
    upsample: bool,
    /// A residual added before the activation (fused as a residual), or
    /// after it (a late residual).
    residual: bool,
    late_residual: bool,
    /// The filter a graph input instead of a constant.
    filter_input: bool,
}

impl Choice {
    const fn new(c: usize, oc: usize, groups: usize, size: usize, k: usize) -> Self {
        Choice {
            c,
            oc,
            groups,
            size,
            k,
            stride: 1,
            dilation: 1,
            batch: 1,
            upsample: false,
            residual: false,
            late_residual: false,
            filter_input: false,
        }
    }

    fn name(&self) -> String {
        let mut s = format!(
            "{}->{} g{} {}x{} k{} s{} d{} n{}",
            self.c,
            self.oc,
            self.groups,
            self.size,
            self.size,
            self.k,
            self.stride,
            self.dilation,
            self.batch
        );
        for (on, what) in [
            (self.upsample, " up"),
            (self.residual, " res"),
            (self.late_residual, " late"),
            (self.filter_input, " fin"),
        ] {
            if on {
                s += what;
            }
        }
        s
    }

    fn graph(&self, ctx: &Context, dt: DataType, layout: InputLayout) -> GraphIr {
        graph_n(ctx, |b| {
            let shape = [self.batch, self.c, self.size, self.size];
            let mut x = b.input("x", desc(dt, &nchw_shape(layout, shape)))?;
            if self.upsample {
                let axes = match layout {
                    InputLayout::Nchw => [2, 3],
                    InputLayout::Nhwc => [1, 2],
                };
                let options = Resample2dOptions {
                    scales: [2.0, 2.0],
                    axes,
                    ..Resample2dOptions::default()
                };
                x = b.resample2d(&x, options)?;
            }
            let fshape = [self.oc, self.c / self.groups, self.k, self.k];
            let f = match self.filter_input {
                true => b.input("f", desc(dt, &fshape))?,
                false => zeros(b, dt, &fshape),
            };
            let bias = zeros(b, dt, &[self.oc]);
            let pad = self.k / 2 * self.dilation;
            let options = Conv2dOptions {
                padding: [pad; 4],
                strides: [self.stride; 2],
                dilations: [self.dilation; 2],
                groups: self.groups,
                input_layout: layout,
                ..Conv2dOptions::new()
            };
            let mut y = b.conv2d(&x, &f, Some(&bias), options)?;
            if self.residual {
                let r = b.input("r", y.descriptor().clone())?;
                y = b.add(&y, &r)?;
            }
            // No activation on an upsampled input: fusion keeps the
            // upsample only where none follows a 1x1.
            if !self.upsample {
                y = b.relu(&y)?;
            }
            if self.late_residual {
                let r = b.input("r", y.descriptor().clone())?;
                y = b.add(&y, &r)?;
            }
            Ok(vec![y])
        })
    }
}

/// The shapes of the kernel-choice table: 1x1, 3x3, strided, dilated,
/// depthwise, grouped, upsampled, with residuals, few and many outputs,
/// small and large maps, a batch, a filter that is not a constant.
fn choices() -> Vec<Choice> {
    let c = Choice::new;
    vec![
        c(64, 64, 1, 32, 1),
        c(64, 128, 1, 64, 1),
        c(8, 64, 1, 64, 1),
        c(20, 64, 1, 64, 1),
        c(256, 512, 1, 96, 1),
        c(64, 64, 1, 512, 1),
        c(128, 32, 1, 16, 1),
        c(64, 64, 1, 64, 3),
        c(64, 64, 1, 8, 3),
        c(512, 512, 1, 7, 3),
        c(3, 32, 1, 96, 3),
        c(3, 64, 1, 96, 3),
        c(64, 4, 1, 32, 3),
        c(64, 4, 1, 184, 3),
        c(32, 12, 1, 96, 3),
        c(32, 12, 1, 184, 3),
        c(64, 16, 1, 184, 3),
        c(64, 32, 1, 184, 3),
        c(64, 48, 1, 64, 3),
        c(12, 3, 1, 32, 3),
        c(16, 16, 1, 16, 3),
        c(32, 32, 32, 64, 3),
        c(32, 32, 32, 64, 5),
        c(64, 64, 4, 64, 3),
        c(64, 128, 2, 64, 3),
        Choice {
            stride: 2,
            ..c(32, 64, 1, 64, 3)
        },
        c(128, 128, 1, 20, 3),
        Choice {
            stride: 2,
            ..c(128, 128, 1, 40, 3)
        },
        Choice {
            residual: true,
            ..c(64, 64, 1, 40, 3)
        },
        Choice {
            stride: 2,
            ..c(3, 64, 1, 96, 7)
        },
        Choice {
            stride: 2,
            ..c(32, 32, 32, 64, 3)
        },
        Choice {
            dilation: 2,
            ..c(64, 64, 1, 64, 3)
        },
        Choice {
            residual: true,
            ..c(64, 64, 1, 64, 3)
        },
        Choice {
            residual: true,
            ..c(64, 128, 1, 64, 1)
        },
        Choice {
            residual: true,
            ..c(32, 12, 1, 184, 3)
        },
        Choice {
            late_residual: true,
            ..c(16, 16, 16, 32, 3)
        },
        Choice {
            late_residual: true,
            ..c(64, 64, 1, 64, 3)
        },
        Choice {
            late_residual: true,
            ..c(64, 128, 1, 64, 1)
        },
        Choice {
            late_residual: true,
            ..c(16, 16, 1, 16, 3)
        },
        Choice {
            upsample: true,
            ..c(12, 3, 1, 16, 3)
        },
        Choice {
            upsample: true,
            ..c(16, 16, 1, 16, 3)
        },
        Choice {
            upsample: true,
            ..c(8, 8, 8, 16, 3)
        },
        Choice {
            upsample: true,
            ..c(64, 8, 1, 32, 1)
        },
        Choice {
            batch: 4,
            ..c(64, 64, 1, 32, 3)
        },
        Choice {
            batch: 4,
            ..c(512, 512, 1, 7, 3)
        },
        Choice {
            filter_input: true,
            ..c(64, 64, 1, 64, 3)
        },
        Choice {
            filter_input: true,
            ..c(12, 3, 1, 32, 3)
        },
    ]
}

/// The kernels conv2d chooses over a grid of shapes x layouts x float
/// types x tensor cores on and off, as `conv2d_choices.txt` lists them
/// (recorded before conv2d's choice became `conv2d/choose.rs`'s function:
/// the refactor changed no choice).
#[test]
fn conv2d_chooses_the_kernels_it_always_chose() {
    let ctx = Context::cpu();
    let mut got = Vec::new();
    for choice in choices() {
        for layout in [InputLayout::Nchw, InputLayout::Nhwc] {
            for dt in FLOATS {
                for target in TARGETS {
                    let ir = choice.graph(&ctx, dt, layout);
                    let kernels = match record(&ir, target) {
                        Ok(recorded) => recorded
                            .iter()
                            .filter(|k| k.label.starts_with("conv2d"))
                            .map(|k| match k.label.as_str() {
                                "conv2d" => conv_kernel(&k.source).unwrap_or("?"),
                                other => other,
                            })
                            .collect::<Vec<_>>()
                            .join(" + "),
                        Err(e) => format!("error: {e}"),
                    };
                    let tc = ["tc", "no tc"][usize::from(!target.f16_tensor_cores)];
                    got.push(format!("{} {layout:?} {dt} {tc}: {kernels}", choice.name()));
                }
            }
        }
    }
    assert_eq!(got.len(), choices().len() * 8);
    // A deliberate change of choice rewrites the table (as the man pages
    // are blessed); the diff then shows every case it moved.
    if std::env::var_os("WGNN_BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/ml/gpu/conv2d_choices.txt");
        std::fs::write(path, got.join("\n") + "\n").unwrap();
        return;
    }
    let want: Vec<&str> = include_str!("conv2d_choices.txt").lines().collect();
    let got: Vec<&str> = got.iter().map(String::as_str).collect();
    assert_eq!(got, want);
}
