//! Adapter choice: a hardware GPU first, a software one (lavapipe, llvmpipe)
//! only when there is nothing else, and the user's environment over both.

use crate::error::{Error, Result};

/// How to pick an adapter. [`GpuOptions::from_env`] reads the variables wgpu's
/// own tools honour, so that `WGPU_BACKEND=vulkan WGPU_ADAPTER_NAME=llvmpipe`
/// works the same for every wgnn program.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// Backends to look at; `None` means Vulkan/Metal/DX12 (wgpu's primary set).
    pub backends: Option<wgpu::Backends>,
    /// Case-insensitive substring the adapter's name must contain.
    pub adapter_name: Option<String>,
    /// Allow a software adapter when no hardware one exists.
    pub allow_software: bool,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            backends: None,
            adapter_name: None,
            allow_software: true,
        }
    }
}

impl GpuOptions {
    pub fn from_env() -> Self {
        GpuOptions {
            backends: std::env::var("WGPU_BACKEND")
                .ok()
                .filter(|s| !s.trim().is_empty())
                .map(|s| wgpu::Backends::from_comma_list(&s)),
            adapter_name: std::env::var("WGPU_ADAPTER_NAME")
                .ok()
                .filter(|s| !s.trim().is_empty()),
            allow_software: true,
        }
    }
}

pub struct AdapterChoice {
    pub instance: wgpu::Instance,
    pub adapter: wgpu::Adapter,
    pub software: bool,
}

pub(super) fn choose(options: &GpuOptions) -> Result<AdapterChoice> {
    let backends = options.backends.unwrap_or(wgpu::Backends::PRIMARY);
    if backends.is_empty() {
        return Err(Error::NoAdapter(
            "WGPU_BACKEND names no backend this build knows (try vulkan, gl, metal, dx12)".into(),
        ));
    }
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    desc.flags = wgpu::InstanceFlags::from_build_config().with_env();
    let instance = wgpu::Instance::new(desc);
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));

    let described: Vec<String> = adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("'{}' ({:?}, {:?})", i.name, i.device_type, i.backend)
        })
        .collect();
    let mut candidates: Vec<wgpu::Adapter> = adapters;
    if let Some(wanted) = &options.adapter_name {
        let wanted_lc = wanted.to_lowercase();
        candidates.retain(|a| a.get_info().name.to_lowercase().contains(&wanted_lc));
        if candidates.is_empty() {
            return Err(Error::NoAdapter(format!(
                "WGPU_ADAPTER_NAME='{wanted}' matches none of the adapters found: {}",
                list_or_none(&described)
            )));
        }
    }
    if !options.allow_software {
        candidates.retain(|a| !is_software(&a.get_info()));
    }
    candidates.sort_by_key(|a| rank(&a.get_info()));
    let Some(adapter) = candidates.into_iter().next() else {
        let why = if described.is_empty() {
            format!(
                "no {backends:?} adapter found; install a GPU driver or Mesa's software Vulkan \
                 (Debian: mesa-vulkan-drivers libvulkan1)"
            )
        } else {
            format!(
                "only software adapters found ({}) and software was not allowed",
                described.join(", ")
            )
        };
        return Err(Error::NoAdapter(why));
    };
    let info = adapter.get_info();
    let software = is_software(&info);
    if software {
        log::warn!(
            "no hardware GPU found; using the software adapter '{}' ({:?}): expect it to be slow",
            info.name,
            info.backend
        );
    }
    Ok(AdapterChoice {
        instance,
        adapter,
        software,
    })
}

fn is_software(info: &wgpu::AdapterInfo) -> bool {
    let name = info.name.to_lowercase();
    info.device_type == wgpu::DeviceType::Cpu
        || name.contains("llvmpipe")
        || name.contains("lavapipe")
        || name.contains("swiftshader")
}

/// Lower is better: high-performance preference, software last.
fn rank(info: &wgpu::AdapterInfo) -> u8 {
    if is_software(info) {
        return 9;
    }
    match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 9,
    }
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}
