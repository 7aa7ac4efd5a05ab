//! Frame planes written from the upload ring's staging buffer by a compute
//! pass rather than `copy_buffer_to_texture` (`upload_unpack.wgsl` says why).
//!
//! The pass binds the ring's buffer as storage, which core WebGPU does not
//! allow for a `MAP_WRITE` buffer; wgpu's native `MAPPABLE_PRIMARY_BUFFERS`
//! does. On Vulkan wgpu places a buffer by its mapping flags alone, so the
//! ring's buffers lie where they did: in video memory where the driver
//! offers host-visible video memory, as the NVIDIA driver does. Each plane's
//! texture must be a storage texture of its format: RGBA8 is one in core
//! WebGPU, BGRA8 with `BGRA8UNORM_STORAGE`, R8 and RG8 (the planes of NV12
//! and I420) where the adapter says so under
//! `TEXTURE_ADAPTER_SPECIFIC_FORMAT_FEATURES`. Other planes (RGB's R8Uint)
//! and adapters without the features are copied as before.

use super::shader::Checks;
use super::Gpu;
use crate::error::Result;

/// Set to 0, uploads copy every plane with `copy_buffer_to_texture` (to
/// compare the two on a device).
pub const UPLOAD_UNPACK_ENV: &str = "WGNN_UPLOAD_UNPACK";

/// Features the unpack needs (the first) or widens to more formats.
pub(super) const FEATURES: wgpu::Features = wgpu::Features::MAPPABLE_PRIMARY_BUFFERS
    .union(wgpu::Features::BGRA8UNORM_STORAGE)
    .union(wgpu::Features::TEXTURE_ADAPTER_SPECIFIC_FORMAT_FEATURES);

/// A log filter for programs' defaults (`env_logger` syntax): wgpu warns
/// whenever `MAPPABLE_PRIMARY_BUFFERS` is enabled on a discrete GPU, because
/// a buffer that is both mapped and bound may then sit in system memory. The
/// ring's buffers are placed by their mapping flags alone, as they were
/// without the feature, so the warning does not apply; the CLIs hide it
/// (`RUST_LOG` still shows it).
pub const QUIET_WGPU_LOGS: &str = "wgpu_core::instance=error";

const SOURCE: &str = include_str!("upload_unpack.wgsl");

/// The plane formats a device opened with `features` unpacks, or none where
/// `WGNN_UPLOAD_UNPACK=0`.
pub(super) fn formats(
    adapter: &wgpu::Adapter,
    features: wgpu::Features,
) -> Vec<wgpu::TextureFormat> {
    use wgpu::TextureFormat as F;
    if !features.contains(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS)
        || std::env::var(UPLOAD_UNPACK_ENV).as_deref() == Ok("0")
    {
        return Vec::new();
    }
    let writable = |format: F| {
        let f = adapter.get_texture_format_features(format);
        f.allowed_usages
            .contains(wgpu::TextureUsages::STORAGE_BINDING)
            && f.flags
                .contains(wgpu::TextureFormatFeatureFlags::STORAGE_WRITE_ONLY)
    };
    let adapter_specific =
        features.contains(wgpu::Features::TEXTURE_ADAPTER_SPECIFIC_FORMAT_FEATURES);
    [F::Rgba8Unorm, F::Bgra8Unorm, F::R8Unorm, F::Rg8Unorm]
        .into_iter()
        .filter(|&format| match format {
            F::Rgba8Unorm => true,
            F::Bgra8Unorm => features.contains(wgpu::Features::BGRA8UNORM_STORAGE),
            _ => adapter_specific && writable(format),
        })
        .collect()
}

/// Texels of a plane of `format` (one of [`formats`]) in one 32-bit word:
/// what one invocation of the unpack writes.
fn texels_per_word(format: wgpu::TextureFormat) -> u32 {
    match format {
        wgpu::TextureFormat::R8Unorm => 4,
        wgpu::TextureFormat::Rg8Unorm => 2,
        _ => 1,
    }
}

