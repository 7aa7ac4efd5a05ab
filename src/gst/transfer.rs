//! What `wgnnupload` and `wgnndownload` share: elements that only move a
//! frame between memories, one buffer out per buffer in, on one device found
//! through the GstContext protocol, counting every byte they move.

use std::sync::Mutex;

use gst::glib;
use gst::prelude::*;
use gst_base::subclass::base_transform::{InputBuffer, PrepareOutputBufferSuccess};

use crate::gpu::{Gpu, TransferStats};
use crate::gst::device::DeviceSlot;
use crate::gst::stats::Stats;

/// The device and the counters of a transfer element.
#[derive(Default)]
pub struct Transfer {
    device: DeviceSlot,
    stats: Stats,
    /// Why `set_caps` refused the caps it was last given.
    refusal: Mutex<Option<String>>,
    /// The caps last refused (as text), whose reason was said.
    refused_caps: Mutex<Option<String>>,
}

impl Transfer {
    /// The counters' ParamSpecs: new ones for each class, since a GObject
    /// class owns the ParamSpecs it installs.
    pub fn properties() -> Vec<glib::ParamSpec> {
        let mut props = Stats::properties();
        props.extend(DeviceSlot::properties());
        props
    }

    /// `ObjectImpl::property`.
    pub fn property(&self, pspec: &glib::ParamSpec) -> glib::Value {
        self.stats
            .property(pspec.name())
            .or_else(|| self.device.property(pspec.name()))
            .expect("only counters and the device are registered")
    }

    /// `ObjectImpl::set_property`: `gpu`, the only writable property.
    pub fn set_property(
        &self,
        element: &gst::Element,
        pspec: &glib::ParamSpec,
        value: &glib::Value,
    ) {
        self.device.set_property(element, pspec, value);
    }

    /// `ElementImpl::pad_templates`: `sink` caps in, `src` caps out.
    pub fn templates(sink: &gst::Caps, src: &gst::Caps) -> Vec<gst::PadTemplate> {
        [
            ("sink", gst::PadDirection::Sink, sink),
            ("src", gst::PadDirection::Src, src),
        ]
        .into_iter()
        .map(|(name, direction, caps)| {
            gst::PadTemplate::new(name, direction, gst::PadPresence::Always, caps)
                .expect("a static pad template")
        })
        .collect()
    }

    /// `ElementImpl::set_context`'s share: a device another element offers.
    pub fn set_context(&self, context: &gst::Context) {
        self.device.set_context(context);
    }

    /// `BaseTransformImpl::start`: counters from zero, the device opened or
    /// found.
    pub fn start(
        &self,
        element: &gst::Element,
        cat: gst::DebugCategory,
    ) -> Result<(), gst::ErrorMessage> {
        self.stats.reset();
        self.refused_caps.lock().unwrap().take();
        self.device.ensure(element, cat)?;
        Ok(())
    }

    /// `set_caps`'s refusal: `reason` is posted on the bus when the caps
    /// event fails (see [`Self::sink_event`]); the error returned is for the
    /// log.
    pub fn refuse(&self, cat: gst::DebugCategory, reason: String) -> gst::LoggableError {
        let e = gst::loggable_error!(cat, "{reason}");
        *self.refusal.lock().unwrap() = Some(reason);
        e
    }

    /// `BaseTransformImpl::sink_event`: `parent` handles `event`; where it
    /// refuses a caps event, the reason goes on the bus as an error, since
    /// GStreamer only logs a refused negotiation and the user would see a
    /// bare "not-negotiated": `set_caps`'s own reason, or which side's
    /// memory and format did not fit.
    pub fn sink_event(
        &self,
        element: &gst::Element,
        event: gst::Event,
        parent: impl FnOnce(gst::Event) -> bool,
    ) -> bool {
        let caps = match event.view() {
            gst::EventView::Caps(c) => Some(c.caps_owned()),
            _ => None,
        };
        self.refusal.lock().unwrap().take();
        let handled = parent(event);
        if let (false, Some(caps)) = (handled, caps) {
            if !self.first_refusal_of(&caps) {
                return false;
            }
            let reason = self
                .refusal
                .lock()
                .unwrap()
                .take()
                .unwrap_or_else(|| unmatched(element, &caps));
            gst::element_error!(element, gst::CoreError::Negotiation, ("{}", reason));
        }
        handled
    }

    /// `BaseTransformImpl::accept_caps` of the sink pad: `accepted` is the
    /// parent's answer for `caps`. GStreamer refuses a caps event whose
    /// accept-caps query fails before the element sees it, with a bare
    /// "not-negotiated", so a refusal is said here as a warning on the bus
    /// naming both sides' memories (once per caps: queries repeat).
    pub fn accept_caps(&self, element: &gst::Element, caps: &gst::Caps, accepted: bool) -> bool {
        if !accepted && self.first_refusal_of(caps) {
            gst::element_warning!(
                element,
                gst::CoreError::Negotiation,
                ("{}", unmatched(element, caps))
            );
        }
        accepted
    }

