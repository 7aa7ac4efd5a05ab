//! What the model elements (the subclasses of
//! [`WgnnModelElement`](crate::gst::model_element::WgnnModelElement)) share
//! around their task: starting (the model loaded and checked, the device
//! chosen and opened), stopping, the bus error that stops a stream, and
//! moving a frame in and out in either memory.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use gst_video::prelude::*;

use crate::gpu::{Gpu, TransferStats};
use crate::gst::device::DeviceSlot;
use crate::gst::device_choice::DeviceChoice;
use crate::gst::frame_meta::buffer_for;
use crate::gst::frame_meter::FrameMeter;
use crate::gst::instance::{InstanceSettings, InstanceUse};
use crate::gst::profile::ModelClock;
use crate::gst::property;
use crate::gst::{caps, frames};
use crate::models::{self, Model};
use crate::tasks::instance::registry::{self, InstanceSpec, JoinError};
use crate::tasks::{Device, ModelInstance};
use crate::video::cpu::CpuFrame;
use crate::video::{GpuFrame, TexturePool};

/// What `start` settled: the model instance (shared with other elements by
/// `model-instance-id`, or the element's own), its model, and where the task
/// runs.
pub struct Started {
    pub instance: Arc<ModelInstance>,
    pub model: Arc<Model>,
    pub device: Device,
}

/// The part of a processing element that is the same in all of them: its
/// debug category, its handle on the pipeline's device, its counters and
/// latency, its place among its model instance's users, and what `start`
/// settled.
pub struct Processing {
    pub cat: gst::DebugCategory,
    pub slot: DeviceSlot,
    pub meter: FrameMeter,
    pub users: InstanceUse,
    /// `profile` and `gpu-ms` (of the elements that register them).
    pub clock: ModelClock,
    started: Mutex<Option<Arc<Started>>>,
}

impl Processing {
    pub fn new(cat: gst::DebugCategory) -> Self {
        Processing {
            cat,
            slot: DeviceSlot::default(),
            meter: FrameMeter::default(),
            users: InstanceUse::default(),
            clock: ModelClock::default(),
            started: Mutex::new(None),
        }
    }

    /// `BaseTransformImpl::start`: resets the counters, settles the device
    /// as `choice` says, and loads the model at `path` (or joins the
    /// element's model instance `instance.id`, whose device a pipeline
    /// without one of its own takes) and runs `check` on it (does it fit
    /// the element?). Fails the state change with the reason, in one line
    /// naming the model once.
    pub fn start(
        &self,
        element: &gst::Element,
        path: &Path,
        choice: DeviceChoice,
        instance: &InstanceSettings,
        check: impl FnOnce(&Model) -> crate::Result<()>,
    ) -> Result<Arc<Started>, gst::ErrorMessage> {
        self.meter.reset();
        self.clock.reset();
        let batch = instance.batch();
        let shared = instance.id.as_deref();
        // The instance on the adapter `gpu` names (any, when it names none).
        let adapter = self.slot.wanted_adapter().ok().flatten();
        if let Some(gpu) = shared
            .and_then(|id| registry::find(id, adapter))
            .and_then(|i| i.device().gpu().cloned())
        {
            self.slot.prefer(gpu);
        }
        let device = Device::from(choice.open(&self.slot, element, self.cat)?);
        let instance = match shared {
            Some(id) => {
                let name = element.name();
                let spec = InstanceSpec {
                    id,
                    model: path,
                    device: &device,
                    batch,
                    user: name.as_str(),
                };
                registry::join(&spec, || load_model(path)).map_err(|e| match e {
                    JoinError::Load(e) => e,
                    JoinError::Instance(e) => instance_error(path, &e),
                })?
            }
            None => {
                let model = Arc::new(load_model(path)?);
                ModelInstance::with_batch(&device, model, batch)
                    .map_err(|e| instance_error(path, &e))?
            }
        };
        let model = instance.model().clone();
        check(&model).map_err(|e| unusable_model(path, &e))?;
        if batch.size > 1 {
            self.meter.set_latency_floor(batch.max_latency);
        }
        gst::info!(
            self.cat,
            obj = element,
            "model {} on the {}{}",
            path.display(),
            device.describe(),
            match shared {
                Some(id) => format!(
                    ", instance '{id}' (batch size {}, {} ms)",
                    batch.size,
                    batch.max_latency.as_millis()
                ),
                None if batch.size > 1 => format!(", batch size {}", batch.size),
                None => String::new(),
            }
        );
        self.users.set(instance.member());
        let started = Arc::new(Started {
            instance,
            model,
            device,
        });
        *self.started.lock().unwrap() = Some(started.clone());
        Ok(started)
    }

