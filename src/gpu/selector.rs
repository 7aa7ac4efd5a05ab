//! Which adapter a program or an element asks for (`gpu=1`, `gpu=0000:1b:00.0`):
//! an index into the adapters in a stable order, or a piece of one adapter's
//! identity. Pure functions of [`wgpu::AdapterInfo`] values, so that the
//! choice is tested without a GPU.

use std::cmp::Ordering;

use crate::error::{Error, Result};

/// An adapter asked for by index or by a piece of its identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GpuSelector {
    /// The adapter at this place in [`stable_order`].
    Index(usize),
    /// The first adapter (in [`stable_order`]) whose name, driver, PCI bus
    /// id or `vendor:device` id (4 hex digits each) contains this text,
    /// ignoring case. Kept as written, for the messages.
    Match(String),
}

impl GpuSelector {
    /// `None` for an empty (or blank) text: the default adapter.
    pub fn parse(text: &str) -> Option<GpuSelector> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(match text.parse::<usize>() {
            Ok(i) if text.bytes().all(|b| b.is_ascii_digit()) => GpuSelector::Index(i),
            _ => GpuSelector::Match(text.to_string()),
        })
    }

    /// The place in `listed` (adapters in [`stable_order`]) of the adapter
    /// this selector names; the error lists them all.
    pub fn pick(&self, listed: &[wgpu::AdapterInfo]) -> Result<usize> {
        let found = match self {
            GpuSelector::Index(i) => Some(*i).filter(|&i| i < listed.len()),
            GpuSelector::Match(text) => {
                let wanted = text.to_lowercase();
                listed
                    .iter()
                    .position(|info| identity(info).iter().any(|f| f.contains(&wanted)))
            }
        };
        found.ok_or_else(|| {
            Error::NoAdapter(match listed.len() {
                0 => format!("gpu={self}, but no adapter was found"),
                _ => format!("gpu={self} matches none of the {}", describe_list(listed)),
            })
        })
    }
}

impl std::fmt::Display for GpuSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuSelector::Index(i) => write!(f, "{i}"),
            GpuSelector::Match(text) => write!(f, "'{text}'"),
        }
    }
}

/// The texts a [`GpuSelector::Match`] looks in, lower case.
fn identity(info: &wgpu::AdapterInfo) -> [String; 4] {
    [
        info.name.to_lowercase(),
        info.driver.to_lowercase(),
        info.device_pci_bus_id.to_lowercase(),
        vendor_device(info),
    ]
}

/// `10de:2335`: the PCI vendor and device ids, as `lspci -n` writes them.
pub fn vendor_device(info: &wgpu::AdapterInfo) -> String {
    format!("{:04x}:{:04x}", info.vendor, info.device)
}

/// The positions of `infos` in the order indices count in: hardware before
/// software (lavapipe on a GPU server is not adapter 0), then by backend
/// (Vulkan first), then by PCI bus id (the order of `nvidia-smi` and of
/// `CUDA_DEVICE_ORDER=PCI_BUS_ID`, so that `gpu=3` is the GPU those tools
/// call 3), then by name and the driver's own order. Stable for one machine
/// and one set of backends, whatever order the driver enumerates in.
pub fn stable_order(infos: &[wgpu::AdapterInfo]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..infos.len()).collect();
    order.sort_by(|&a, &b| compare(&infos[a], &infos[b]).then(a.cmp(&b)));
    order
}

fn compare(a: &wgpu::AdapterInfo, b: &wgpu::AdapterInfo) -> Ordering {
    super::adapter::is_software(a)
        .cmp(&super::adapter::is_software(b))
        .then(backend_rank(a.backend).cmp(&backend_rank(b.backend)))
        .then_with(|| a.device_pci_bus_id.cmp(&b.device_pci_bus_id))
        .then_with(|| a.name.cmp(&b.name))
}

fn backend_rank(backend: wgpu::Backend) -> u8 {
    match backend {
        wgpu::Backend::Vulkan => 0,
        wgpu::Backend::Metal => 1,
        wgpu::Backend::Dx12 => 2,
        wgpu::Backend::Gl => 3,
        _ => 4,
    }
}

/// One adapter for the messages: `0 'NVIDIA H200' (Vulkan, 0000:1b:00.0)`.
pub fn describe(index: usize, info: &wgpu::AdapterInfo) -> String {
    let mut tags = vec![format!("{:?}", info.backend)];
    if !info.device_pci_bus_id.is_empty() {
        tags.push(info.device_pci_bus_id.clone());
    }
    format!("{index} '{}' ({})", info.name, tags.join(", "))
}

