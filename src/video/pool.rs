//! Frame textures are recycled: a live stream uploads same-sized frames
//! forever, and allocating GPU memory per frame is slow and fragments it.
//! The staging buffers the frames go up through are recycled beside them
//! (the pool's [`UploadRing`]), and go with the pool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::gpu::{live, Gpu, UploadRing};

/// What makes two textures interchangeable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextureKey {
    pub width: u32,
    pub height: u32,
    pub format: wgpu::TextureFormat,
    pub usage: wgpu::TextureUsages,
}

/// How often the pool had to allocate versus reuse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub created: u64,
    pub reused: u64,
    pub idle: usize,
}

/// Idle textures kept per key; more than a few in flight means the caller
/// holds frames, and keeping extras would only pin memory.
const MAX_IDLE_PER_KEY: usize = 4;

#[derive(Default)]
struct State {
    idle: HashMap<TextureKey, Vec<live::Texture>>,
    created: u64,
    reused: u64,
}

/// A cheaply clonable pool of textures keyed by [`TextureKey`], with the
/// staging ring that [`upload_frame`](super::upload_frame) copies frames
/// through.
#[derive(Clone, Default)]
pub struct TexturePool {
    state: Arc<Mutex<State>>,
    staging: Arc<UploadRing>,
    /// The render pipelines imported frames are unpacked with (the
    /// buffer-import path of `video::dmabuf`), kept with the stream's
    /// textures as the staging ring is.
    #[cfg(target_os = "linux")]
    unpack: Arc<super::dmabuf_unpack::Pipelines>,
}

impl std::fmt::Debug for TexturePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TexturePool")
            .field("stats", &self.stats())
            .finish()
    }
}

impl TexturePool {
    pub fn new() -> Self {
        Self::default()
    }

    /// An idle texture matching `key`, or a new one. It returns to the pool
    /// when the [`PooledTexture`] is dropped.
    pub fn acquire(&self, gpu: &Gpu, label: &str, key: TextureKey) -> Result<PooledTexture> {
        let reused = {
            let mut s = self.state.lock().unwrap();
            let t = s.idle.get_mut(&key).and_then(Vec::pop);
            if t.is_some() {
                s.reused += 1;
            }
            t
        };
        let texture = match reused {
            Some(t) => t,
            None => {
                let t = gpu.create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: wgpu::Extent3d {
                        width: key.width,
                        height: key.height,
                        depth_or_array_layers: 1,
                    },
                    mip_level_count: 1,
                    sample_count: 1,
                    dimension: wgpu::TextureDimension::D2,
                    format: key.format,
                    usage: key.usage,
                    view_formats: &[],
                })?;
                self.state.lock().unwrap().created += 1;
                t
            }
        };
        Ok(PooledTexture {
            texture: Some(texture),
            key,
            pool: self.clone(),
        })
    }

    pub fn stats(&self) -> PoolStats {
        let s = self.state.lock().unwrap();
        PoolStats {
            created: s.created,
            reused: s.reused,
            idle: s.idle.values().map(Vec::len).sum(),
        }
    }

    /// Drops every idle texture and staging buffer (after a resolution
    /// change, say).
    pub fn clear(&self) {
        self.state.lock().unwrap().idle.clear();
        self.staging.clear();
    }

    /// The staging buffers frames uploaded into this pool's textures go
    /// through.
    pub fn upload_ring(&self) -> &UploadRing {
        &self.staging
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn unpack_pipelines(&self) -> &super::dmabuf_unpack::Pipelines {
        &self.unpack
    }

    fn give_back(&self, key: TextureKey, texture: live::Texture) {
        let mut s = self.state.lock().unwrap();
        let idle = s.idle.entry(key).or_default();
        if idle.len() < MAX_IDLE_PER_KEY {
            idle.push(texture);
        }
    }
}

/// A texture on loan from a [`TexturePool`].
///
/// Dropping it lets the next frame overwrite it, so keep it alive until the
/// commands reading it have been submitted (queue order then makes the next
/// upload land after them).
pub struct PooledTexture {
    texture: Option<live::Texture>,
    key: TextureKey,
    pool: TexturePool,
}

impl PooledTexture {
    pub fn key(&self) -> TextureKey {
        self.key
    }
}

impl std::ops::Deref for PooledTexture {
    type Target = wgpu::Texture;

    fn deref(&self) -> &wgpu::Texture {
        self.texture.as_deref().expect("texture present until drop")
    }
}

impl std::fmt::Debug for PooledTexture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledTexture")
            .field("key", &self.key)
            .finish()
    }
}

impl Drop for PooledTexture {
    fn drop(&mut self) {
        if let Some(t) = self.texture.take() {
            self.pool.give_back(self.key, t);
        }
    }
}
