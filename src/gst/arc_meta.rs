//! Buffer metas that hold an `Arc` of a Rust value: the frame of a
//! `memory:WgpuTexture` buffer ([`WgpuFrameMeta`](super::frame_meta::WgpuFrameMeta))
//! and the tensors `wgnninfer` attaches ([`WgnnTensorMeta`](super::tensor_meta::WgnnTensorMeta)).
//! Copying the buffer (queues, tees, `make_writable`) clones the `Arc`; the
//! value is dropped with the last buffer holding it.

use std::ptr;
use std::sync::Arc;

use gst::glib;
use gst::glib::translate::*;

/// The C layout of such a meta.
#[repr(C)]
pub struct RawArcMeta<T> {
    parent: gst::ffi::GstMeta,
    pub(crate) value: Arc<T>,
}

pub(crate) struct Params<T> {
    pub value: Arc<T>,
}

pub(crate) unsafe extern "C" fn init<T>(
    meta: *mut gst::ffi::GstMeta,
    params: glib::ffi::gpointer,
    _buffer: *mut gst::ffi::GstBuffer,
) -> glib::ffi::gboolean {
    let meta = &mut *(meta as *mut RawArcMeta<T>);
    let params = ptr::read(params as *const Params<T>);
    ptr::write(&mut meta.value, params.value);
    true.into_glib()
}

pub(crate) unsafe extern "C" fn free<T>(
    meta: *mut gst::ffi::GstMeta,
    _buffer: *mut gst::ffi::GstBuffer,
) {
    let meta = &mut *(meta as *mut RawArcMeta<T>);
    ptr::drop_in_place(&mut meta.value);
}

/// Attaches `value` to `buffer` as a meta of `info`.
///
/// # Safety
/// `info` must have been registered for `RawArcMeta<T>` by [`arc_meta!`].
pub(crate) unsafe fn add<T>(
    buffer: *mut gst::ffi::GstBuffer,
    info: *const gst::ffi::GstMetaInfo,
    value: Arc<T>,
) -> *mut RawArcMeta<T> {
    let mut params = std::mem::ManuallyDrop::new(Params { value });
    gst::ffi::gst_buffer_add_meta(
        buffer,
        info,
        &mut *params as *mut Params<T> as glib::ffi::gpointer,
    ) as *mut RawArcMeta<T>
}

pub(crate) struct Info(pub ptr::NonNull<gst::ffi::GstMetaInfo>);
unsafe impl Send for Info {}
unsafe impl Sync for Info {}

/// Defines a meta type `$name` holding an `Arc<$value>`, registered as
/// `$api` / `$impl_name`, with `add`, `value` and the `MetaAPI` glue.
macro_rules! arc_meta {
    ($(#[$doc:meta])* $name:ident, $value:ty, $api:literal, $impl_name:literal) => {
        $(#[$doc])*
        #[repr(transparent)]
        pub struct $name($crate::gst::arc_meta::RawArcMeta<$value>);

        // SAFETY: the meta only holds an Arc of a Send + Sync value.
        unsafe impl Send for $name {}
        unsafe impl Sync for $name {}

        impl $name {
            /// Attaches `value` to `buffer`.
            pub fn add(
                buffer: &mut gst::BufferRef,
                value: std::sync::Arc<$value>,
            ) -> gst::MetaRefMut<'_, Self, gst::meta::Standalone> {
                use gst::prelude::*;
                unsafe {
                    let meta = $crate::gst::arc_meta::add(
                        buffer.as_mut_ptr(),
                        Self::meta_info(),
                        value,
                    );
                    Self::from_mut_ptr(buffer, meta)
                }
            }

            pub fn value(&self) -> &std::sync::Arc<$value> {
                &self.0.value
            }

            fn meta_info() -> *const gst::ffi::GstMetaInfo {
                use gst::glib::translate::IntoGlib;
                static INFO: std::sync::LazyLock<$crate::gst::arc_meta::Info> =
                    std::sync::LazyLock::new(|| unsafe {
                        unsafe extern "C" fn transform(
                            dest: *mut gst::ffi::GstBuffer,
                            meta: *mut gst::ffi::GstMeta,
                            _buffer: *mut gst::ffi::GstBuffer,
                            _type: gst::glib::ffi::GQuark,
                            _data: gst::glib::ffi::gpointer,
                        ) -> gst::glib::ffi::gboolean {
                            let meta = &*(meta as *const $name);
                            $name::add(gst::BufferRef::from_mut_ptr(dest), meta.value().clone());
                            true.into_glib()
                        }
                        $crate::gst::arc_meta::Info(
                            std::ptr::NonNull::new(gst::ffi::gst_meta_register(
                                <$name as gst::MetaAPI>::meta_api().into_glib(),
                                concat!($impl_name, "\0").as_ptr() as *const _,
                                std::mem::size_of::<$name>(),
                                Some($crate::gst::arc_meta::init::<$value>),
                                Some($crate::gst::arc_meta::free::<$value>),
                                Some(transform),
                            ) as *mut gst::ffi::GstMetaInfo)
                            .expect(concat!("registering ", $impl_name)),
                        )
                    });
                INFO.0.as_ptr()
            }
        }

        unsafe impl gst::MetaAPI for $name {
            type GstType = $crate::gst::arc_meta::RawArcMeta<$value>;

            fn meta_api() -> gst::glib::Type {
                use gst::glib::translate::FromGlib;
                static TYPE: std::sync::LazyLock<gst::glib::Type> =
                    std::sync::LazyLock::new(|| unsafe {
                        let t = gst::glib::Type::from_glib(gst::ffi::gst_meta_api_type_register(
                            concat!($api, "\0").as_ptr() as *const _,
                            [std::ptr::null::<std::os::raw::c_char>()].as_ptr() as *mut *const _,
                        ));
                        assert_ne!(t, gst::glib::Type::INVALID);
                        t
                    });
                *TYPE
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("value", self.value())
                    .finish()
            }
        }
    };
}
pub(crate) use arc_meta;
