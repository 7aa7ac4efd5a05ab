//! Adapter choice: a hardware GPU first, a software one (lavapipe, llvmpipe)
//! only when there is nothing else, and the user's environment over both.

use super::selector::{stable_order, GpuSelector};
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
    /// The adapter asked for by index or identity (an element's `gpu`
    /// property); it overrides `adapter_name` and `allow_software`.
    pub selector: Option<GpuSelector>,
}

impl Default for GpuOptions {
    fn default() -> Self {
        GpuOptions {
            backends: None,
            adapter_name: None,
            allow_software: true,
            selector: None,
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
            selector: None,
        }
    }
}

pub struct AdapterChoice {
    pub instance: wgpu::Instance,
    pub adapter: wgpu::Adapter,
    pub software: bool,
    /// The adapter's place in [`list`].
    pub index: usize,
}

/// The adapters of `options`' backends in the order `gpu=N` counts in
/// ([`stable_order`]), with the instance that found them.
fn enumerate(options: &GpuOptions) -> Result<(wgpu::Instance, Vec<wgpu::Adapter>)> {
    let backends = options.backends.unwrap_or(wgpu::Backends::PRIMARY);
    if backends.is_empty() {
        return Err(Error::NoAdapter(
            "WGPU_BACKEND names no backend this build knows (try vulkan, gl, metal, dx12)".into(),
        ));
    }
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    desc.flags = wgpu::InstanceFlags::from_build_config().with_env();
    let instance = quiet_vulkan_instance(&desc).unwrap_or_else(|| wgpu::Instance::new(desc));
    let found = pollster::block_on(instance.enumerate_adapters(backends));
    let infos: Vec<wgpu::AdapterInfo> = found.iter().map(wgpu::Adapter::get_info).collect();
    let mut found: Vec<Option<wgpu::Adapter>> = found.into_iter().map(Some).collect();
    let adapters = stable_order(&infos)
        .into_iter()
        .filter_map(|i| found[i].take())
        .collect();
    Ok((instance, adapters))
}

/// The adapters `options` (their backends) find, in the order `gpu=N`
/// counts in.
pub fn list(options: &GpuOptions) -> Result<Vec<wgpu::AdapterInfo>> {
    let (_, adapters) = enumerate(options)?;
    Ok(adapters.iter().map(wgpu::Adapter::get_info).collect())
}

pub(super) fn choose(options: &GpuOptions) -> Result<AdapterChoice> {
    let (instance, adapters) = enumerate(options)?;
    let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(wgpu::Adapter::get_info).collect();
    if let Some(selector) = &options.selector {
        let index = selector.pick(&infos)?;
        let adapter = adapters
            .into_iter()
            .nth(index)
            .expect("picked from the list");
        return Ok(AdapterChoice {
            instance,
            software: is_software(&infos[index]),
            adapter,
            index,
        });
    }
    let backends = options.backends.unwrap_or(wgpu::Backends::PRIMARY);

    let described: Vec<String> = adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("'{}' ({:?}, {:?})", i.name, i.device_type, i.backend)
        })
        .collect();
    let mut candidates: Vec<(usize, wgpu::Adapter)> = adapters.into_iter().enumerate().collect();
    if let Some(wanted) = &options.adapter_name {
        let wanted_lc = wanted.to_lowercase();
        candidates.retain(|(i, _)| infos[*i].name.to_lowercase().contains(&wanted_lc));
        if candidates.is_empty() {
            return Err(Error::NoAdapter(format!(
                "WGPU_ADAPTER_NAME='{wanted}' matches none of the adapters found: {}",
                list_or_none(&described)
            )));
        }
    }
    if !options.allow_software {
        candidates.retain(|(i, _)| !is_software(&infos[*i]));
    }
    candidates.sort_by_key(|(i, _)| rank(&infos[*i]));
    let Some((index, adapter)) = candidates.into_iter().next() else {
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
        index,
    })
}

