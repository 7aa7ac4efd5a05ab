//! Compute pipelines are compiled once per configuration and reused for
//! every frame: compiling WGSL is orders of magnitude slower than a dispatch.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::Result;
use crate::gpu::Gpu;

/// Pipelines keyed by whatever distinguishes their configurations.
#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<String, wgpu::ComputePipeline>>,
    built: Mutex<u64>,
}

impl PipelineCache {
    /// The pipeline for `key`, compiling `source` with `constants` the first time.
    pub(crate) fn get(
        &self,
        gpu: &Gpu,
        key: String,
        label: &str,
        source: impl FnOnce() -> String,
        constants: &[(&str, f64)],
    ) -> Result<wgpu::ComputePipeline> {
        if let Some(p) = self.map.lock().unwrap().get(&key) {
            return Ok(p.clone());
        }
        let pipeline = build(gpu, label, &source(), constants)?;
        *self.built.lock().unwrap() += 1;
        self.map.lock().unwrap().insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// How many pipelines were compiled so far.
    pub(crate) fn built(&self) -> u64 {
        *self.built.lock().unwrap()
    }
}

pub(crate) fn build(
    gpu: &Gpu,
    label: &str,
    source: &str,
    constants: &[(&str, f64)],
) -> Result<wgpu::ComputePipeline> {
    gpu.scoped(label, || {
        let module = gpu
            .device()
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        gpu.device()
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    ..Default::default()
                },
                cache: None,
            })
    })
}

/// Workgroups of 8x8 covering `width` x `height`.
pub(crate) fn groups_2d(width: u32, height: u32) -> (u32, u32) {
    (width.div_ceil(8), height.div_ceil(8))
}

/// Key text for a list of constants, exact to the bit.
pub(crate) fn constants_key(constants: &[(&str, f64)]) -> String {
    constants
        .iter()
        .map(|(k, v)| format!("{k}={:x}", v.to_bits()))
        .collect::<Vec<_>>()
        .join(",")
}
