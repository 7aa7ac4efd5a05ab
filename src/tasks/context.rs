//! The tasks' use of their `ml` context: one each, destroyed with the task,
//! and float32 outputs read into buffers kept between frames (the CPU path).

use crate::error::{Error, Result};
use crate::ml::{Context, Tensor};

/// A context a task creates for itself and so destroys when it is dropped
/// (a CPU context's worker thread stops then), a failed constructor included.
pub(crate) struct OwnedContext(pub Context);

impl std::ops::Deref for OwnedContext {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.0
    }
}

impl Drop for OwnedContext {
    fn drop(&mut self) {
        self.0.destroy();
    }
}

/// Reads the float32 `tensor` (waiting for it) into `dst`, which must hold
/// exactly its values; `what` names it in errors ("mask").
pub(crate) fn read_f32_into(
    ctx: &Context,
    tensor: &Tensor,
    dst: &mut [f32],
    what: &str,
) -> Result<()> {
    let bytes = ctx.read_tensor_blocking(tensor)?;
    if bytes.len() != 4 * dst.len() {
        return Err(Error::invalid(format!(
            "the model's {what} has {} bytes, a {}-value f32 {what} needs {}",
            bytes.len(),
            dst.len(),
            4 * dst.len()
        )));
    }
    // The tensor's bytes carry no f32 alignment: copy rather than cast.
    for (v, b) in dst.iter_mut().zip(bytes.chunks_exact(4)) {
        *v = f32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    }
    Ok(())
}
