//! Counts of wgnn's own live GPU objects (buffers, textures, compute and
//! render pipelines) and compiled ML graphs, so that a soak test or a long
//! run can tell "memory is flat" from "something is kept per frame".
//!
//! Every creation site goes through a [`Gpu`](super::Gpu) method that wraps
//! the wgpu object in a [`Counted`] handle: counted once when created, once
//! less when the last clone of the handle is dropped. Counts are kept twice:
//! process-wide ([`counts`]) and per device ([`Gpu::live`](super::Gpu::live)),
//! because tests share one process and a per-device tally is what a test that
//! owns its device can compare exactly. Reading them is a handful of relaxed
//! atomic loads.

use std::ops::Deref;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// What a [`Token`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Buffer,
    Texture,
    ComputePipeline,
    RenderPipeline,
    /// A compiled ML graph, on the CPU or GPU context.
    Graph,
}

/// A snapshot of live objects and the bytes of the buffers and textures
/// among them (as asked for at creation, before any driver padding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub buffers: i64,
    pub buffer_bytes: i64,
    pub textures: i64,
    pub texture_bytes: i64,
    pub compute_pipelines: i64,
    pub render_pipelines: i64,
    pub graphs: i64,
}

impl Counts {
    /// Live objects of every kind (bytes left out).
    pub fn objects(&self) -> i64 {
        self.buffers + self.textures + self.compute_pipelines + self.render_pipelines + self.graphs
    }
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} buffers ({} B), {} textures ({} B), {} compute + {} render pipelines, {} graphs",
            self.buffers,
            self.buffer_bytes,
            self.textures,
            self.texture_bytes,
            self.compute_pipelines,
            self.render_pipelines,
            self.graphs
        )
    }
}

/// One set of counters (the process's, or one device's).
#[derive(Default, Debug)]
pub(crate) struct Tally {
    buffers: AtomicI64,
    buffer_bytes: AtomicI64,
    textures: AtomicI64,
    texture_bytes: AtomicI64,
    compute_pipelines: AtomicI64,
    render_pipelines: AtomicI64,
    graphs: AtomicI64,
}

