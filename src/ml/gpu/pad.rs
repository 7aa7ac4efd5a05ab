//! pad: constant, edge and reflection modes.

use super::lower::{grid, Kernel, Lowering};
use super::slice::refuse_uint8;
use crate::error::Result;
use crate::ml::graph_ir::Node;
use crate::ml::ops::PaddingMode;
use crate::ml::types::{strides, DataType};

const WG: u32 = 256;

pub(super) fn pad(
    l: &mut Lowering,
    node: &Node,
    beginning: &[usize],
    mode: PaddingMode,
    value: f32,
) -> Result<()> {
    let (x, y) = (node.inputs[0], node.outputs[0]);
    refuse_uint8(l, x, "pad")?;
    let input = l.ir.desc(x).clone();
    let out = l.ir.desc(y).clone();
    let n = out.element_count();
    let int = out.data_type == DataType::Int32;
    // The CPU reference converts the value with `as i32` (saturating).
    let bits = if int {
        (value as i32) as u32
    } else {
        value.to_bits()
    };
    let mode_id = match mode {
        PaddingMode::Constant => 0u32,
        PaddingMode::Edge => 1,
        PaddingMode::Reflection => 2,
    };
    let mut params = vec![n as u32, out.rank() as u32, mode_id, bits];
    params.extend(out.shape.iter().map(|&d| d as u32));
    params.extend(input.shape.iter().map(|&d| d as u32));
    params.extend(strides(&input.shape).iter().map(|&s| s as u32));
    params.extend(beginning.iter().map(|&b| b as u32));
    let fill = if int {
        "fn fill() -> T { return bitcast<i32>(params[3]); }\n"
    } else {
        "fn fill() -> T { return T(bitcast<f32>(params[3])); }\n"
    };
    let source = format!("{fill}{}", include_str!("pad.wgsl"));
    l.kernel(Kernel {
        label: "pad".into(),
        source: &source,
        output_type: out.data_type,
        input_type: out.data_type,
        activations: &[],
        params,
        inputs: vec![x],
        outputs: vec![y],
        workgroups: grid(n, WG),
        workgroup_size: WG,
    })
}
