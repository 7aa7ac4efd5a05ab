//! matmul (batched, batch dimensions broadcast) and the kernels it shares
//! with gemm: tiled (matmul.wgsl), or for up to 4 rows (a classifier's
//! single row), or up to 32 whose tiles would not fill a large GPU (a
//! batch of classifier rows), K split over a workgroup (matvec.wgsl);
//! [`ProductKernel::choose`] picks. A tensor-core kernel that staged A and B
//! through workgroup memory for one subgroup a 64 x 64 tile was measured
//! and not kept: on an H200 it took 0.039 ms for YOLO11's attention
//! product (2 x 400x64 by 64x400) and 0.221 ms for a ViT MLP's (197x768 by
//! 768x3072) in float16, against 0.017 and 0.096 for this tiled kernel in
//! float32 (`wgnn-bench ops --filter matmul`).

use super::lower::{axes, kernel_params, Kernel, Lowering, MAX_RANK};
use crate::error::Result;
use crate::gpu::Specialization;
use crate::ml::graph_ir::{Node, OperandId};
use crate::ml::types::strides;

const TILE: usize = 32;
/// Rows up to which a product takes matvec.wgsl (4 a workgroup).
const MATVEC_ROWS: usize = 4;
/// Rows up to which a product takes matvec.wgsl where the tiled kernel
/// would fill fewer than [`TILED_MIN_WORKGROUPS`] workgroups (reading B
/// once per 4 rows, 8 times at most): ResNet-50's classifier at batch 32
/// (gemm 32x2048 -> 32x1000, 32 tiles each walking K = 2048) took 175 us
/// in float16 on an H200 (2026-11-30 00:33 call) to read 4 MB.
const MATVEC_MAX_ROWS: usize = 32;
/// Half a workgroup a multiprocessor of a large GPU.
const TILED_MIN_WORKGROUPS: usize = 66;

/// Which kernel computes a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ProductKernel {
    /// matvec.wgsl: K split over a workgroup; `along_k` where B's columns
    /// are contiguous along K (4 columns a workgroup, else 64).
    Matvec { along_k: bool },
    /// matmul.wgsl: 32 x 32 tiles of scalar sums.
    Tiled,
}

impl ProductKernel {
    /// The kernel for `batches` products of `m` rows by `n` columns whose
    /// B has strides `b_strides` (row, column).
    pub(super) fn choose(
        (batches, m, n): (usize, usize, usize),
        b_strides: (usize, usize),
    ) -> ProductKernel {
        let tiles = batches * m.div_ceil(TILE) * n.div_ceil(TILE);
        if m <= MATVEC_ROWS || (m <= MATVEC_MAX_ROWS && tiles < TILED_MIN_WORKGROUPS) {
            return ProductKernel::Matvec {
                along_k: b_strides.0 == 1 && b_strides.1 != 1,
            };
        }
        ProductKernel::Tiled
    }
}

kernel_params! {
    /// `struct Params` of matmul.wgsl.
    #[repr(C)]
    #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
    struct Params {
        m: u32,
        n: u32,
        k: u32,
        batch_rank: u32,
        a_strides: [u32; 2],
        b_strides: [u32; 2],
        c_strides: [u32; 2],
        alpha: f32,
        beta: f32,
        batch: [[u32; 4]; MAX_RANK],
    }
}

/// How the tiled kernel reads its operands: A(i, p) = a[i * rs + p * cs],
/// B(p, j) = b[p * rs + j * cs], and an optional `beta * c` broadcast to
/// [M, N] with strides (c_rs, c_cs).
pub(super) struct Product<'a> {
    pub label: &'static str,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: (OperandId, usize, usize),
    pub b: (OperandId, usize, usize),
    pub c: Option<(OperandId, usize, usize)>,
    pub alpha: f32,
    pub beta: f32,
    /// Output batch shape and each operand's batch strides (0 = broadcast).
    pub batch: (Vec<usize>, Vec<usize>, Vec<usize>),
    pub node: &'a Node,
}

