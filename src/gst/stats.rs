//! The read-only counters every wgnn element exposes (`frames`,
//! `bytes-uploaded`, `bytes-downloaded`, `frames-imported`,
//! `bytes-imported`): the element's own share of the transfers its device
//! counts in `wgnn::gpu::transfer`. A zero-copy input shows as
//! `frames-imported` growing with `bytes-uploaded` staying 0.

use std::sync::atomic::{AtomicU64, Ordering};

use gst::glib;
use gst::prelude::*;

use crate::gpu::TransferStats;

#[derive(Default)]
pub struct Stats {
    frames: AtomicU64,
    uploaded: AtomicU64,
    downloaded: AtomicU64,
    frames_imported: AtomicU64,
    imported: AtomicU64,
}

impl Stats {
    pub fn properties() -> Vec<glib::ParamSpec> {
        vec![
            glib::ParamSpecUInt64::builder("frames")
                .nick("Frames")
                .blurb("Frames processed since the element started")
                .read_only()
                .build(),
            glib::ParamSpecUInt64::builder("bytes-uploaded")
                .nick("Bytes uploaded")
                .blurb("Bytes this element copied from system memory to the GPU")
                .read_only()
                .build(),
            glib::ParamSpecUInt64::builder("bytes-downloaded")
                .nick("Bytes downloaded")
                .blurb("Bytes this element copied from the GPU to system memory")
                .read_only()
                .build(),
            glib::ParamSpecUInt64::builder("frames-imported")
                .nick("Frames imported")
                .blurb(
                    "Input frames this element read where they were (DMA-BUFs imported into \
                     the GPU), not copied",
                )
                .read_only()
                .build(),
            glib::ParamSpecUInt64::builder("bytes-imported")
                .nick("Bytes imported")
                .blurb("The bytes of the imported frames' planes: what an upload would have copied")
                .read_only()
                .build(),
        ]
    }

    /// The value of one of [`Stats::properties`], or `None` for other names.
    pub fn property(&self, name: &str) -> Option<glib::Value> {
        let v = match name {
            "frames" => self.frames.load(Ordering::Relaxed),
            "bytes-uploaded" => self.uploaded.load(Ordering::Relaxed),
            "bytes-downloaded" => self.downloaded.load(Ordering::Relaxed),
            "frames-imported" => self.frames_imported.load(Ordering::Relaxed),
            "bytes-imported" => self.imported.load(Ordering::Relaxed),
            _ => return None,
        };
        Some(v.to_value())
    }

    /// Records one frame and the transfers it made; returns the frame number.
    pub fn frame(&self, moved: &TransferStats) -> u64 {
        self.uploaded
            .fetch_add(moved.upload_bytes, Ordering::Relaxed);
        self.downloaded
            .fetch_add(moved.download_bytes, Ordering::Relaxed);
        self.frames_imported
            .fetch_add(moved.frames_imported, Ordering::Relaxed);
        self.imported
            .fetch_add(moved.bytes_imported, Ordering::Relaxed);
        self.frames.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn reset(&self) {
        self.frames.store(0, Ordering::Relaxed);
        self.uploaded.store(0, Ordering::Relaxed);
        self.downloaded.store(0, Ordering::Relaxed);
        self.frames_imported.store(0, Ordering::Relaxed);
        self.imported.store(0, Ordering::Relaxed);
    }
}
