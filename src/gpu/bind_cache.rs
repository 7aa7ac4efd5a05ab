//! Bind groups kept for the resources they bind.
//!
//! A stream's video passes bind the same few things frame after frame: the
//! pool's recycled plane textures, the same output and intermediate
//! textures, the same tensor buffers. Making a view and a bind group costs
//! the encoding thread about 10 us each in wgpu 30 (and destroying them once
//! the frame is done, more); a 1080p frame's segmentation made nine of each.
//! So each pass keeps the last few it made, keyed by what they bind.
//!
//! A kept bind group holds what it binds alive. The caches are small, and
//! owned by the passes (a tensorizer, a compositor), so everything they hold
//! goes when the element that made them stops.

use std::sync::Mutex;

use crate::error::Result;

/// One thing a bind group binds, compared by identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    Pipeline(wgpu::ComputePipeline),
    Texture(wgpu::Texture),
    /// A buffer and the range bound (offset, size).
    Buffer(wgpu::Buffer, u64, u64),
}

impl Bound {
    /// The whole of `buffer`.
    pub fn buffer(buffer: &wgpu::Buffer) -> Bound {
        Bound::Buffer(buffer.clone(), 0, buffer.size())
    }
}

/// The last `capacity` bind groups made, most recent first.
#[derive(Debug)]
pub struct BindCache {
    capacity: usize,
    entries: Mutex<Vec<(Vec<Bound>, wgpu::BindGroup)>>,
}

impl BindCache {
    pub fn new(capacity: usize) -> BindCache {
        BindCache {
            capacity: capacity.max(1),
            entries: Mutex::default(),
        }
    }

    /// The bind group kept for `key`, or the one `make` makes (then kept,
    /// the least recently used dropped beyond the capacity).
    pub fn get_or_make(
        &self,
        key: Vec<Bound>,
        make: impl FnOnce() -> Result<wgpu::BindGroup>,
    ) -> Result<wgpu::BindGroup> {
        {
            let mut entries = self.entries.lock().unwrap();
            if let Some(i) = entries.iter().position(|(k, _)| *k == key) {
                let entry = entries.remove(i);
                let group = entry.1.clone();
                entries.insert(0, entry);
                return Ok(group);
            }
        }
        let group = make()?;
        let mut entries = self.entries.lock().unwrap();
        entries.insert(0, (key, group.clone()));
        entries.truncate(self.capacity);
        Ok(group)
    }

    /// Drops every kept bind group (and so what only they held).
    pub fn clear(&self) {
        self.entries.lock().unwrap().clear();
    }

    /// Bind groups kept now.
    #[cfg(test)]
    fn kept(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Gpu;

    #[test]
    fn keeps_the_most_recent_and_makes_each_key_once() {
        let gpu = Gpu::new().unwrap_or_else(|e| panic!("this test needs a GPU adapter: {e}"));
        let device = gpu.device();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: None,
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: true },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            }],
        });
        let buffers: Vec<wgpu::Buffer> = (0..3)
            .map(|_| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size: 256,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                })
            })
            .collect();
        let cache = BindCache::new(2);
        let made = std::cell::Cell::new(0);
        let get = |b: &wgpu::Buffer| {
            cache
                .get_or_make(vec![Bound::buffer(b)], || {
                    made.set(made.get() + 1);
                    Ok(device.create_bind_group(&wgpu::BindGroupDescriptor {
                        label: None,
                        layout: &layout,
                        entries: &[wgpu::BindGroupEntry {
                            binding: 0,
                            resource: b.as_entire_binding(),
                        }],
                    }))
                })
                .unwrap()
        };
        let first = get(&buffers[0]);
        assert_eq!(get(&buffers[0]), first);
        get(&buffers[1]);
        assert_eq!(made.get(), 2);
        // 0 was used before 1: a third key drops 0, keeps 1.
        get(&buffers[2]);
        get(&buffers[1]);
        assert_eq!(made.get(), 3);
        assert_ne!(get(&buffers[0]), first);
        assert_eq!(made.get(), 4);
        assert_eq!(cache.kept(), 2);
        // A different range of the same buffer is another key.
        let whole = Bound::buffer(&buffers[0]);
        assert_ne!(whole, Bound::Buffer(buffers[0].clone(), 0, 128));
        cache.clear();
        assert_eq!(cache.kept(), 0);
    }
}