pub(super) fn product(l: &mut Lowering, p: Product<'_>) -> Result<()> {
    let y = p.node.outputs[0];
    let dt = l.ir.desc(y).data_type;
    let (shape, sa, sb) = &p.batch;
    let (c_rs, c_cs) = p.c.map_or((0, 0), |(_, rs, cs)| (rs, cs));
    let (batch_rank, batch) = axes(p.label, shape, &[sa, sb])?;
    let params = Params {
        m: p.m as u32,
        n: p.n as u32,
        k: p.k as u32,
        batch_rank,
        a_strides: [p.a.1 as u32, p.a.2 as u32],
        b_strides: [p.b.1 as u32, p.b.2 as u32],
        c_strides: [c_rs as u32, c_cs as u32],
        alpha: p.alpha,
        beta: p.beta,
        batch,
    };
    let mut inputs = vec![p.a.0, p.b.0];
    let bindings = match p.c {
        Some((c, _, _)) => {
            inputs.push(c);
            "@group(0) @binding(3) var<storage, read> c: array<TI>;\n\
             @group(0) @binding(4) var<storage, read_write> y: array<T>;\n\
             fn bias(i: u32, j: u32) -> f32 {\n    \
             return params.beta * f32(c[i * params.c_strides.x + j * params.c_strides.y]);\n}\n"
        }
        None => {
            "@group(0) @binding(3) var<storage, read_write> y: array<T>;\n\
             fn bias(i: u32, j: u32) -> f32 { return 0.0; }\n"
        }
    };
    let batches: usize = shape.iter().product();
    let params_wgsl = include_str!("matmul_params.wgsl");
    let kernel = ProductKernel::choose((batches, p.m, p.n), (p.b.1, p.b.2));
    let spec = Specialization::new();
    let (source, spec, workgroups) = match kernel {
        ProductKernel::Matvec { along_k } => (
            format!("{params_wgsl}{}", include_str!("matvec.wgsl")),
            spec.bool("ALONG_K", along_k).code(bindings),
            [
                p.n.div_ceil(if along_k { 4 } else { 64 }) as u32,
                p.m.div_ceil(MATVEC_ROWS) as u32,
                batches as u32,
            ],
        ),
        ProductKernel::Tiled => (
            format!("{params_wgsl}{}", include_str!("matmul.wgsl")),
            spec.code(bindings),
            [
                p.n.div_ceil(TILE) as u32,
                p.m.div_ceil(TILE) as u32,
                batches as u32,
            ],
        ),
    };
    l.kernel(Kernel {
        label: p.label.into(),
        source: &source,
        spec,
        output_type: dt,
        input_type: dt,
        activations: &p.node.activations,
        params: Kernel::params(&params),
        table: None,
        inputs,
        outputs: vec![y],
        workgroups,
        workgroup_size: 256,
    })
}

/// Strides of `shape` (an operand's leading dimensions) broadcast to
/// `target`, 0 along repeated axes.
pub(super) fn broadcast_strides(shape: &[usize], target: &[usize]) -> Vec<usize> {
    broadcast_with(shape, &strides(shape), target)
}

/// [`broadcast_strides`] of an operand whose own axes step by `own`.
pub(super) fn broadcast_with(shape: &[usize], own: &[usize], target: &[usize]) -> Vec<usize> {
    let off = target.len() - shape.len();
    (0..target.len())
        .map(|i| {
            if i < off || shape[i - off] == 1 {
                0
            } else {
                own[i - off]
            }
        })
        .collect()
}

pub(super) fn matmul(l: &mut Lowering, node: &Node) -> Result<()> {
    let (a, b, y) = (node.inputs[0], node.inputs[1], node.outputs[0]);
    let (da, db, out) = (l.ir.desc(a), l.ir.desc(b), l.ir.desc(y));
    let r = out.rank();
    let (m, n) = (out.shape[r - 2], out.shape[r - 1]);
    let k = da.shape[da.rank() - 1];
    let batch = out.shape[..r - 2].to_vec();
    // Batch strides count whole matrices; the kernel wants elements.
    let sa: Vec<usize> = broadcast_strides(&da.shape[..da.rank() - 2], &batch)
        .iter()
        .map(|s| s * m * k)
        .collect();
    let sb: Vec<usize> = broadcast_strides(&db.shape[..db.rank() - 2], &batch)
        .iter()
        .map(|s| s * k * n)
        .collect();
    product(
        l,
        Product {
            label: "matmul",
            m,
            n,
            k,
            a: (a, k, 1),
            b: (b, n, 1),
            c: None,
            alpha: 1.0,
            beta: 0.0,
            batch: (batch, sa, sb),
            node,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::{ProductKernel, MATVEC_ROWS};

    #[test]
    fn few_rows_take_matvec_and_the_rest_the_tiled_kernel() {
        use ProductKernel::*;
        // A classifier's row: B along K (a linear layer's [N][K] weight) or
        // not.
        assert_eq!(
            ProductKernel::choose((1, 1, 1000), (1, 2048)),
            Matvec { along_k: true }
        );
        assert_eq!(
            ProductKernel::choose((1, MATVEC_ROWS, 1000), (1000, 1)),
            Matvec { along_k: false }
        );
        // A batch of 32 rows over 32 tiles (ResNet-50's classifier at batch
        // 32), but not where the tiles fill the GPU or past 32 rows.
        assert_eq!(
            ProductKernel::choose((1, 32, 1000), (1, 2048)),
            Matvec { along_k: true }
        );
        assert_eq!(ProductKernel::choose((1, 32, 4096), (1, 2048)), Tiled);
        assert_eq!(ProductKernel::choose((1, 33, 64), (1, 2048)), Tiled);
        assert_eq!(ProductKernel::choose((1, 400, 400), (400, 1)), Tiled);
        // Batches count: YOLO11's attention heads (2 x 400x64 by 64x400).
        assert_eq!(ProductKernel::choose((2, 400, 400), (400, 1)), Tiled);
    }
}