    /// `BaseTransformImpl::stop`: forgets the model and the device choice
    /// and leaves the model instance (freed with its last user).
    pub fn stop(&self) {
        self.started.lock().unwrap().take();
        self.users.clear();
    }

    /// The value of a property every processing element shares: the
    /// counters ([`FrameMeter`]), the instance's `batches` and
    /// `batched-frames`, `profile` / `gpu-ms`, and `gpu` / `gpu-used`;
    /// `None` for other names.
    pub fn property(&self, name: &str) -> Option<gst::glib::Value> {
        // On the CPU no GPU is used, whatever device the context offered.
        if name == "gpu-used" && self.started().is_some_and(|s| s.device.is_cpu()) {
            return Some(String::new().to_value());
        }
        self.meter
            .property(name)
            .or_else(|| self.users.property(name))
            .or_else(|| self.clock.property(name))
            .or_else(|| self.slot.property(name))
    }

    pub fn started(&self) -> Option<Arc<Started>> {
        self.started.lock().unwrap().clone()
    }

    /// Whether frames stay in system memory: once started, whether the task
    /// runs on the CPU; before, whether `choice` asks for the CPU, so that a
    /// pipeline needing texture memory fails to link rather than at the
    /// first frame.
    pub fn on_cpu(&self, choice: DeviceChoice) -> bool {
        match &*self.started.lock().unwrap() {
            Some(s) => s.device.is_cpu(),
            None => choice == DeviceChoice::Cpu,
        }
    }

    /// The pipeline's GPU, for a frame that arrives while the task runs
    /// there.
    pub fn gpu(&self) -> Result<Gpu, gst::FlowError> {
        self.slot.get().ok_or(gst::FlowError::NotNegotiated)
    }

    /// `ElementImpl::set_context`'s share: takes the pipeline's device.
    pub fn set_context(&self, context: &gst::Context) {
        self.slot.set_context(context);
    }

    /// `BaseTransformImpl::query`: the device context from the slot,
    /// everything else from `parent`, with the processing time added to
    /// latency answers.
    pub fn query(
        &self,
        direction: gst::PadDirection,
        query: &mut gst::QueryRef,
        parent: impl FnOnce(&mut gst::QueryRef) -> bool,
    ) -> bool {
        self.meter.query(&self.slot, direction, query, parent)
    }

    /// Gives `out` its input's timing and flags (and a hold on the input
    /// when its frame was imported) and counts the frame.
    pub fn frame_done(
        &self,
        element: &gst::Element,
        inbuf: &gst::BufferRef,
        out: &mut gst::Buffer,
        moved: &TransferStats,
        began: Instant,
    ) -> Result<(), gst::FlowError> {
        frames::copy_timing(inbuf, out)?;
        frames::hold_imported(inbuf, out, moved);
        self.meter
            .frame_done(self.cat, element, inbuf.pts(), moved, began);
        Ok(())
    }