/// The unpack kernel for planes of `format` (one of [`formats`]).
fn source(format: wgpu::TextureFormat) -> String {
    use wgpu::TextureFormat as F;
    let (name, texel) = match format {
        F::Rgba8Unorm => ("rgba8unorm", "return unpack4x8unorm(w);"),
        // The bytes are B, G, R, A; a store takes the colour as R, G, B, A.
        F::Bgra8Unorm => ("bgra8unorm", "return unpack4x8unorm(w).zyxw;"),
        F::Rg8Unorm => (
            "rg8unorm",
            "let v = unpack4x8unorm(w);\n    \
             return select(vec4(v.xy, 0.0, 1.0), vec4(v.zw, 0.0, 1.0), i == 1u);",
        ),
        _ => (
            "r8unorm",
            "return vec4(unpack4x8unorm(w)[i], 0.0, 0.0, 1.0);",
        ),
    };
    let texels = texels_per_word(format);
    format!(
        "const TEXELS: u32 = {texels}u;\n\
         fn texel(w: u32, i: u32) -> vec4<f32> {{\n    {texel}\n}}\n\
         {}",
        SOURCE.replace("FORMAT", name)
    )
}

/// One plane to unpack: its bytes in the staging buffer and its texture.
pub(super) struct Unpack<'a> {
    pub texture: &'a wgpu::Texture,
    pub offset: u64,
    pub size: u64,
    pub pipeline: super::live::ComputePipeline,
}

impl Gpu {
    /// The usage a texture that uploads write in `format` needs beyond
    /// copies and sampling: STORAGE_BINDING where uploads unpack that
    /// format by compute, none otherwise.
    pub fn upload_usage(&self, format: wgpu::TextureFormat) -> wgpu::TextureUsages {
        if self.unpacks(format) {
            wgpu::TextureUsages::STORAGE_BINDING
        } else {
            wgpu::TextureUsages::empty()
        }
    }

    pub(super) fn unpacks(&self, format: wgpu::TextureFormat) -> bool {
        self.inner.unpack_formats.contains(&format)
    }

    /// The unpack of a whole texture (`texture`, mip 0 of a 2-D texture
    /// with storage usage, in a format this device unpacks) from `size`
    /// bytes at `offset` of `ring`'s storage-usable staging buffer `buffer`;
    /// None where the plane is copied instead.
    pub(super) fn unpack_for<'a>(
        &self,
        ring: &super::UploadRing,
        buffer: &wgpu::Buffer,
        texture: &'a wgpu::Texture,
        region: &super::transfer::TextureRegion,
        offset: u64,
        size: u64,
    ) -> Result<Option<Unpack<'a>>> {
        let format = texture.format();
        let whole = region.origin == wgpu::Origin3d::ZERO
            && region.mip_level == 0
            && region.size == texture.size()
            && texture.dimension() == wgpu::TextureDimension::D2
            && texture.size().depth_or_array_layers == 1;
        if !(whole
            && self.unpacks(format)
            && size <= self.limits().max_storage_buffer_binding_size
            && buffer.usage().contains(wgpu::BufferUsages::STORAGE)
            && texture
                .usage()
                .contains(wgpu::TextureUsages::STORAGE_BINDING))
        {
            return Ok(None);
        }
        let pipeline = ring.unpacker(self, format, || {
            self.compute_pipeline("wgnn frame unpack", &source(format), Checks::Trusted)
        })?;
        Ok(Some(Unpack {
            texture,
            offset,
            size,
            pipeline,
        }))
    }

    /// Records `unpacks` from `buffer` as one compute pass.
    pub(super) fn encode_unpacks(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffer: &wgpu::Buffer,
        unpacks: &[Unpack<'_>],
    ) {
        if unpacks.is_empty() {
            return;
        }
        let groups: Vec<wgpu::BindGroup> = unpacks
            .iter()
            .map(|u| {
                let view = u.texture.create_view(&wgpu::TextureViewDescriptor {
                    label: Some("wgnn frame unpack"),
                    mip_level_count: Some(1),
                    ..Default::default()
                });
                self.device().create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("wgnn frame unpack"),
                    layout: &u.pipeline.get_bind_group_layout(0),
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                buffer,
                                offset: u.offset,
                                size: wgpu::BufferSize::new(u.size),
                            }),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::TextureView(&view),
                        },
                    ],
                })
            })
            .collect();
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("wgnn frame unpack"),
            timestamp_writes: None,
        });
        for (u, group) in unpacks.iter().zip(&groups) {
            let texels = texels_per_word(u.texture.format());
            pass.set_pipeline(&u.pipeline);
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(
                u.texture.width().div_ceil(texels).div_ceil(64),
                u.texture.height().div_ceil(4),
                1,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::source;

    #[test]
    fn every_unpack_kernel_validates() {
        use wgpu::TextureFormat as F;
        for format in [F::Rgba8Unorm, F::Bgra8Unorm, F::Rg8Unorm, F::R8Unorm] {
            crate::gpu::shader::testing::validate(&format!("unpack {format:?}"), &source(format));
        }
    }
}