/// `2 adapters: 0 '...' (...), 1 '...' (...)`.
pub fn describe_list(listed: &[wgpu::AdapterInfo]) -> String {
    let n = listed.len();
    format!(
        "{n} adapter{}: {}",
        if n == 1 { "" } else { "s" },
        listed
            .iter()
            .enumerate()
            .map(|(i, info)| describe(i, info))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(
        name: &str,
        backend: wgpu::Backend,
        pci: &str,
        kind: wgpu::DeviceType,
    ) -> wgpu::AdapterInfo {
        wgpu::AdapterInfo {
            name: name.into(),
            vendor: 0x10de,
            device: 0x2335,
            device_type: kind,
            device_pci_bus_id: pci.into(),
            driver: "NVIDIA".into(),
            driver_info: "580.65".into(),
            backend,
            subgroup_min_size: 32,
            subgroup_max_size: 32,
            transient_saves_memory: None,
            limit_bucket: None,
        }
    }

    fn h200(pci: &str) -> wgpu::AdapterInfo {
        adapter(
            "NVIDIA H200",
            wgpu::Backend::Vulkan,
            pci,
            wgpu::DeviceType::DiscreteGpu,
        )
    }

    fn lavapipe() -> wgpu::AdapterInfo {
        wgpu::AdapterInfo {
            vendor: 0x10005,
            device: 0,
            driver: "llvmpipe".into(),
            ..adapter(
                "llvmpipe (LLVM 19.1.7, 256 bits)",
                wgpu::Backend::Vulkan,
                "",
                wgpu::DeviceType::Cpu,
            )
        }
    }

    #[test]
    fn parses_indices_and_texts() {
        assert_eq!(GpuSelector::parse(""), None);
        assert_eq!(GpuSelector::parse("  "), None);
        assert_eq!(GpuSelector::parse("3"), Some(GpuSelector::Index(3)));
        assert_eq!(GpuSelector::parse(" 0 "), Some(GpuSelector::Index(0)));
        // A sign or a fraction is not an index: it is matched as text.
        for text in ["+1", "-1", "1.5", "H200", "0000:1b:00.0", "10de:2335"] {
            assert_eq!(
                GpuSelector::parse(text),
                Some(GpuSelector::Match(text.into())),
                "{text}"
            );
        }
    }

    #[test]
    fn orders_hardware_first_then_by_bus() {
        let infos = [
            lavapipe(),
            h200("0000:9a:00.0"),
            adapter(
                "NVIDIA H200/PCIe/SSE2",
                wgpu::Backend::Gl,
                "",
                wgpu::DeviceType::Other,
            ),
            h200("0000:1b:00.0"),
        ];
        assert_eq!(stable_order(&infos), [3, 1, 2, 0]);
    }

    #[test]
    fn picks_by_index_and_identity() {
        let listed = [h200("0000:1b:00.0"), h200("0000:43:00.0"), lavapipe()];
        let pick = |text: &str| GpuSelector::parse(text).unwrap().pick(&listed).unwrap();
        assert_eq!(pick("1"), 1);
        assert_eq!(pick("0000:43"), 1);
        assert_eq!(pick("1B:00"), 0);
        // Every H200 matches: the first in order is taken.
        assert_eq!(pick("nvidia h200"), 0);
        assert_eq!(pick("10de:2335"), 0);
        assert_eq!(pick("LLVMpipe"), 2);
    }

    #[test]
    fn a_missing_adapter_is_one_line_listing_them() {
        let listed = [h200("0000:1b:00.0"), lavapipe()];
        let e = GpuSelector::Index(3).pick(&listed).unwrap_err().to_string();
        assert!(
            e.contains(
                "no GPU adapter: gpu=3 matches none of the 2 adapters: 0 'NVIDIA H200' (Vulkan, 0000:1b:00.0), \
                 1 'llvmpipe (LLVM 19.1.7, 256 bits)' (Vulkan)"
            ),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let e = GpuSelector::parse("amd")
            .unwrap()
            .pick(&listed)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("gpu='amd' matches none of the 2 adapters: 0 'NVIDIA H200'"),
            "{e}"
        );
        let e = GpuSelector::Index(0).pick(&[]).unwrap_err();
        assert!(
            e.to_string().contains("gpu=0, but no adapter was found"),
            "{e}"
        );
    }
}