    /// `BaseTransformImpl::transform_caps` of an element whose frames pass
    /// through (`wgnninfer`, `wgnndetect`, `wgnnclassify`): the parent's
    /// answer `out`, less its texture caps when the element runs on the CPU
    /// (`on_cpu`), saying why.
    pub fn pass_through_caps(
        &self,
        element: &gst::Element,
        on_cpu: bool,
        out: gst::Caps,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> gst::Caps {
        if !on_cpu {
            return out;
        }
        self.explain_refused_textures(element, caps, filter);
        crate::gst::caps::without_textures(&out)
    }

    /// Logs that texture caps are refused because the element runs on the
    /// CPU, when `caps` or `filter` carry them: a link or negotiation that
    /// needed texture memory fails with a bare "could not link" or
    /// not-negotiated, so say why here.
    pub fn explain_refused_textures(
        &self,
        element: &gst::Element,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) {
        let has_texture = |c: &gst::Caps| {
            !c.is_any()
                && c.iter_with_features()
                    .any(|(_, f)| f.contains(crate::gst::frame_meta::CAPS_FEATURE_WGPU_TEXTURE))
        };
        if has_texture(caps) || filter.is_some_and(has_texture) {
            gst::debug!(
                self.cat,
                obj = element,
                "device=cpu takes system memory only: refusing memory:WgpuTexture caps"
            );
        }
    }
}

/// Loads the model at `path`, or says in one line why not: a missing or
/// unreadable file is a resource error, a file that is no model (or one
/// wgnn cannot run) a format error. The path is named once; the loader's
/// whole message goes to the debug text.
pub fn load_model(path: &Path) -> Result<Model, gst::ErrorMessage> {
    // Opened here only to say early why it cannot be read; a FIFO or a
    // device is refused without being opened (the open would block).
    if let Err(e) = crate::files::open_regular(path) {
        let domain = if e.kind() == std::io::ErrorKind::NotFound {
            gst::ResourceError::NotFound
        } else {
            gst::ResourceError::OpenRead
        };
        return Err(gst::error_msg!(
            domain,
            (
                "cannot load model {}: {}",
                path.display(),
                property::io_cause(&e)
            ),
            ["{}", e]
        ));
    }
    // A match, not map_err: the debug text names the function the error
    // was made in, and a closure's name is noise there.
    match models::load(path) {
        // The elements' tasks read real scores and boxes, also from a
        // full-integer TFLite model's int8 or uint8 edges.
        Ok(model) => Ok(model.with_real_io()),
        Err(e) => Err(gst::error_msg!(
            gst::StreamError::Format,
            (
                "cannot load model {}: {}",
                path.display(),
                first_line(&property::cause(&e, path))
            ),
            ["{}", e]
        )),
    }
}

/// The settings error of a model instance that cannot be made or joined
/// (another model, device or batching under the same id; a batch size the
/// model or device cannot take).
pub fn instance_error(path: &Path, e: &crate::Error) -> gst::ErrorMessage {
    let e = e.to_string();
    gst::error_msg!(
        gst::LibraryError::Settings,
        ("cannot use model {}: {}", path.display(), first_line(&e)),
        ["{}", e]
    )
}

/// The settings error of a model that loads but does not fit the element
/// (or its settings), naming it once.
pub fn unusable_model(path: &Path, e: &crate::Error) -> gst::ErrorMessage {
    gst::error_msg!(
        gst::LibraryError::Settings,
        (
            "cannot load model {}: {}",
            path.display(),
            first_line(&property::cause(e, path))
        ),
        ["{}", e]
    )
}

/// The settings error of `e` (a model-proc, labels or other file the
/// element reads besides the model): its first line, the whole of it as the
/// debug text.
pub fn settings_error(e: &crate::Error) -> gst::ErrorMessage {
    let e = e.to_string();
    gst::error_msg!(
        gst::LibraryError::Settings,
        ("{}", first_line(&e)),
        ["{}", e]
    )
}

/// The first line of a message that may have several (wgpu's validation
/// errors do): the bus message is one line, the rest goes to the debug
/// text.
pub fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default().trim_end_matches(':')
}

/// Posts "`what`: `e`" (its first line; the whole of it as the debug text)
/// as a stream error on the bus and returns the flow error that stops the
/// stream.
pub fn fail(element: &gst::Element, what: &str, e: impl std::fmt::Display) -> gst::FlowError {
    let e = e.to_string();
    gst::element_error!(
        element,
        gst::StreamError::Failed,
        ("{}: {}", what, first_line(&e)),
        ["{}", e]
    );
    gst::FlowError::Error
}

/// The GPU frame of `inbuf` (negotiated as `input`): its texture frame, an
/// import of its DMA-BUFs, or one counted upload of its system memory,
/// added to `moved`.
pub fn gpu_frame_in(
    element: &gst::Element,
    gpu: &Gpu,
    uploads: &TexturePool,
    input: &frames::Intake,
    inbuf: &gst::BufferRef,
    moved: &mut TransferStats,
) -> Result<Arc<GpuFrame>, gst::FlowError> {
    let (frame, m) = frames::frame_in(element, gpu, uploads, input, inbuf)
        .map_err(|e| fail(element, "cannot take the input frame", e))?;
    *moved += m;
    Ok(frame)
}

