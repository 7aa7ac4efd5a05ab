//! `video/x-raw(memory:WgpuTexture)` buffers: a GstBuffer with no system
//! memory and a [`WgpuFrameMeta`] holding the frame's GPU textures.
//!
//! A meta rather than a custom GstMemory: wgpu textures cannot be mapped to
//! the CPU, so a GstMemory would only ever fail `map()`; a meta says plainly
//! "the pixels are on the GPU", copies with the buffer, and the textures go
//! back to their pool when the last buffer holding them is freed.

use std::sync::Arc;

use gst::glib;
use gst::prelude::*;

use crate::video::GpuFrame;

/// The caps feature of buffers whose pixels live in wgpu textures.
pub const CAPS_FEATURE_WGPU_TEXTURE: &str = "memory:WgpuTexture";

#[repr(transparent)]
pub struct WgpuFrameMeta(imp::WgpuFrameMeta);

// SAFETY: the meta only holds an Arc of a frame of wgpu handles, which are Send + Sync.
unsafe impl Send for WgpuFrameMeta {}
unsafe impl Sync for WgpuFrameMeta {}

impl WgpuFrameMeta {
    /// Attaches `frame` to `buffer`.
    pub fn add(
        buffer: &mut gst::BufferRef,
        frame: Arc<GpuFrame>,
    ) -> gst::MetaRefMut<'_, Self, gst::meta::Standalone> {
        unsafe {
            let mut params = std::mem::ManuallyDrop::new(imp::Params { frame });
            let meta = gst::ffi::gst_buffer_add_meta(
                buffer.as_mut_ptr(),
                imp::meta_info(),
                &mut *params as *mut imp::Params as glib::ffi::gpointer,
            ) as *mut imp::WgpuFrameMeta;
            Self::from_mut_ptr(buffer, meta)
        }
    }

    pub fn frame(&self) -> &Arc<GpuFrame> {
        &self.0.frame
    }
}

unsafe impl MetaAPI for WgpuFrameMeta {
    type GstType = imp::WgpuFrameMeta;

    fn meta_api() -> glib::Type {
        imp::meta_api_type()
    }
}

impl std::fmt::Debug for WgpuFrameMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuFrameMeta")
            .field("frame", &self.0.frame)
            .finish()
    }
}

/// The GPU frame of a buffer, if it carries one.
pub fn frame_of(buffer: &gst::BufferRef) -> Option<Arc<GpuFrame>> {
    buffer.meta::<WgpuFrameMeta>().map(|m| m.frame().clone())
}

/// A new buffer carrying `frame`, with no system memory.
pub fn buffer_for(frame: Arc<GpuFrame>) -> gst::Buffer {
    let mut buffer = gst::Buffer::new();
    WgpuFrameMeta::add(buffer.get_mut().unwrap(), frame);
    buffer
}

mod imp {
    use std::ptr;
    use std::sync::{Arc, LazyLock};

    use gst::glib;
    use gst::glib::translate::*;

    use crate::video::GpuFrame;

    pub(super) struct Params {
        pub frame: Arc<GpuFrame>,
    }

    #[repr(C)]
    pub struct WgpuFrameMeta {
        parent: gst::ffi::GstMeta,
        pub(super) frame: Arc<GpuFrame>,
    }

    pub(super) fn meta_api_type() -> glib::Type {
        static TYPE: LazyLock<glib::Type> = LazyLock::new(|| unsafe {
            let t = from_glib(gst::ffi::gst_meta_api_type_register(
                c"WgnnWgpuFrameMetaAPI".as_ptr(),
                [ptr::null::<std::os::raw::c_char>()].as_ptr() as *mut *const _,
            ));
            assert_ne!(t, glib::Type::INVALID);
            t
        });
        *TYPE
    }

    unsafe extern "C" fn init(
        meta: *mut gst::ffi::GstMeta,
        params: glib::ffi::gpointer,
        _buffer: *mut gst::ffi::GstBuffer,
    ) -> glib::ffi::gboolean {
        let meta = &mut *(meta as *mut WgpuFrameMeta);
        let params = ptr::read(params as *const Params);
        ptr::write(&mut meta.frame, params.frame);
        true.into_glib()
    }

    unsafe extern "C" fn free(meta: *mut gst::ffi::GstMeta, _buffer: *mut gst::ffi::GstBuffer) {
        let meta = &mut *(meta as *mut WgpuFrameMeta);
        ptr::drop_in_place(&mut meta.frame);
    }

    unsafe extern "C" fn transform(
        dest: *mut gst::ffi::GstBuffer,
        meta: *mut gst::ffi::GstMeta,
        _buffer: *mut gst::ffi::GstBuffer,
        _type: glib::ffi::GQuark,
        _data: glib::ffi::gpointer,
    ) -> glib::ffi::gboolean {
        let meta = &*(meta as *const WgpuFrameMeta);
        super::WgpuFrameMeta::add(gst::BufferRef::from_mut_ptr(dest), meta.frame.clone());
        true.into_glib()
    }

    struct Info(ptr::NonNull<gst::ffi::GstMetaInfo>);
    unsafe impl Send for Info {}
    unsafe impl Sync for Info {}

    pub(super) fn meta_info() -> *const gst::ffi::GstMetaInfo {
        static INFO: LazyLock<Info> = LazyLock::new(|| unsafe {
            Info(
                ptr::NonNull::new(gst::ffi::gst_meta_register(
                    meta_api_type().into_glib(),
                    c"WgnnWgpuFrameMeta".as_ptr(),
                    std::mem::size_of::<WgpuFrameMeta>(),
                    Some(init),
                    Some(free),
                    Some(transform),
                ) as *mut gst::ffi::GstMetaInfo)
                .expect("registering WgnnWgpuFrameMeta"),
            )
        });
        INFO.0.as_ptr()
    }
}
