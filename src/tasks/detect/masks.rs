//! Segment masks: each kept object's mask coefficients x the prototypes,
//! bilinearly upsampled, thresholded at 0.5 and cropped to its box, as
//! Ultralytics' `process_mask` (upsample=True) does, computed straight at
//! the frame pixels of the object's box. On the GPU one pass over the
//! model's rented prototypes writes one bit per pixel (`masks.wgsl`); only
//! those bits are read back. On the CPU the same formulas run here.

use crate::error::{Error, Result};
use crate::gpu::{Checks, Gpu, Specialization, TransferStats};
use crate::ml::DataType;
pub(crate) use crate::tasks::mask::Mask;
use crate::tasks::objects::Rect;
use crate::video::TensorBuffer;

use super::post::ToFrame;

/// One object's mask to make: its coefficients, its box in model input
/// pixels and the region of the frame it covers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MaskJob {
    pub coefs: Vec<f32>,
    pub box_in: [f32; 4],
    /// x, y, width, height in frame pixels.
    pub region: [u32; 4],
}

impl MaskJob {
    /// The job for a detection whose clamped frame box is `rect`, from the
    /// candidate's corners (model input pixels) and coefficients.
    pub fn new(rect: &Rect, box_in: [f32; 4], coefs: Vec<f32>) -> MaskJob {
        let x0 = rect.x.floor().max(0.0) as u32;
        let y0 = rect.y.floor().max(0.0) as u32;
        let x1 = (rect.x + rect.w).ceil().max(0.0) as u32;
        let y1 = (rect.y + rect.h).ceil().max(0.0) as u32;
        MaskJob {
            coefs,
            box_in,
            region: [x0, y0, x1.saturating_sub(x0), y1.saturating_sub(y0)],
        }
    }

    fn pixels(&self) -> usize {
        (self.region[2] * self.region[3]) as usize
    }

    fn mask(&self, bit: impl Fn(usize) -> bool) -> Mask {
        let [x, y, width, height] = self.region;
        Mask {
            x,
            y,
            width,
            height,
            bits: (0..self.pixels()).map(bit).collect(),
        }
    }
}

/// The prototypes as the spec found them: (channels, height, width) and
/// the model input size they cover.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ProtoGrid {
    pub dims: [usize; 3],
    pub input: [f32; 2],
}

fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}

/// PyTorch's bilinear source for align_corners=False: the two cells and
/// the weight of the second.
fn source(u: f32, cells: usize, size: f32) -> (usize, usize, f32) {
    let s = (u * cells as f32 / size - 0.5).max(0.0);
    let i0 = (s.floor() as usize).min(cells - 1);
    let i1 = (i0 + 1).min(cells - 1);
    (i0, i1, s - i0 as f32)
}

/// CPU: the masks of `jobs` from the prototypes' values.
pub(crate) fn masks_cpu(
    protos: &[f32],
    grid: ProtoGrid,
    to_frame: &ToFrame,
    jobs: &[MaskJob],
) -> Vec<Mask> {
    let [channels, ph, pw] = grid.dims;
    let plane = ph * pw;
    jobs.iter()
        .map(|job| {
            let logit = |cell: usize| -> f32 {
                let mut sum = 0.0;
                for c in 0..channels {
                    sum += job.coefs[c] * protos.get(c * plane + cell).copied().unwrap_or(0.0);
                }
                sum
            };
            let [rx, ry, rw, _] = job.region;
            job.mask(|k| {
                let (px, py) = (rx + k as u32 % rw, ry + k as u32 / rw);
                let u = (px as f32 + 0.5 - to_frame.offset[0]) / to_frame.scale[0];
                let v = (py as f32 + 0.5 - to_frame.offset[1]) / to_frame.scale[1];
                let [bx0, by0, bx1, by1] = job.box_in;
                let (r, q) = (u - 0.5, v - 0.5);
                if r < bx0 || r >= bx1 || q < by0 || q >= by1 {
                    return false;
                }
                let (x0, x1, lx) = source(u, pw, grid.input[0]);
                let (y0, y1, ly) = source(v, ph, grid.input[1]);
                let top = logit(y0 * pw + x0) * (1.0 - lx) + logit(y0 * pw + x1) * lx;
                let bottom = logit(y1 * pw + x0) * (1.0 - lx) + logit(y1 * pw + x1) * lx;
                top * (1.0 - ly) + bottom * ly > 0.0
            })
        })
        .collect()
}

/// `Params` of masks.wgsl, field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct MaskParams {
    scale: [f32; 2],
    offset: [f32; 2],
    input_size: [f32; 2],
    channels: u32,
    proto_h: u32,
    proto_w: u32,
    jobs: u32,
    _pad: [u32; 2],
}

/// `Job` of masks.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct JobRecord {
    box_in: [f32; 4],
    region: [u32; 4],
    word: u32,
    _pad: [u32; 3],
}

/// The GPU mask pass for prototypes of one element type.
pub(crate) struct GpuMasks {
    gpu: Gpu,
    pipeline: crate::gpu::live::ComputePipeline,
}

impl GpuMasks {
    pub fn new(gpu: &Gpu, protos: DataType) -> Result<GpuMasks> {
        let f16 = protos == DataType::Float16;
        let enables: &[&str] = if f16 { &["f16"] } else { &[] };
        let source = Specialization::new()
            .alias("proto_t", if f16 { "f16" } else { "f32" })
            .module(enables, include_str!("masks.wgsl"));
        let pipeline = gpu.compute_pipeline("wgnn detect masks", &source, Checks::All)?;
        Ok(GpuMasks {
            gpu: gpu.clone(),
            pipeline,
        })
    }