/// The output buffer of `frame`: the frame itself in texture memory, or one
/// counted read-back into system memory laid out as `info`, added to
/// `moved`.
pub fn gpu_frame_out(
    element: &gst::Element,
    gpu: &Gpu,
    frame: GpuFrame,
    info: &gst_video::VideoInfo,
    texture: bool,
    moved: &mut TransferStats,
) -> Result<gst::Buffer, gst::FlowError> {
    if texture {
        return Ok(buffer_for(Arc::new(frame)));
    }
    let (b, m) = frames::download(gpu, &frame, info)
        .map_err(|e| fail(element, "cannot read the result back", e))?;
    *moved += m;
    Ok(b)
}

/// Maps `inbuf` as the negotiated video `info` and hands it to `f` as a
/// CPU frame.
pub fn with_cpu_frame<R>(
    element: &gst::Element,
    info: &gst_video::VideoInfo,
    inbuf: &gst::BufferRef,
    f: impl FnOnce(&CpuFrame) -> Result<R, gst::FlowError>,
) -> Result<R, gst::FlowError> {
    let bad = |e: &dyn std::fmt::Display| fail(element, "cannot take the input frame", e);
    let format = caps::video_format(info).map_err(|e| fail(element, "bad input caps", e))?;
    // A DMA-BUF memory is mapped here too; one larger than its fd must not be.
    frames::check_fd_sizes(inbuf).map_err(|e| bad(&e))?;
    let mapped = gst_video::VideoFrameRef::from_buffer_ref_readable(inbuf, info).map_err(|e| {
        bad(&format!(
            "a buffer of {} bytes cannot be mapped as a {format} {}x{} frame: {e}",
            inbuf.size(),
            info.width(),
            info.height()
        ))
    })?;
    let frame = (0..mapped.n_planes())
        .map(|p| {
            let stride = mapped.plane_stride()[p as usize];
            let stride = usize::try_from(stride)
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| {
                    crate::Error::invalid(format!(
                        "plane {p} has stride {stride}; it must be positive"
                    ))
                })?;
            let data = mapped
                .plane_data(p)
                .map_err(|e| crate::Error::invalid(format!("plane {p}: {e}")))?;
            Ok((data, stride))
        })
        .collect::<Result<Vec<_>, crate::Error>>()
        .and_then(|planes: Vec<(&[u8], usize)>| {
            CpuFrame::new(format, mapped.width(), mapped.height(), &planes)
        })
        .map_err(|e| bad(&e))?;
    f(&frame)
}

/// Maps `inbuf` as a CPU frame, runs `process` on it writing the RGBA rows
/// (and their stride) of a new system-memory buffer laid out as `out_info`,
/// and returns that buffer; a failure of `process` goes to the bus as
/// "`what_failed`: ...".
pub fn process_on_cpu(
    element: &gst::Element,
    in_info: &gst_video::VideoInfo,
    out_info: &gst_video::VideoInfo,
    inbuf: &gst::BufferRef,
    what_failed: &str,
    process: impl FnOnce(&CpuFrame, &mut [u8], usize) -> crate::Result<()>,
) -> Result<gst::Buffer, gst::FlowError> {
    with_cpu_frame(element, in_info, inbuf, |frame| {
        let mut out = gst::Buffer::with_size(out_info.size())
            .map_err(|e| fail(element, "cannot allocate the output frame", e))?;
        {
            let out = out.get_mut().expect("a new buffer is writable");
            let mut written = gst_video::VideoFrameRef::from_buffer_ref_writable(out, out_info)
                .map_err(|e| fail(element, "cannot map the output frame", e))?;
            let stride = written.plane_stride()[0] as usize;
            let data = written
                .plane_data_mut(0)
                .map_err(|e| fail(element, "cannot map the output frame", e))?;
            process(frame, data, stride).map_err(|e| fail(element, what_failed, e))?;
        }
        Ok(out)
    })
}
