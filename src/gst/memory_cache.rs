//! Values kept on a `GstMemory` for as long as it lives: the import of a
//! DMA-BUF memory into a device is made once and found again when a buffer
//! pool hands the same memory (the same fd) back, and it is dropped, freeing
//! its GPU objects, when GStreamer frees the memory. The value lives in the
//! memory's qdata with a destroy notify; GStreamer's memories are not
//! subclassable from Rust, and a side table keyed by pointer could not tell
//! a freed memory from a new one at the same address.

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use gst::glib;
use gst::glib::translate::IntoGlib;

/// Serialises finding-or-creating the slot on a memory, so two elements
/// reading the same buffer never both attach one (the second would free the
/// first's while it is in use). Held only for the qdata look-up itself.
static ATTACH: Mutex<()> = Mutex::new(());

/// Every value of type `T` cached on one memory, one per device at most.
type Slot<T> = Mutex<Vec<Arc<T>>>;

/// How many values (devices) one memory keeps: a pipeline has one device,
/// a handful when elements pick their own; older ones are let go first.
const MAX_PER_MEMORY: usize = 4;

/// The `T` cached on `memory` for which `fits` holds, or the one `make`
/// returns, cached there from now on. `make` runs at most once per call and
/// never while another thread makes one for the same memory.
pub fn get_or_make<T, E>(
    memory: &gst::MemoryRef,
    fits: impl Fn(&T) -> bool,
    make: impl FnOnce() -> Result<Arc<T>, E>,
) -> Result<Arc<T>, E>
where
    T: Send + Sync + 'static,
{
    let slot = slot::<T>(memory);
    let mut values = slot.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = values.iter().find(|v| fits(v)) {
        return Ok(v.clone());
    }
    let v = make()?;
    if values.len() >= MAX_PER_MEMORY {
        values.remove(0);
    }
    values.push(v.clone());
    Ok(v)
}

/// The number of `T` values cached on `memory`.
#[cfg(test)]
pub fn count<T: Send + Sync + 'static>(memory: &gst::MemoryRef) -> usize {
    let slot = slot::<T>(memory);
    let n = slot.lock().unwrap_or_else(|p| p.into_inner()).len();
    n
}

/// The quark naming `T`'s slot: one per type, so a slot is only ever read
/// back as the type it was made as.
fn quark<T: 'static>() -> glib::Quark {
    glib::Quark::from_str(format!("wgnn-cache-{}", std::any::type_name::<T>()))
}

fn slot<T: Send + Sync + 'static>(memory: &gst::MemoryRef) -> Arc<Slot<T>> {
    let object = memory.as_ptr() as *mut gst::ffi::GstMiniObject;
    let quark = quark::<T>().into_glib();
    let _attach = ATTACH.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: `memory` is alive for the whole call (we borrow it); the data
    // under this quark is only ever set below, as a `Box<Arc<Slot<T>>>` of
    // this very `T` (the quark names the type), and only replaced never:
    // set once while absent, under ATTACH, freed by GStreamer's destroy
    // notify when the memory is freed, which cannot happen while we hold a
    // reference to it.
    unsafe {
        let data = gst::ffi::gst_mini_object_get_qdata(object, quark) as *const Arc<Slot<T>>;
        if let Some(slot) = data.as_ref() {
            return slot.clone();
        }
        let slot: Arc<Slot<T>> = Arc::new(Mutex::new(Vec::new()));
        let boxed = Box::into_raw(Box::new(slot.clone()));
        gst::ffi::gst_mini_object_set_qdata(
            object,
            quark,
            boxed as *mut c_void,
            Some(free_slot::<T>),
        );
        slot
    }
}

unsafe extern "C" fn free_slot<T: Send + Sync + 'static>(data: glib::ffi::gpointer) {
    // SAFETY: `data` is the `Box<Arc<Slot<T>>>` `slot` leaked for this
    // quark; GStreamer calls this once, when the memory is freed.
    drop(unsafe { Box::from_raw(data as *mut Arc<Slot<T>>) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(u32, Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn values_are_found_again_and_freed_with_the_memory() {
        gst::init().unwrap();
        let dropped = Arc::new(AtomicUsize::new(0));
        let memory = gst::Memory::with_size(16);
        let mut made = 0;
        for _ in 0..3 {
            let v = get_or_make::<Counted, ()>(
                &memory,
                |c| c.0 == 7,
                || {
                    made += 1;
                    Ok(Arc::new(Counted(7, dropped.clone())))
                },
            )
            .unwrap();
            assert_eq!(v.0, 7);
        }
        assert_eq!(made, 1, "the cached value is reused");
        // Another device's value sits beside it.
        let other = get_or_make::<Counted, ()>(
            &memory,
            |c| c.0 == 8,
            || Ok(Arc::new(Counted(8, dropped.clone()))),
        )
        .unwrap();
        assert_eq!(other.0, 8);
        drop(other);
        assert_eq!(count::<Counted>(&memory), 2);
        // A copy of the memory handle shares the cache: it is the same memory.
        let same = memory.clone();
        assert_eq!(count::<Counted>(&same), 2);
        drop(same);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);
        drop(memory);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            2,
            "freeing the memory drops its values"
        );
    }

    #[test]
    fn a_failed_make_caches_nothing_and_old_values_are_let_go() {
        gst::init().unwrap();
        let dropped = Arc::new(AtomicUsize::new(0));
        let memory = gst::Memory::with_size(16);
        let e = get_or_make::<Counted, &str>(&memory, |_| true, || Err("no"));
        assert_eq!(e.err(), Some("no"));
        assert_eq!(count::<Counted>(&memory), 0);
        for k in 0..(MAX_PER_MEMORY as u32 + 2) {
            get_or_make::<Counted, ()>(
                &memory,
                |c| c.0 == k,
                || Ok(Arc::new(Counted(k, dropped.clone()))),
            )
            .unwrap();
        }
        assert_eq!(count::<Counted>(&memory), MAX_PER_MEMORY);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
    }
}