impl Tally {
    fn add(&self, kind: Kind, bytes: u64, sign: i64) {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX) * sign;
        let (count, size) = match kind {
            Kind::Buffer => (&self.buffers, Some(&self.buffer_bytes)),
            Kind::Texture => (&self.textures, Some(&self.texture_bytes)),
            Kind::ComputePipeline => (&self.compute_pipelines, None),
            Kind::RenderPipeline => (&self.render_pipelines, None),
            Kind::Graph => (&self.graphs, None),
        };
        count.fetch_add(sign, Ordering::Relaxed);
        if let Some(size) = size {
            size.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> Counts {
        Counts {
            buffers: self.buffers.load(Ordering::Relaxed),
            buffer_bytes: self.buffer_bytes.load(Ordering::Relaxed),
            textures: self.textures.load(Ordering::Relaxed),
            texture_bytes: self.texture_bytes.load(Ordering::Relaxed),
            compute_pipelines: self.compute_pipelines.load(Ordering::Relaxed),
            render_pipelines: self.render_pipelines.load(Ordering::Relaxed),
            graphs: self.graphs.load(Ordering::Relaxed),
        }
    }
}

static PROCESS: Tally = Tally {
    buffers: AtomicI64::new(0),
    buffer_bytes: AtomicI64::new(0),
    textures: AtomicI64::new(0),
    texture_bytes: AtomicI64::new(0),
    compute_pipelines: AtomicI64::new(0),
    render_pipelines: AtomicI64::new(0),
    graphs: AtomicI64::new(0),
};

/// wgnn's live GPU objects and graphs in this process, all devices together.
pub fn counts() -> Counts {
    PROCESS.snapshot()
}

/// Counts one object while it lives: added to the process's tally (and a
/// device's, if given) when made, taken off when dropped.
#[derive(Debug)]
pub struct Token {
    kind: Kind,
    bytes: u64,
    device: Option<Arc<Tally>>,
}

impl Token {
    pub(crate) fn new(kind: Kind, bytes: u64, device: Option<Arc<Tally>>) -> Token {
        PROCESS.add(kind, bytes, 1);
        if let Some(d) = &device {
            d.add(kind, bytes, 1);
        }
        Token {
            kind,
            bytes,
            device,
        }
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        PROCESS.add(self.kind, self.bytes, -1);
        if let Some(d) = &self.device {
            d.add(self.kind, self.bytes, -1);
        }
    }
}

/// A wgpu object counted while any clone of it lives. Derefs to the object,
/// so `&Counted<wgpu::Buffer>` goes wherever `&wgpu::Buffer` is wanted.
#[derive(Debug)]
pub struct Counted<T> {
    value: T,
    _token: Arc<Token>,
}

impl<T: Clone> Clone for Counted<T> {
    fn clone(&self) -> Self {
        Counted {
            value: self.value.clone(),
            _token: self._token.clone(),
        }
    }
}

impl<T> Counted<T> {
    pub(crate) fn new(value: T, token: Token) -> Self {
        Counted {
            value,
            _token: Arc::new(token),
        }
    }
}

impl<T> Deref for Counted<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> AsRef<T> for Counted<T> {
    fn as_ref(&self) -> &T {
        &self.value
    }
}

impl<T: PartialEq> PartialEq for Counted<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T: Eq> Eq for Counted<T> {}

/// A counted `wgpu::Buffer`.
pub type Buffer = Counted<wgpu::Buffer>;
/// A counted `wgpu::Texture`.
pub type Texture = Counted<wgpu::Texture>;
/// A counted `wgpu::ComputePipeline`.
pub type ComputePipeline = Counted<wgpu::ComputePipeline>;
/// A counted `wgpu::RenderPipeline`.
pub type RenderPipeline = Counted<wgpu::RenderPipeline>;

#[cfg(test)]
mod tests {
    use super::*;

    // The process tally is shared with every other test of the library that
    // runs alongside, so only a private device tally is compared exactly.
    #[test]
    fn tokens_count_while_any_clone_lives() {
        let device = Arc::new(Tally::default());
        let t = |kind, bytes| Token::new(kind, bytes, Some(device.clone()));
        let a = Counted::new(7u32, t(Kind::Buffer, 256));
        let b = Counted::new((), t(Kind::Texture, 1024));
        let g = t(Kind::Graph, 0);
        let p = Counted::new((), t(Kind::ComputePipeline, 0));
        let r = Counted::new((), t(Kind::RenderPipeline, 0));
        let a2 = a.clone();
        assert_eq!(*a2, 7);
        let expect = Counts {
            buffers: 1,
            buffer_bytes: 256,
            textures: 1,
            texture_bytes: 1024,
            compute_pipelines: 1,
            render_pipelines: 1,
            graphs: 1,
        };
        assert_eq!(device.snapshot(), expect);
        assert_eq!(device.snapshot().objects(), 5);
        drop(a);
        assert_eq!(device.snapshot().buffers, 1, "a clone still lives");
        drop(a2);
        assert_eq!(device.snapshot().buffers, 0);
        assert_eq!(device.snapshot().buffer_bytes, 0);
        drop((b, g, p, r));
        assert_eq!(device.snapshot(), Counts::default());
    }

    #[test]
    fn the_process_tally_sees_a_token() {
        // Other tests may create objects meanwhile; a huge byte count that
        // only this token adds tells ours apart.
        let bytes = 1 << 50;
        let token = Token::new(Kind::Buffer, bytes, None);
        assert!(counts().buffer_bytes >= bytes as i64);
        drop(token);
        assert!(counts().buffer_bytes < bytes as i64);
    }
}
