//! One wgpu device per pipeline, shared through GStreamer's context protocol
//! (context type `wgnn.wgpu.device`), the way gst-gl and gst-cuda share
//! theirs: ask the neighbours with a context query, then the application and
//! bins with NEED_CONTEXT, and only then open a device and announce it with
//! HAVE_CONTEXT so that every later element finds the same one.
//!
//! An element whose `gpu` property names an adapter takes only a device on
//! that adapter, and announces the one it opens under a context type of that
//! adapter's own (`wgnn.wgpu.device.gpu1`): the elements asking for one GPU
//! share one device, those asking for another get another, and the
//! pipeline's default device (`wgnn.wgpu.device`) stays what the elements
//! without `gpu` agreed on.

use std::sync::{Mutex, OnceLock};

use gst::glib;
use gst::prelude::*;

use crate::gpu::{selector, Gpu, GpuOptions, GpuSelector};

pub const CONTEXT_TYPE: &str = "wgnn.wgpu.device";
const FIELD: &str = "device";

/// The device as a GValue inside a GstContext.
#[derive(Clone, glib::Boxed)]
#[boxed_type(name = "WgnnGpuDevice")]
pub struct SharedGpu(pub Gpu);

/// The context type a device on adapter `adapter` (its place in
/// [`crate::gpu::list_adapters`]) is announced under: the pipeline's
/// default one when no adapter was asked for.
fn context_type(adapter: Option<usize>) -> String {
    match adapter {
        None => CONTEXT_TYPE.to_string(),
        Some(i) => format!("{CONTEXT_TYPE}.gpu{i}"),
    }
}

/// A context carrying `gpu` as the pipeline's default device.
pub fn context_for(gpu: &Gpu) -> gst::Context {
    typed_context_for(CONTEXT_TYPE, gpu)
}

fn typed_context_for(context_type: &str, gpu: &Gpu) -> gst::Context {
    let mut context = gst::Context::new(context_type, true);
    context
        .get_mut()
        .unwrap()
        .structure_mut()
        .set(FIELD, SharedGpu(gpu.clone()));
    context
}

/// The device a context of ours carries (of the default type or an
/// adapter's).
pub fn gpu_from(context: &gst::ContextRef) -> Option<Gpu> {
    let ty = context.context_type();
    if ty != CONTEXT_TYPE && !ty.starts_with(&format!("{CONTEXT_TYPE}.gpu")) {
        return None;
    }
    context
        .structure()
        .get::<SharedGpu>(FIELD)
        .ok()
        .map(|s| s.0)
}

