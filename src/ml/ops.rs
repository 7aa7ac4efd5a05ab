//! Operators and their options, named and defined as in WebNN
//! (<https://www.w3.org/TR/webnn/>). A graph is a list of [`Node`]s, each one
//! [`Op`] applied to operands; both back ends (WGSL and CPU) execute these.

/// WebNN `MLInputOperandLayout`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum InputLayout {
    #[default]
    Nchw,
    Nhwc,
}

/// WebNN `MLConv2dFilterOperandLayout`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Conv2dFilterLayout {
    #[default]
    Oihw,
    Hwio,
    Ohwi,
    Ihwo,
}

/// WebNN `MLConvTranspose2dFilterOperandLayout`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConvTranspose2dFilterLayout {
    #[default]
    Iohw,
    Hwoi,
    Ohwi,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Conv2dOptions {
    /// [beginning height, ending height, beginning width, ending width].
    pub padding: [usize; 4],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub groups: usize,
    pub input_layout: InputLayout,
    pub filter_layout: Conv2dFilterLayout,
}

impl Conv2dOptions {
    pub fn new() -> Self {
        Conv2dOptions {
            padding: [0; 4],
            strides: [1, 1],
            dilations: [1, 1],
            groups: 1,
            ..Default::default()
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConvTranspose2dOptions {
    pub padding: [usize; 4],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub output_padding: [usize; 2],
    /// Explicit output [height, width]; overrides output_padding.
    pub output_sizes: Option<[usize; 2]>,
    pub groups: usize,
    pub input_layout: InputLayout,
    pub filter_layout: ConvTranspose2dFilterLayout,
}

impl ConvTranspose2dOptions {
    pub fn new() -> Self {
        ConvTranspose2dOptions {
            padding: [0; 4],
            strides: [1, 1],
            dilations: [1, 1],
            output_padding: [0, 0],
            groups: 1,
            ..Default::default()
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RoundingType {
    #[default]
    Floor,
    Ceil,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pool2dOptions {
    /// [height, width]; `None` means the whole spatial extent (global pooling).
    pub window_dimensions: Option<[usize; 2]>,
    pub padding: [usize; 4],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub layout: InputLayout,
    pub rounding_type: RoundingType,
    pub output_sizes: Option<[usize; 2]>,
    /// Average pooling divides by the whole window, padding included (ONNX
    /// `count_include_pad`); the default, false, counts only the window
    /// positions inside the input (TFLite, WebNN). A window that runs past
    /// the end padding (ceil rounding) is clipped to input + padding and
    /// divides by what is left, as onnxruntime does. Max pooling ignores it.
    pub count_include_pad: bool,
}

impl Pool2dOptions {
    pub fn new() -> Self {
        Pool2dOptions {
            strides: [1, 1],
            dilations: [1, 1],
            ..Default::default()
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PoolKind {
    #[default]
    Average,
    Max,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum InterpolationMode {
    #[default]
    NearestNeighbor,
    Linear,
}

/// How output coordinates map to input coordinates in `resample2d` (ONNX
/// Resize's `coordinate_transformation_mode`; `scale` is the output extent
/// over the input one along the axis, see [`Resample2dOptions::scales`]).
/// WebNN specifies `HalfPixel`; TFLite and TF also need `AlignCorners` and
/// `Asymmetric` (the legacy mapping of neither flag), and ONNX the other two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CoordinateTransform {
    /// x_in = (x + 0.5) / scale - 0.5.
    #[default]
    HalfPixel,
    /// x_in = x * (in - 1) / (out - 1), 0 where the output extent is 1.
    AlignCorners,
    /// x_in = x / scale.
    Asymmetric,
    /// As `HalfPixel`, but 0 where the output extent is 1 (ONNX
    /// `pytorch_half_pixel`).
    PytorchHalfPixel,
    /// x_in = (x + 0.5) / scale (ONNX `tf_half_pixel_for_nn`: TFLite's
    /// `half_pixel_centers` for nearest neighbour, with `Floor`).
    TfHalfPixelForNn,
}

/// How nearest-neighbour `resample2d` turns a source coordinate into an
/// index (ONNX Resize's `nearest_mode`); the index is then clamped to the
/// input. Unused by linear interpolation.
///
/// The default, `RoundPreferCeil`, is what resample2d always did with
/// `HalfPixel` (WebNN's nearest neighbour: index floor((x + 0.5) / scale))
/// and `AlignCorners` (TF's rounding); with `Asymmetric` it did `Floor`
/// (TF and TF.js with neither flag), which callers now ask for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NearestRounding {
    /// Round, halves down (ONNX's default `round_prefer_floor`).
    RoundPreferFloor,
    /// Round, halves up (`round_prefer_ceil`; C's `round` for the
    /// non-negative coordinates that survive clamping).
    #[default]
    RoundPreferCeil,
    Floor,
    Ceil,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Resample2dOptions {
    pub mode: InterpolationMode,
    /// Scales along `axes`, used when `sizes` is `None` (ONNX semantics):
    /// the output extent is floor(input * scale), and the coordinate mapping
    /// uses this scale as given (not output / input).
    pub scales: [f32; 2],
    /// Output extents along `axes`; when given, `scales` is ignored and the
    /// mapping's scale is output / input.
    pub sizes: Option<[usize; 2]>,
    /// The two (spatial) axes resampled; WebNN's default is [2, 3] (NCHW).
    pub axes: [usize; 2],
    pub coordinate_transform: CoordinateTransform,
    /// Nearest neighbour only; see [`NearestRounding`] for the default.
    pub nearest_rounding: NearestRounding,
}

impl Default for Resample2dOptions {
    fn default() -> Self {
        Resample2dOptions {
            mode: InterpolationMode::NearestNeighbor,
            scales: [1.0, 1.0],
            sizes: None,
            axes: [2, 3],
            coordinate_transform: CoordinateTransform::HalfPixel,
            nearest_rounding: NearestRounding::default(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PaddingMode {
    #[default]
    Constant,
    Edge,
    Reflection,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    /// Float only: C's `powf` (a negative base with an integral exponent
    /// gives the signed result, with any other exponent NaN).
    Pow,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Pow => "pow",
        }
    }
}

/// WebNN's element-wise comparisons: numpy broadcasting, uint8 0/1 out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Equal,
    Greater,
    GreaterOrEqual,
    Lesser,
    LesserOrEqual,
}

impl CompareOp {
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Equal => "equal",
            CompareOp::Greater => "greater",
            CompareOp::GreaterOrEqual => "greaterOrEqual",
            CompareOp::Lesser => "lesser",
            CompareOp::LesserOrEqual => "lesserOrEqual",
        }
    }
}

/// Element-wise unary functions. These are also what gets fused into the
/// producing conv/matmul/element-wise kernel (its epilogue). `Abs` and `Neg`
/// also run on int32 tensors (as nodes of their own; only float values take
/// epilogues).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    Relu,
    Clamp {
        min: f32,
        max: f32,
    },
    Sigmoid,
    Tanh,
    LeakyRelu {
        alpha: f32,
    },
    HardSwish,
    HardSigmoid {
        alpha: f32,
        beta: f32,
    },
    /// y = x * a + b (used to fuse scalar mul/add constants).
    Linear {
        alpha: f32,
        beta: f32,
    },
    Abs,
    Neg,
    Exp,
    /// NaN below 0, -inf at 0 (as C's `logf`).
    Log,
    /// NaN below 0.
    Sqrt,
    Reciprocal,
    Erf,
    /// x above 0, alpha * (e^x - 1) otherwise.
    Elu {
        alpha: f32,
    },
    /// ln(1 + e^x), computed so that it neither overflows nor loses the
    /// small values of very negative x.
    Softplus,
    /// x * sigmoid(x) (SiLU, swish): made by `ml::fuse` from the
    /// exporters' sigmoid -> mul.
    Silu,
    /// WebNN `gelu`: x * (1 + erf(x / sqrt 2)) / 2.
    Gelu,
    /// GELU's tanh approximation (ONNX Gelu's `approximate="tanh"`):
    /// x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2.
    GeluTanh,
    /// x * tanh(softplus(x)).
    Mish,
    /// cos(x), x in radians.
    Cos,
    /// sin(x), x in radians.
    Sin,
    /// The least integer at or above x.
    Ceil,
    /// The greatest integer at or below x.
    Floor,
    /// x quantized and dequantized again (an int8 model's QuantizeLinear ->
    /// DequantizeLinear pair): `(clamp(round_half_even(x * inv_scale) +
    /// zero, lo, hi) - zero) * scale`.
    FakeQuantize {
        inv_scale: f32,
        scale: f32,
        zero: f32,
        lo: f32,
        hi: f32,
    },
}

/// GELU's tanh approximation's constants: sqrt(2 / pi) and the cube's
/// coefficient.
pub(crate) const GELU_TANH_SCALE: f64 = 0.797_884_560_802_865_4;
pub(crate) const GELU_TANH_CUBE: f64 = 0.044_715;

impl Activation {
    pub fn name(&self) -> &'static str {
        match self {
            Activation::Relu => "relu",
            Activation::Clamp { .. } => "clamp",
            Activation::Sigmoid => "sigmoid",
            Activation::Tanh => "tanh",
            Activation::LeakyRelu { .. } => "leakyRelu",
            Activation::HardSwish => "hardSwish",
            Activation::HardSigmoid { .. } => "hardSigmoid",
            Activation::Linear { .. } => "linear",
            Activation::Abs => "abs",
            Activation::Neg => "neg",
            Activation::Exp => "exp",
            Activation::Log => "log",
            Activation::Sqrt => "sqrt",
            Activation::Reciprocal => "reciprocal",
            Activation::Erf => "erf",
            Activation::Elu { .. } => "elu",
            Activation::Softplus => "softplus",
            Activation::Silu => "silu",
            Activation::Gelu => "gelu",
            Activation::GeluTanh => "geluTanh",
            Activation::Mish => "mish",
            Activation::FakeQuantize { .. } => "fakeQuantize",
            Activation::Cos => "cos",
            Activation::Sin => "sin",
            Activation::Ceil => "ceil",
            Activation::Floor => "floor",
        }
    }

    /// The reference definition, used by the CPU back end.
    pub fn apply(&self, x: f32) -> f32 {
        match *self {
            Activation::Relu => x.max(0.0),
            Activation::Clamp { min, max } => x.max(min).min(max),
            Activation::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Activation::Tanh => x.tanh(),
            Activation::LeakyRelu { alpha } => {
                if x >= 0.0 {
                    x
                } else {
                    alpha * x
                }
            }
            Activation::HardSwish => x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
            Activation::HardSigmoid { alpha, beta } => (alpha * x + beta).clamp(0.0, 1.0),
            Activation::Linear { alpha, beta } => x * alpha + beta,
            Activation::Abs => x.abs(),
            Activation::Neg => -x,
            Activation::Exp => x.exp(),
            Activation::Log => x.ln(),
            Activation::Sqrt => x.sqrt(),
            Activation::Reciprocal => 1.0 / x,
            // In double precision, so the reference is exact to f32.
            Activation::Erf => libm::erf(f64::from(x)) as f32,
            Activation::Elu { alpha } => {
                if x > 0.0 {
                    x
                } else {
                    alpha * x.exp_m1()
                }
            }
            // ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|): no overflow for large
            // x, and e^x itself (not 0) for very negative x.
            Activation::Softplus => {
                if x > 20.0 {
                    x
                } else {
                    x.max(0.0) + (-x.abs()).exp().ln_1p()
                }
            }
            Activation::Silu => x * Activation::Sigmoid.apply(x),
            // In double precision, as erf.
            Activation::Gelu => {
                let x = f64::from(x);
                (0.5 * x * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2))) as f32
            }
            Activation::GeluTanh => {
                let x = f64::from(x);
                let inner = GELU_TANH_SCALE * (x + GELU_TANH_CUBE * x * x * x);
                (0.5 * x * (1.0 + inner.tanh())) as f32
            }
            Activation::Mish => x * Activation::Softplus.apply(x).tanh(),
            Activation::Cos => x.cos(),
            Activation::Sin => x.sin(),
            Activation::Ceil => x.ceil(),
            Activation::Floor => x.floor(),
            Activation::FakeQuantize {
                inv_scale,
                scale,
                zero,
                lo,
                hi,
            } => (((x * inv_scale).round_ties_even() + zero).clamp(lo, hi) - zero) * scale,
        }
    }

    /// Whether the function is defined on int32 tensors too.
    pub fn takes_int(&self) -> bool {
        matches!(self, Activation::Abs | Activation::Neg)
    }

    /// The int32 form of [`Activation::takes_int`] functions (wrapping, as
    /// WGSL does at i32::MIN).
    pub fn apply_i32(&self, x: i32) -> i32 {
        match self {
            Activation::Abs => x.wrapping_abs(),
            Activation::Neg => x.wrapping_neg(),
            other => unreachable!("{} is float-only (checked at build)", other.name()),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct GemmOptions {
    pub alpha: f32,
    pub beta: f32,
    pub a_transpose: bool,
    pub b_transpose: bool,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            alpha: 1.0,
            beta: 1.0,
            a_transpose: false,
            b_transpose: false,
        }
    }
}

/// The reductions of `Op::Reduce` (WebNN `reduceMean`, `reduceSum`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    Mean,
    Sum,
    Max,
    Min,
    Product,
    SumSquare,
    /// sqrt(sum(x^2)).
    L2,
    /// log(sum(exp(x))), computed as max + log(sum(exp(x - max))).
    LogSumExp,
}

impl ReduceKind {
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Mean => "reduceMean",
            ReduceKind::Sum => "reduceSum",
            ReduceKind::Max => "reduceMax",
            ReduceKind::Min => "reduceMin",
            ReduceKind::Product => "reduceProduct",
            ReduceKind::SumSquare => "reduceSumSquare",
            ReduceKind::L2 => "reduceL2",
            ReduceKind::LogSumExp => "reduceLogSumExp",
        }
    }

    /// Whether int32 operands are accepted (the others are float-only).
    pub fn takes_int32(self) -> bool {
        matches!(
            self,
            ReduceKind::Sum | ReduceKind::Max | ReduceKind::Min | ReduceKind::Product
        )
    }
}

/// One operator with its resolved options. Operands are referred to by the
/// node's `inputs` list, in the order given for each variant.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// inputs: [input, filter, bias?]
    Conv2d(Conv2dOptions),
    /// inputs: [input, filter, bias?]
    ConvTranspose2d(ConvTranspose2dOptions),
    /// inputs: [input]
    Pool2d(PoolKind, Pool2dOptions),
    /// inputs: [input]; axes sorted, unique. Each output element reduces
    /// the input elements along `axes` (with no axes, each element alone).
    Reduce {
        kind: ReduceKind,
        axes: Vec<usize>,
        keep_dimensions: bool,
    },
    /// inputs: [input]
    Resample2d(Resample2dOptions),
    /// inputs: all concatenated operands
    Concat { axis: usize },
    /// inputs: [input]; output shape is the node's output descriptor.
    Reshape,
    /// inputs: [input]
    Transpose { permutation: Vec<usize> },
    /// inputs: [input]
    Slice {
        starts: Vec<usize>,
        sizes: Vec<usize>,
        strides: Vec<usize>,
    },
    /// inputs: [input]
    Pad {
        beginning: Vec<usize>,
        ending: Vec<usize>,
        mode: PaddingMode,
        value: f32,
    },
    /// inputs: [input]; one output per size.
    Split { sizes: Vec<usize>, axis: usize },
    /// inputs: [a, b], broadcast numpy-style.
    Binary(BinaryOp),
    /// inputs: [input]
    Unary(Activation),
    /// inputs: [input, slope], slope broadcast to input.
    Prelu,
    /// inputs: [input]
    Softmax { axis: usize },
    /// inputs: [a, b], batched over leading dimensions with broadcasting.
    Matmul,
    /// inputs: [a, b, c?]
    Gemm(GemmOptions),
    /// inputs: [input]; output type is the node's output descriptor.
    Cast,
    /// inputs: [a, b], broadcast numpy-style; output uint8 0/1.
    Compare(CompareOp),
    /// inputs: [input] (uint8); output uint8: 1 where the input is 0.
    LogicalNot,
    /// inputs: [condition (uint8), true value, false value], broadcast
    /// numpy-style, three ways.
    Where,
    /// inputs: [input]; a copy.
    Identity,
    /// inputs: [input]; output int32: the index along `axis` of the first
    /// (or, with `select_last_index`, the last) largest or smallest value.
    ArgMinMax {
        max: bool,
        axis: usize,
        keep_dimensions: bool,
        select_last_index: bool,
    },
    /// inputs: [input, indices (int32)]; indices out of range are clamped.
    Gather { axis: usize },
    /// inputs: [input]; output shape is the node's output descriptor, to
    /// which the input broadcasts (numpy rules, unidirectionally).
    Expand,
    /// inputs: [input]; output extent = input extent x repetitions.
    Tile { repetitions: Vec<usize> },
    /// inputs: [input, mean, variance], the last two broadcast (numpy rules)
    /// to the input: y = (x - mean) / sqrt(variance + epsilon). The core of
    /// the three normalizations; their scale and bias are mul and add nodes.
    BatchNormalization { epsilon: f32 },
    /// Never written by the builder: `ml::fuse` makes it from a global
    /// average pool (or reduceMean over the spatial axes) and the one or two
    /// 1x1 convolutions that read it alone, squeeze-and-excitation's gate.
    /// inputs: [input, then per layer its filter and bias if any]; output:
    /// the last layer's, one value per image and output channel.
    SqueezeExcite(SqueezeExciteOptions),
    /// Never written by the builder: `ml::fuse` makes it from a depthwise
    /// conv2d whose result only a 1x1 conv2d reads. inputs: [input,
    /// depthwise filter, its bias?, pointwise filter, its bias?]; a fused
    /// input scale applies to the input, a residual and the node's
    /// activations to the pointwise result.
    DepthwisePointwise(DepthwisePointwiseOptions),
    /// inputs: [input, bias?]: a conv2d computing in int8, its filter in
    /// the options (`ml/quant_conv.rs`).
    QuantConv2d(super::quant_conv::QuantConv2dOptions),
}

/// A fused depthwise + pointwise conv2d pair (`Op::DepthwisePointwise`).
#[derive(Clone, Debug, PartialEq)]
pub struct DepthwisePointwiseOptions {
    /// The depthwise conv2d's (groups = input channels); its layout is the
    /// input's and the output's.
    pub depthwise: Conv2dOptions,
    pub depthwise_bias: bool,
    /// Applied to the depthwise result as the pointwise conv reads it.
    pub depthwise_activations: Vec<Activation>,
    pub pointwise_filter_layout: Conv2dFilterLayout,
    pub pointwise_bias: bool,
}

/// The layers of a fused squeeze-and-excitation node (`Op::SqueezeExcite`).
#[derive(Clone, Debug, PartialEq)]
pub struct SqueezeExciteOptions {
    /// The layout of the input and of the output ([n, 1, 1, c] or [n, c, 1, 1]).
    pub layout: InputLayout,
    /// One or two fully connected layers, in order.
    pub layers: Vec<SqueezeExciteLayer>,
}

/// One 1x1 convolution of a fused squeeze-and-excitation node.
#[derive(Clone, Debug, PartialEq)]
pub struct SqueezeExciteLayer {
    pub filter_layout: Conv2dFilterLayout,
    pub bias: bool,
    /// Applied to this layer's result; the node's own activations follow
    /// the last layer's.
    pub activations: Vec<Activation>,
}

/// The most channels a fused squeeze-and-excitation node takes at any layer:
/// its GPU kernel holds each layer's input in workgroup memory.
pub(crate) const SQUEEZE_EXCITE_MAX_CHANNELS: usize = 1024;

impl Conv2dFilterLayout {
    /// Element strides of (output channel, input channel) in a 1x1 filter
    /// of `o` outputs and `i` inputs stored in this layout.
    pub(crate) fn pointwise_strides(self, o: usize, i: usize) -> [usize; 2] {
        match self {
            Conv2dFilterLayout::Oihw | Conv2dFilterLayout::Ohwi => [i, 1],
            Conv2dFilterLayout::Hwio | Conv2dFilterLayout::Ihwo => [1, o],
        }
    }
}

impl Op {
    /// WebNN's name for the operator, used in error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Conv2d(_) => "conv2d",
            Op::ConvTranspose2d(_) => "convTranspose2d",
            Op::Pool2d(PoolKind::Average, _) => "averagePool2d",
            Op::Pool2d(PoolKind::Max, _) => "maxPool2d",
            Op::Reduce { kind, .. } => kind.name(),
            Op::Resample2d(_) => "resample2d",
            Op::Concat { .. } => "concat",
            Op::Reshape => "reshape",
            Op::Transpose { .. } => "transpose",
            Op::Slice { .. } => "slice",
            Op::Pad { .. } => "pad",
            Op::Split { .. } => "split",
            Op::Binary(b) => b.name(),
            Op::Unary(a) => a.name(),
            Op::Prelu => "prelu",
            Op::Softmax { .. } => "softmax",
            Op::Matmul => "matmul",
            Op::Gemm(_) => "gemm",
            Op::Cast => "cast",
            Op::Compare(c) => c.name(),
            Op::LogicalNot => "logicalNot",
            Op::Where => "where",
            Op::Identity => "identity",
            Op::ArgMinMax { max: true, .. } => "argMax",
            Op::ArgMinMax { max: false, .. } => "argMin",
            Op::Gather { .. } => "gather",
            Op::Expand => "expand",
            Op::Tile { .. } => "tile",
            Op::BatchNormalization { .. } => "batchNormalization",
            Op::SqueezeExcite(_) => "squeezeExcite",
            Op::DepthwisePointwise(_) => "depthwisePointwise",
            Op::QuantConv2d(_) => "quantConv2d",
        }
    }
}
