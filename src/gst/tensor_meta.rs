//! [`WgnnTensorMeta`]: model outputs attached to a video buffer by
//! `wgnninfer`. GstTensorMeta arrives with GStreamer 1.26; until the project
//! moves there, this meta carries the same information (named, typed,
//! shaped tensors) plus what only wgnn can give: the tensors stay on the
//! GPU, so downstream code reads them (counted) or rents them to its own
//! WGSL with no copy (with `device=cpu` they are tensors of a CPU context).

use std::sync::Arc;

use crate::gst::arc_meta::arc_meta;
pub use crate::tasks::InferenceOutputs;

arc_meta!(
    /// Model outputs for the frame of this buffer (see [`InferenceOutputs`]).
    WgnnTensorMeta,
    InferenceOutputs,
    "WgnnTensorMetaAPI",
    "WgnnTensorMeta"
);

impl WgnnTensorMeta {
    pub fn outputs(&self) -> &Arc<InferenceOutputs> {
        self.value()
    }
}

/// The inference outputs attached to `buffer`, if any.
pub fn outputs_of(buffer: &gst::BufferRef) -> Option<Arc<InferenceOutputs>> {
    buffer.meta::<WgnnTensorMeta>().map(|m| m.outputs().clone())
}