    /// The masks of `jobs` from the prototypes on the GPU; what moved is
    /// the jobs' small tables up and the masks' bits down.
    pub fn run(
        &self,
        protos: TensorBuffer<'_>,
        grid: ProtoGrid,
        to_frame: &ToFrame,
        jobs: &[MaskJob],
    ) -> Result<(Vec<Mask>, TransferStats)> {
        let mut stats = TransferStats::default();
        let jobs: Vec<&MaskJob> = jobs.iter().collect();
        if jobs.is_empty() {
            return Ok((Vec::new(), stats));
        }
        let gpu = &self.gpu;
        let [channels, ph, pw] = grid.dims;
        let mut records = Vec::with_capacity(jobs.len());
        let mut coefs = Vec::with_capacity(jobs.len() * channels);
        let mut words = 0u32;
        let mut most = 0u32;
        for job in &jobs {
            let n = job.pixels().div_ceil(32) as u32;
            records.push(JobRecord {
                box_in: job.box_in,
                region: job.region,
                word: words,
                _pad: [0; 3],
            });
            coefs.extend((0..channels).map(|c| job.coefs.get(c).copied().unwrap_or(0.0)));
            words += n;
            most = most.max(n);
        }
        let params = MaskParams {
            scale: to_frame.scale,
            offset: to_frame.offset,
            input_size: grid.input,
            channels: channels as u32,
            proto_h: ph as u32,
            proto_w: pw as u32,
            jobs: jobs.len() as u32,
            _pad: [0; 2],
        };
        let groups = most.div_ceil(64);
        let limit = gpu.limits().max_compute_workgroups_per_dimension;
        if groups > limit || jobs.len() as u32 > limit {
            return Err(Error::invalid(format!(
                "detect: {} masks of up to {} pixels need more workgroups than the device's \
                 limit of {limit}",
                jobs.len(),
                most * 32
            )));
        }
        let upload =
            |label: &str, bytes: &[u8], usage| gpu.create_buffer_with_data(label, bytes, usage);
        let params = upload(
            "wgnn detect mask params",
            bytemuck::bytes_of(&params),
            wgpu::BufferUsages::UNIFORM,
        )?;
        let table = upload(
            "wgnn detect mask jobs",
            bytemuck::cast_slice(&records),
            wgpu::BufferUsages::STORAGE,
        )?;
        let coefs_buffer = upload(
            "wgnn detect mask coefficients",
            bytemuck::cast_slice(&coefs),
            wgpu::BufferUsages::STORAGE,
        )?;
        stats.uploads += 3;
        stats.upload_bytes += (size_of::<MaskParams>()
            + records.len() * size_of::<JobRecord>()
            + coefs.len() * 4) as u64;
        let out_bytes = u64::from(words.max(1)) * 4;
        let out = gpu.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgnn detect mask bits"),
            size: out_bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })?;
        let bind = gpu.scoped("detect masks binding", || {
            gpu.device().create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("wgnn detect masks"),
                layout: &self.pipeline.get_bind_group_layout(0),
                entries: &[
                    entry(0, protos.buffer()),
                    entry(1, &table),
                    entry(2, &coefs_buffer),
                    entry(3, &out),
                    entry(4, &params),
                ],
            })
        })?;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        gpu.scoped("detect masks pass", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgnn detect masks"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups(groups.max(1), jobs.len() as u32, 1);
        })?;
        gpu.submit("detect masks submit", [encoder.finish()])?;
        let bytes = gpu.download_buffer(&out, 0, out_bytes)?.wait()?;
        stats.downloads += 1;
        stats.download_bytes += out_bytes;
        let bits: Vec<u32> = bytemuck::pod_collect_to_vec(&bytes);
        let masks = jobs
            .iter()
            .zip(&records)
            .map(|(job, r)| {
                job.mask(|k| {
                    let word = bits.get(r.word as usize + k / 32).copied().unwrap_or(0);
                    word >> (k % 32) & 1 == 1
                })
            })
            .collect();
        Ok((masks, stats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_is_the_upsampled_logit_inside_the_box() {
        // One channel on a 2 x 2 grid over a 4 x 4 input: logits -1, 1 on
        // top, 1, -1 below; the frame is the input.
        let grid = ProtoGrid {
            dims: [1, 2, 2],
            input: [4.0, 4.0],
        };
        let to_frame = ToFrame::new(crate::video::Resize::Stretch, (4, 4), (4, 4));
        let full = MaskJob::new(
            &Rect::new(0.0, 0.0, 4.0, 4.0),
            [0.0, 0.0, 4.0, 4.0],
            vec![1.0],
        );
        let m = &masks_cpu(&[-1.0, 1.0, 1.0, -1.0], grid, &to_frame, &[full])[0];
        let rows: Vec<String> = (0..4)
            .map(|j| {
                (0..4)
                    .map(|i| if m.get(i, j) { '#' } else { '.' })
                    .collect()
            })
            .collect();
        assert_eq!(rows, ["..##", "..##", "##..", "##.."].map(String::from));
        // Cropped to x < 3 (input pixels) and a region of the box.
        let crop = MaskJob::new(
            &Rect::new(2.0, 0.0, 1.0, 2.0),
            [2.0, 0.0, 3.0, 2.0],
            vec![1.0],
        );
        let m = &masks_cpu(&[-1.0, 1.0, 1.0, -1.0], grid, &to_frame, &[crop])[0];
        assert_eq!((m.x, m.y, m.width, m.height), (2, 0, 1, 2));
        assert_eq!(m.bits, [true, true]);
    }
}
