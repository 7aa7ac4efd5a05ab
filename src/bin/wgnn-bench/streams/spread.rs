//! `streams --gpus N` / `--gpu LIST`: the streams of each run spread round
//! robin over several adapters, stream i on GPU i mod N. Each GPU's
//! pipelines get that GPU's device in their context, so the model elements
//! of one GPU share one model instance (the registry keeps one per id and
//! adapter) and nothing crosses GPUs. What each GPU held is reported beside
//! the total: the figure a host of N GPUs is sized by.

use serde_json::json;
use wgnn::gpu::{list_adapters, selector, Gpu, GpuOptions, GpuSelector};

/// The devices the streams run on: the first `count` adapters, `list`'s
/// adapters (`gpu` values, comma-separated), or the default one.
pub fn open(count: Option<u32>, list: Option<&str>) -> Result<Vec<Gpu>, String> {
    let selectors: Vec<GpuSelector> = match (count, list) {
        (Some(n), _) => {
            let listed = list_adapters(&GpuOptions::from_env()).map_err(|e| e.to_string())?;
            if n as usize > listed.len() {
                return Err(format!(
                    "--gpus {n}: there are {}",
                    selector::describe_list(&listed)
                ));
            }
            (0..n as usize).map(GpuSelector::Index).collect()
        }
        (None, Some(text)) => text
            .split(',')
            .map(|part| {
                GpuSelector::parse(part)
                    .ok_or_else(|| format!("--gpu '{text}': an empty item (a list such as 0,1)"))
            })
            .collect::<Result<_, _>>()?,
        (None, None) => return Gpu::new().map(|g| vec![g]).map_err(|e| e.to_string()),
    };
    let gpus = selectors
        .into_iter()
        .map(|selector| {
            Gpu::with_options(&GpuOptions {
                selector: Some(selector),
                ..GpuOptions::from_env()
            })
            .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, g) in gpus.iter().enumerate() {
        if gpus[..i].iter().any(|o| o.index() == g.index()) {
            return Err(format!(
                "--gpu: adapter {} is named twice",
                selector::describe(g.index(), g.info())
            ));
        }
    }
    Ok(gpus)
}

/// The usage errors of `--gpus` and `--gpu`, before any device is opened.
pub fn check_flags(count: Option<u32>, list: Option<&str>) -> Result<(), String> {
    match (count, list) {
        (Some(_), Some(_)) => Err("--gpus and --gpu: give one of them".into()),
        (Some(0), None) => Err("--gpus 0: at least one GPU".into()),
        _ => Ok(()),
    }
}

/// The GPU (its place in the bench's list) stream `stream` runs on.
pub fn gpu_of(stream: u32, gpus: usize) -> usize {
    stream as usize % gpus
}

/// One GPU's part of a run.
#[derive(Clone, Debug)]
pub struct GpuShare {
    /// The adapter ([`selector::describe`]: index, name, backend, bus).
    pub adapter: String,
    pub streams: u32,
    /// Its streams that kept the frame rate with nothing dropped.
    pub sustained: u32,
}

/// Each GPU's streams and sustained streams, from every stream's verdict
/// (in stream order).
pub fn shares(gpus: &[Gpu], kept: &[bool]) -> Vec<GpuShare> {
    gpus.iter()
        .enumerate()
        .map(|(g, gpu)| {
            let mine = kept
                .iter()
                .enumerate()
                .filter(|(i, _)| gpu_of(*i as u32, gpus.len()) == g);
            let (streams, sustained) =
                mine.fold((0, 0), |(n, s), (_, &ok)| (n + 1, s + u32::from(ok)));
            GpuShare {
                adapter: selector::describe(gpu.index(), gpu.info()),
                streams,
                sustained,
            }
        })
        .collect()
}

impl GpuShare {
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "adapter": self.adapter,
            "streams": self.streams,
            "sustained_streams": self.sustained,
        })
    }
}

/// `per GPU: 0 'NVIDIA H200' (Vulkan, 0000:1b:00.0) 8/8 sustained; ...`,
/// for a run on more than one GPU.
pub fn line(shares: &[GpuShare]) -> Option<String> {
    (shares.len() > 1).then(|| {
        let each: Vec<String> = shares
            .iter()
            .map(|s| format!("{} {}/{} sustained", s.adapter, s.sustained, s.streams))
            .collect();
        format!("  per GPU: {}", each.join("; "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_go_round_robin() {
        let on: Vec<usize> = (0..5).map(|s| gpu_of(s, 2)).collect();
        assert_eq!(on, [0, 1, 0, 1, 0]);
        assert_eq!(gpu_of(7, 1), 0);
    }
}
