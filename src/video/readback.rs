//! Reading results back is the exception (tests, screenshots), never part of
//! the per-frame path, so it is a separate, explicit, counted call.

use crate::error::{Error, Result};
use crate::gpu::transfer::TextureRegion;
use crate::gpu::Gpu;

/// The texture's pixels as tightly packed RGBA rows (width * 4 bytes each).
/// Blocks until they are on the CPU.
pub fn download_rgba(gpu: &Gpu, texture: &wgpu::Texture) -> Result<Vec<u8>> {
    if !matches!(
        texture.format(),
        wgpu::TextureFormat::Rgba8Unorm | wgpu::TextureFormat::Rgba8UnormSrgb
    ) {
        return Err(Error::invalid(format!(
            "download_rgba: texture format {:?} is not RGBA8",
            texture.format()
        )));
    }
    if !texture.usage().contains(wgpu::TextureUsages::COPY_SRC) {
        return Err(Error::invalid(
            "download_rgba: the texture lacks COPY_SRC usage",
        ));
    }
    gpu.download_texture(texture, TextureRegion::whole(texture))?
        .wait()
}