/// The adapters `gpu=N` counts in, found once per process: every element
/// resolves its `gpu` against the same list, and enumerating adapters makes
/// a wgpu instance each time.
fn listed() -> Result<&'static [wgpu::AdapterInfo], String> {
    static LISTED: OnceLock<Result<Vec<wgpu::AdapterInfo>, String>> = OnceLock::new();
    LISTED
        .get_or_init(|| {
            crate::gpu::list_adapters(&GpuOptions::from_env()).map_err(|e| e.to_string())
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// An element's handle on the shared device, and the adapter its `gpu`
/// property asks for.
#[derive(Default)]
pub struct DeviceSlot {
    current: Mutex<Option<Gpu>>,
    preferred: Mutex<Option<Gpu>>,
    wanted: Mutex<Option<GpuSelector>>,
}

impl DeviceSlot {
    /// The `gpu` and `gpu-used` ParamSpecs, new for each class (a GObject
    /// class owns the ParamSpecs it installs).
    pub fn properties() -> Vec<glib::ParamSpec> {
        vec![
            glib::ParamSpecString::builder("gpu")
                .nick("GPU")
                .blurb(
                    "The GPU adapter to run on: its index in `wgnn-bench adapters`, or a \
                     case-insensitive piece of its name, driver, PCI bus id or vendor:device \
                     id (the first match). Empty: the pipeline's device. A device=auto element \
                     with a gpu runs on it even when it is a software one",
                )
                .default_value(Some(""))
                .mutable_ready()
                .build(),
            glib::ParamSpecString::builder("gpu-used")
                .nick("GPU used")
                .blurb(
                    "The adapter the element runs on, once started: index 'name' (backend, \
                     PCI bus id); empty on the CPU or before start",
                )
                .read_only()
                .build(),
        ]
    }

    /// `ObjectImpl::property`'s share: `gpu` and `gpu-used`, `None` for
    /// other names.
    pub fn property(&self, name: &str) -> Option<glib::Value> {
        match name {
            "gpu" => Some(
                match &*self.wanted.lock().unwrap() {
                    Some(GpuSelector::Index(i)) => i.to_string(),
                    Some(GpuSelector::Match(text)) => text.clone(),
                    None => String::new(),
                }
                .to_value(),
            ),
            "gpu-used" => Some(
                self.get()
                    .map(|g| selector::describe(g.index(), g.info()))
                    .unwrap_or_default()
                    .to_value(),
            ),
            _ => None,
        }
    }

    /// `ObjectImpl::set_property`'s share (refused with a warning while
    /// `element` runs); false for other names.
    pub fn set_property(
        &self,
        element: &gst::Element,
        pspec: &glib::ParamSpec,
        value: &glib::Value,
    ) -> bool {
        if pspec.name() != "gpu" {
            return false;
        }
        if crate::gst::property::refused_while_running(element, pspec) {
            return true;
        }
        let text = value
            .get::<Option<String>>()
            .ok()
            .flatten()
            .unwrap_or_default();
        *self.wanted.lock().unwrap() = GpuSelector::parse(&text);
        true
    }

    /// Whether `gpu` names an adapter.
    pub fn selected(&self) -> bool {
        self.wanted.lock().unwrap().is_some()
    }

    /// The place of the adapter `gpu` names in
    /// [`crate::gpu::list_adapters`]; `None` when it names none (any device
    /// will do).
    pub fn wanted_adapter(&self) -> crate::Result<Option<usize>> {
        let Some(wanted) = self.wanted.lock().unwrap().clone() else {
            return Ok(None);
        };
        let listed = listed().map_err(crate::Error::NoAdapter)?;
        wanted.pick(listed).map(Some)
    }

    /// Whether `gpu` will do for this element: on the adapter its `gpu`
    /// names, if it names one.
    fn fits(&self, gpu: &Gpu) -> bool {
        match self.wanted_adapter() {
            Ok(None) => true,
            Ok(Some(i)) => gpu.index() == i,
            Err(_) => false,
        }
    }

    /// The device [`DeviceSlot::ensure`] takes rather than opening one when
    /// neither the neighbours nor the application have one: a shared model
    /// instance's, so that pipelines sharing an instance share its device.
    pub fn prefer(&self, gpu: Gpu) {
        *self.preferred.lock().unwrap() = Some(gpu);
    }

    pub fn get(&self) -> Option<Gpu> {
        self.current.lock().unwrap().clone()
    }

    /// For `ElementImpl::set_context`: takes the pipeline's default device,
    /// or the device of the adapter `gpu` names (from its own context or
    /// the default one).
    pub fn set_context(&self, context: &gst::Context) {
        let ty = context.context_type();
        let own = match self.wanted_adapter() {
            Ok(adapter) => ty == CONTEXT_TYPE || ty == context_type(adapter),
            Err(_) => false,
        };
        if let Some(gpu) = gpu_from(context).filter(|g| own && self.fits(g)) {
            self.current.lock().unwrap().get_or_insert(gpu);
        }
    }

    pub fn clear(&self) {
        self.current.lock().unwrap().take();
    }

    /// For pad query handlers: answers a context query with our device (a
    /// query for an adapter's context only when it is on that adapter).
    /// Returns true when the query was answered.
    pub fn answer(&self, query: &mut gst::QueryRef) -> bool {
        let gst::QueryViewMut::Context(q) = query.view_mut() else {
            return false;
        };
        let Some(gpu) = self.get() else {
            return false;
        };
        let ty = q.context_type().to_string();
        if ty != CONTEXT_TYPE && ty != context_type(Some(gpu.index())) {
            return false;
        }
        q.set_context(&typed_context_for(&ty, &gpu));
        true
    }

    /// Finds the pipeline's device (on the adapter `gpu` names, if it
    /// names one) or opens one: peers first (downstream, then upstream),
    /// then NEED_CONTEXT, then a new device announced with HAVE_CONTEXT.
    /// Logs under the element's category `cat`.
    pub fn ensure(
        &self,
        element: &gst::Element,
        cat: gst::DebugCategory,
    ) -> Result<Gpu, gst::ErrorMessage> {
        // Taken whatever happens, so that a later start does not find it.
        let preferred = self.preferred.lock().unwrap().take();
        let adapter = self.wanted_adapter().map_err(open_error)?;
        let own_type = context_type(adapter);
        if let Some(gpu) = self.get() {
            if self.fits(&gpu) {
                return Ok(gpu);
            }
            self.clear();
        }
        let mut pads = element.src_pads();
        pads.extend(element.sink_pads());
        for pad in pads {
            let mut query = gst::query::Context::new(CONTEXT_TYPE);
            if pad.peer_query(&mut query) {
                if let Some(gpu) = query.context().and_then(gpu_from).filter(|g| self.fits(g)) {
                    gst::debug!(
                        cat,
                        obj = element,
                        "using the device of a neighbour: {}",
                        gpu.describe()
                    );
                    let gpu = self.current.lock().unwrap().get_or_insert(gpu).clone();
                    element.set_context(&typed_context_for(&own_type, &gpu));
                    return Ok(gpu);
                }
            }
        }
        // An adapter's own context first, then the pipeline's default
        // device, which will do when it is on that adapter.
        let mut types = vec![own_type.clone()];
        if adapter.is_some() {
            types.push(CONTEXT_TYPE.to_string());
        }
        for ty in types {
            let _ =
                element.post_message(gst::message::NeedContext::builder(&ty).src(element).build());
            if let Some(gpu) = self.get() {
                return Ok(gpu);
            }
        }
        let gpu = match preferred.filter(|g| self.fits(g)) {
            Some(gpu) => {
                gst::debug!(
                    cat,
                    obj = element,
                    "using the device of the model instance: {}",
                    gpu.describe()
                );
                Ok(gpu)
            }
            None => match adapter {
                None => Gpu::new(),
                Some(i) => Gpu::with_options(&GpuOptions {
                    selector: Some(GpuSelector::Index(i)),
                    ..GpuOptions::from_env()
                }),
            },
        };
        let gpu = gpu.map_err(open_error)?;
        gst::info!(cat, obj = element, "opened {}", gpu.describe());
        let gpu = self.current.lock().unwrap().get_or_insert(gpu).clone();
        let context = typed_context_for(&own_type, &gpu);
        element.set_context(&context);
        let _ = element.post_message(
            gst::message::HaveContext::builder(context)
                .src(element)
                .build(),
        );
        Ok(gpu)
    }
}

/// The bus error for a device that cannot be opened: one line naming the
/// cause, the adapters listed when `gpu` names none of them.
fn open_error(e: crate::Error) -> gst::ErrorMessage {
    let domain = match e {
        crate::Error::NoAdapter(_) => gst::ResourceError::NotFound,
        _ => gst::ResourceError::OpenReadWrite,
    };
    let e = e.to_string();
    gst::error_msg!(
        domain,
        ("{}", crate::gst::element::first_line(&e)),
        ["{}", e]
    )
}