    /// Whether `caps` were not refused just before: a source sends its caps
    /// again with each buffer and at EOS, and the reason is said once.
    fn first_refusal_of(&self, caps: &gst::Caps) -> bool {
        let text = caps.to_string();
        let mut last = self.refused_caps.lock().unwrap();
        if last.as_deref() == Some(text.as_str()) {
            return false;
        }
        *last = Some(text);
        true
    }

    /// Whether `query` was a device query, answered.
    pub fn answer(&self, query: &mut gst::QueryRef) -> bool {
        self.device.answer(query)
    }

    /// `BaseTransformImpl::prepare_output_buffer`: `make` moves the input
    /// frame into a new buffer on the device (posting its error, see
    /// [`crate::gst::element::fail`]); the buffer gets the input's flags,
    /// timestamps and regions of interest, and the bytes moved are counted.
    pub fn output(
        &self,
        element: &gst::Element,
        cat: gst::DebugCategory,
        inbuf: InputBuffer,
        make: impl FnOnce(&Gpu, &gst::BufferRef) -> Result<(gst::Buffer, TransferStats), gst::FlowError>,
    ) -> Result<PrepareOutputBufferSuccess, gst::FlowError> {
        let inbuf: &gst::BufferRef = match &inbuf {
            InputBuffer::Writable(b) => b,
            InputBuffer::Readable(b) => b,
        };
        let gpu = self.device.get().ok_or(gst::FlowError::NotNegotiated)?;
        let (mut out, moved) = make(&gpu, inbuf)?;
        let outref = out.make_mut();
        inbuf
            .copy_into(
                outref,
                gst::BufferCopyFlags::FLAGS | gst::BufferCopyFlags::TIMESTAMPS,
                ..,
            )
            .map_err(|_| gst::FlowError::Error)?;
        crate::gst::roi::copy(inbuf, outref, (1.0, 1.0));
        let n = self.stats.frame(&moved);
        gst::debug!(
            cat,
            obj = element,
            "frame {n}: uploaded {} bytes, downloaded {} bytes, imported {} bytes",
            moved.upload_bytes,
            moved.download_bytes,
            moved.bytes_imported
        );
        Ok(PrepareOutputBufferSuccess::Buffer(out))
    }
}

/// Why no caps of `element` fit `caps` on its way in: its own sink pad or
/// what is downstream of it, each side's memories named.
fn unmatched(element: &gst::Element, caps: &gst::Caps) -> String {
    let name = element.name();
    let pad = |n| {
        element
            .static_pad(n)
            .expect("a transfer element has both pads")
    };
    let sink = pad("sink").pad_template_caps();
    if !sink.can_intersect(caps) {
        return format!(
            "{name} cannot take {caps}: it takes {} in {}",
            formats(&sink),
            crate::gst::caps::memories(&sink)
        );
    }
    let src = pad("src");
    let (peer, peer_caps) = match src.peer() {
        Some(p) => (
            p.parent_element().map_or_else(|| p.name(), |e| e.name()),
            p.query_caps(None),
        ),
        None => ("nothing".into(), gst::Caps::new_empty()),
    };
    format!(
        "{name} makes {} of {caps}, but {peer} downstream takes {} in {}",
        crate::gst::caps::memories(&src.pad_template_caps()),
        formats(&peer_caps),
        crate::gst::caps::memories(&peer_caps)
    )
}