/// The Vulkan-only instance wgpu would make for `desc`, less the
/// `VK_KHR_wayland_surface` extension, when the environment names no Wayland
/// display; `None` (make the instance the usual way) otherwise.
///
/// Why: Mesa's device-selection layer (`VK_LAYER_MESA_device_select`, an
/// implicit layer installed with Mesa's Vulkan drivers) calls
/// `wl_display_connect` for every instance that enables that extension, and
/// libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set in the
/// environment." on stderr when that variable is unset (containers, ssh,
/// systemd services): twice per run, for nothing, since a process without a
/// Wayland display cannot open a Wayland window. wgpu enables every
/// surface extension the loader offers and has no option against it; its
/// instance-creation callback can drop one. X11 surfaces (wgnnsink under
/// `DISPLAY`) keep theirs; setting `NODEVICE_SELECT` instead would mean
/// changing the process environment from a library, which is unsound once
/// other threads run.
///
/// Only where the result is the same instance otherwise: Vulkan is the only
/// backend asked for (of those built on this platform) and the instance
/// flags are the build's defaults (an instance made from a wgpu-hal one
/// takes its wgpu-core flags from the build, not from `WGPU_DEBUG` and the
/// like).
#[cfg(all(
    unix,
    not(any(target_os = "macos", target_os = "ios", target_os = "android"))
))]
fn quiet_vulkan_instance(desc: &wgpu::InstanceDescriptor) -> Option<wgpu::Instance> {
    use wgpu::hal;
    // What winit looks for before it tries Wayland, and what libwayland
    // connects to.
    let wayland_display_named = ["WAYLAND_DISPLAY", "WAYLAND_SOCKET"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    // Metal, DX12 and WebGPU are not built here: only these would be lost.
    let others = wgpu::Backends::GL | wgpu::Backends::NOOP;
    if wayland_display_named
        || !desc.backends.contains(wgpu::Backends::VULKAN)
        || desc.backends.intersects(others)
        || desc.flags != wgpu::InstanceFlags::default()
    {
        return None;
    }
    let hal_desc = hal::InstanceDescriptor {
        name: "wgpu",
        flags: desc.flags,
        memory_budget_thresholds: desc.memory_budget_thresholds,
        backend_options: desc.backend_options.clone(),
        telemetry: None,
        display: None,
    };
    let drop_wayland: Box<hal::vulkan::CreateInstanceCallback> =
        Box::new(|args: hal::vulkan::CreateInstanceCallbackArgs| {
            args.extensions.retain(|&e| e != c"VK_KHR_wayland_surface");
        });
    // SAFETY: wgpu-core makes its instances with this same call
    // (`Instance::init`, which is `init_with_callback(desc, None)`) and
    // descriptor. The callback's contract asks not to remove extensions
    // because wgpu assumes that those it found are enabled; the Wayland
    // surface extension is only used by `create_surface_from_wayland`, which
    // checks the instance's enabled list first and fails cleanly without it.
    let raw =
        match unsafe { hal::vulkan::Instance::init_with_callback(&hal_desc, Some(drop_wayland)) } {
            Ok(raw) => raw,
            Err(e) => {
                log::debug!("Vulkan instance without Wayland surfaces: {e}; making the usual one");
                return None;
            }
        };
    // SAFETY: `raw` is a live Vulkan instance, made above and handed over
    // whole: wgpu owns and destroys it.
    Some(unsafe { wgpu::Instance::from_hal::<hal::api::Vulkan>(raw) })
}

#[cfg(not(all(
    unix,
    not(any(target_os = "macos", target_os = "ios", target_os = "android"))
)))]
fn quiet_vulkan_instance(_desc: &wgpu::InstanceDescriptor) -> Option<wgpu::Instance> {
    None
}

pub(super) fn is_software(info: &wgpu::AdapterInfo) -> bool {
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
