//! The process's shared model instances by id (`model-instance-id`) and
//! place (the CPU, or one GPU adapter): the first user makes one, later
//! users with the same id on the same place join it as long as they ask for
//! the same model, device and batching, and it lives until the last of them
//! lets go. Users on different GPUs (`gpu=0`, `gpu=1`) share nothing: each
//! adapter gets its own instance of the id.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex, Weak};

use crate::error::Error;
use crate::models::Model;
use crate::tasks::Device;

use super::{BatchOptions, ModelInstance};

/// Where an instance runs, as far as sharing goes: two devices on one
/// adapter are one place (and cannot share an instance: an error says so).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    Cpu,
    Adapter(usize),
}

impl Place {
    fn of(device: &Device) -> Place {
        match device {
            Device::Cpu => Place::Cpu,
            Device::Gpu(g) => Place::Adapter(g.index()),
        }
    }
}

/// The instances by id and place.
type Instances = HashMap<(String, Place), Weak<ModelInstance>>;

static INSTANCES: LazyLock<Mutex<Instances>> = LazyLock::new(Mutex::default);

/// What a user asks of a shared instance.
#[derive(Clone, Debug)]
pub struct InstanceSpec<'a> {
    pub id: &'a str,
    /// The model file: a joining user must name the same file.
    pub model: &'a Path,
    pub device: &'a Device,
    pub batch: BatchOptions,
    /// The user (an element's name), named in the errors of later users.
    pub user: &'a str,
}

/// Why [`join`] failed.
#[derive(Debug)]
pub enum JoinError<E> {
    /// `load` failed.
    Load(E),
    /// The instance exists with another model, device or batching, or
    /// cannot be made (a batch size the model or device cannot take).
    Instance(Error),
}

/// A live instance `id` on adapter `adapter` (its place in
/// [`crate::gpu::list_adapters`]), or anywhere when `None` (a GPU's before
/// the CPU's, the first adapter's first), if there is one: for a user that
/// wants its device before joining.
pub fn find(id: &str, adapter: Option<usize>) -> Option<Arc<ModelInstance>> {
    let instances = INSTANCES.lock().unwrap();
    let mut found: Vec<(Place, Arc<ModelInstance>)> = instances
        .iter()
        .filter(|((i, place), _)| i == id && adapter.is_none_or(|a| *place == Place::Adapter(a)))
        .filter_map(|((_, place), w)| Some((*place, w.upgrade()?)))
        .collect();
    found.sort_by_key(|(place, _)| match place {
        Place::Adapter(a) => *a,
        Place::Cpu => usize::MAX,
    });
    found.into_iter().next().map(|(_, i)| i)
}

/// Joins instance `spec.id`, or makes it with the model `load` gives. The
/// registry stays locked while loading, so two users starting at once make
/// one instance.
pub fn join<E>(
    spec: &InstanceSpec<'_>,
    load: impl FnOnce() -> Result<Model, E>,
) -> Result<Arc<ModelInstance>, JoinError<E>> {
    let mut instances = INSTANCES.lock().unwrap();
    instances.retain(|_, w| w.strong_count() > 0);
    let key = (spec.id.to_string(), Place::of(spec.device));
    if let Some(existing) = instances.get(&key).and_then(Weak::upgrade) {
        check(&existing, spec).map_err(JoinError::Instance)?;
        return Ok(existing);
    }
    let model = load().map_err(JoinError::Load)?;
    let instance = ModelInstance::new(
        Some(spec.id.to_string()),
        spec.user,
        spec.device,
        Arc::new(model),
        spec.batch,
    )
    .map_err(JoinError::Instance)?;
    instances.insert(key, Arc::downgrade(&instance));
    Ok(instance)
}

/// Whether `spec` may join `existing`; the error names the instance, who
/// made it and what differs.
fn check(existing: &ModelInstance, spec: &InstanceSpec<'_>) -> Result<(), Error> {
    let differs = |what: String| {
        Error::invalid(format!(
            "model-instance-id '{}' is {}'s, {what}",
            spec.id, existing.owner
        ))
    };
    if !same_file(existing.path(), spec.model) {
        return Err(differs(format!(
            "with model {}, not {}",
            existing.path().display(),
            spec.model.display()
        )));
    }
    let same_device = match (existing.device(), spec.device) {
        (Device::Cpu, Device::Cpu) => true,
        (Device::Gpu(a), Device::Gpu(b)) => a.id() == b.id(),
        _ => false,
    };
    if !same_device {
        return Err(differs(format!(
            "on {}; this element's device is {} (elements share an instance on one device: \
             share the pipelines' wgnn.wgpu.device context)",
            describe(existing.device()),
            describe(spec.device)
        )));
    }
    let (a, b) = (existing.batch(), spec.batch);
    if a.size != b.size {
        return Err(differs(format!(
            "with batch-size {}, not {}",
            a.size, b.size
        )));
    }
    if a.max_latency != b.max_latency {
        return Err(differs(format!(
            "with max-batch-latency {} ms, not {} ms",
            a.max_latency.as_millis(),
            b.max_latency.as_millis()
        )));
    }
    Ok(())
}

fn describe(device: &Device) -> String {
    match device {
        Device::Cpu => "the CPU".into(),
        Device::Gpu(g) => format!("GPU device {:#x} ({})", g.id(), g.info().name),
    }
}

/// Whether two paths name one file (the same path, or the same file
/// reached through links or `..`).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}