/// The formats `caps` list, for messages.
fn formats(caps: &gst::CapsRef) -> String {
    let mut out: Vec<String> = Vec::new();
    for s in caps.iter() {
        let value = s.value("format").ok();
        let listed: Vec<String> = match value {
            None => vec!["any format".into()],
            Some(v) => match v.get::<gst::List>() {
                Ok(list) => list.iter().filter_map(|f| f.get::<String>().ok()).collect(),
                Err(_) => v.get::<String>().ok().into_iter().collect(),
            },
        };
        for f in listed {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    if out.is_empty() {
        "any format".into()
    } else {
        out.join(", ")
    }
}

/// What differs between the transfer elements; [`transfer_element!`] does
/// the rest.
pub trait Mover {
    /// `BaseTransformImpl::transform_caps`.
    fn caps_across(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> gst::Caps;

    /// `BaseTransformImpl::set_caps`: the negotiated caps taken, or why not
    /// (one line, posted on the bus).
    fn configure(&self, incaps: &gst::Caps, outcaps: &gst::Caps) -> Result<(), String>;

    /// The input frame moved into a new buffer on `gpu`, and the bytes moved;
    /// a failure is posted on the bus (see [`crate::gst::element::fail`]).
    fn move_frame(
        &self,
        gpu: &Gpu,
        inbuf: &gst::BufferRef,
    ) -> Result<(gst::Buffer, TransferStats), gst::FlowError>;

    /// `BaseTransformImpl::stop`'s share: per-stream state dropped.
    fn stopped(&self) {}

    /// The metas the element reads from upstream's buffers, for
    /// `propose_allocation`.
    fn propose(&self, _query: &mut gst::query::Allocation) {}
}

/// The subclass of a transfer element `$imp` (a struct with a
/// `transfer: Transfer` field, implementing [`Mover`], in a module with a
/// debug category `CAT`): a `GstBaseTransform` that makes a new buffer for
/// each one, with the counters and `gpu` / `gpu-used` as properties and the given metadata and
/// pad templates.
macro_rules! transfer_element {
    (
        $imp:ident,
        $wrapper:ty,
        $type_name:literal,
        $long_name:literal,
        $description:literal,
        sink: $sink:expr,
        src: $src:expr $(,)?
    ) => {
        #[glib::object_subclass]
        impl ObjectSubclass for $imp {
            const NAME: &'static str = $type_name;
            type Type = $wrapper;
            type ParentType = gst_base::BaseTransform;
        }

        impl ObjectImpl for $imp {
            fn properties() -> &'static [glib::ParamSpec] {
                static PROPS: std::sync::LazyLock<Vec<glib::ParamSpec>> =
                    std::sync::LazyLock::new($crate::gst::transfer::Transfer::properties);
                PROPS.as_ref()
            }

            fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
                self.transfer.property(pspec)
            }

            fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
                self.transfer
                    .set_property(self.obj().upcast_ref(), pspec, value)
            }
        }

        impl GstObjectImpl for $imp {}

        impl ElementImpl for $imp {
            fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
                static META: std::sync::LazyLock<gst::subclass::ElementMetadata> =
                    std::sync::LazyLock::new(|| {
                        gst::subclass::ElementMetadata::new(
                            $long_name,
                            "Filter/Video",
                            $description,
                            "wgnn developers",
                        )
                    });
                Some(&*META)
            }

            fn pad_templates() -> &'static [gst::PadTemplate] {
                static TEMPLATES: std::sync::LazyLock<Vec<gst::PadTemplate>> =
                    std::sync::LazyLock::new(|| {
                        $crate::gst::transfer::Transfer::templates(&$sink, &$src)
                    });
                TEMPLATES.as_ref()
            }

            fn set_context(&self, context: &gst::Context) {
                self.transfer.set_context(context);
                self.parent_set_context(context)
            }
        }

        impl BaseTransformImpl for $imp {
            const MODE: gst_base::subclass::BaseTransformMode =
                gst_base::subclass::BaseTransformMode::NeverInPlace;
            const PASSTHROUGH_ON_SAME_CAPS: bool = false;
            const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

            fn start(&self) -> Result<(), gst::ErrorMessage> {
                self.transfer.start(self.obj().upcast_ref(), *CAT)
            }

            fn stop(&self) -> Result<(), gst::ErrorMessage> {
                $crate::gst::transfer::Mover::stopped(self);
                Ok(())
            }

            fn transform_caps(
                &self,
                direction: gst::PadDirection,
                caps: &gst::Caps,
                filter: Option<&gst::Caps>,
            ) -> Option<gst::Caps> {
                Some($crate::gst::transfer::Mover::caps_across(
                    self, direction, caps, filter,
                ))
            }

            fn set_caps(
                &self,
                incaps: &gst::Caps,
                outcaps: &gst::Caps,
            ) -> Result<(), gst::LoggableError> {
                $crate::gst::transfer::Mover::configure(self, incaps, outcaps)
                    .map_err(|reason| self.transfer.refuse(*CAT, reason))
            }

            fn accept_caps(&self, direction: gst::PadDirection, caps: &gst::Caps) -> bool {
                let accepted = self.parent_accept_caps(direction, caps);
                if direction != gst::PadDirection::Sink {
                    return accepted;
                }
                self.transfer
                    .accept_caps(self.obj().upcast_ref(), caps, accepted)
            }

            fn sink_event(&self, event: gst::Event) -> bool {
                self.transfer
                    .sink_event(self.obj().upcast_ref(), event, |e| {
                        self.parent_sink_event(e)
                    })
            }

            fn query(&self, direction: gst::PadDirection, query: &mut gst::QueryRef) -> bool {
                self.transfer.answer(query)
                    || BaseTransformImplExt::parent_query(self, direction, query)
            }

            fn propose_allocation(
                &self,
                decide_query: Option<&gst::query::Allocation>,
                query: &mut gst::query::Allocation,
            ) -> Result<(), gst::LoggableError> {
                $crate::gst::transfer::Mover::propose(self, query);
                self.parent_propose_allocation(decide_query, query)
            }

            fn prepare_output_buffer(
                &self,
                inbuf: gst_base::subclass::base_transform::InputBuffer,
            ) -> Result<
                gst_base::subclass::base_transform::PrepareOutputBufferSuccess,
                gst::FlowError,
            > {
                let element = self.obj();
                self.transfer
                    .output(element.upcast_ref(), *CAT, inbuf, |gpu, inbuf| {
                        $crate::gst::transfer::Mover::move_frame(self, gpu, inbuf)
                    })
            }

            fn transform(
                &self,
                _inbuf: &gst::Buffer,
                _outbuf: &mut gst::BufferRef,
            ) -> Result<gst::FlowSuccess, gst::FlowError> {
                // The frame moved while the output buffer was prepared.
                Ok(gst::FlowSuccess::Ok)
            }
        }
    };
}
pub(crate) use transfer_element;
