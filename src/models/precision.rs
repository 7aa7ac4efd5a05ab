//! [`Precision::Auto`] for a model: float16 where the device runs it natively
//! and the model's outputs stay close to float32's on a probe input.

use crate::error::Result;
use crate::ml::{Context, DataType, HostData, HostTensor, OperandDescriptor, Precision};

use super::{model_error, Model};

/// How far `auto` lets a float16 graph's outputs move from float32's: the
/// root mean square of the differences over all outputs, relative to the
/// largest absolute float32 output value; 1e-2 is a PSNR of 40 dB against
/// that peak, the bar the elements' outputs are held to (superres PSNR,
/// masks within a grey level on average). Not the largest difference: a
/// few outputs where a model is undecided (a mask's edge, a sigmoid near
/// 0.5 on a noise input) move by far more in float16 without the picture
/// changing. A non-finite value where float32 has a finite one, or any
/// change in an integer output, fails it.
pub const AUTO_F16_TOLERANCE: f64 = 1e-2;

/// What [`Model::choose_precision`] chose for a context and input size, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionChoice {
    /// What the graph computes in: [`Precision::F32`] or [`Precision::F16`].
    pub precision: Precision,
    /// One line: why (e.g. "rms rel diff 2.1e-3 <= 1e-2 on a probe input").
    pub reason: String,
}

impl std::fmt::Display for PrecisionChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.precision, self.reason)
    }
}

/// Why `context` cannot or need not run float16 natively, if so.
fn no_native_f16(context: &Context) -> Option<String> {
    match context.gpu_handle() {
        None => Some("the CPU context computes float16 in float32 registers: no faster".into()),
        Some(gpu) if !gpu.has(wgpu::Features::SHADER_F16) => Some(format!(
            "this GPU ({}) lacks the SHADER_F16 feature",
            gpu.info().name
        )),
        Some(_) => None,
    }
}

/// A small deterministic generator (xorshift64*): the probe input must be
/// the same on every run, and the library takes no `rand` dependency.
struct Probe(u64);

impl Probe {
    fn next_unit(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (v >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// One probe value per element of `desc`, uniform in `range`.
fn probe_tensor(desc: &OperandDescriptor, range: [f32; 2], rng: &mut Probe) -> HostTensor {
    let n = desc.element_count();
    let mut unit = || range[0] + (range[1] - range[0]) * rng.next_unit();
    let data = match desc.data_type {
        DataType::Float32 => HostData::F32((0..n).map(|_| unit()).collect()),
        DataType::Float16 => HostData::F16((0..n).map(|_| half::f16::from_f32(unit())).collect()),
        DataType::Int32 => HostData::I32((0..n).map(|_| unit().round() as i32).collect()),
        DataType::Uint8 => HostData::U8((0..n).map(|_| unit().clamp(0.0, 255.0) as u8).collect()),
    };
    HostTensor {
        shape: desc.shape.clone(),
        data,
    }
}

/// How far one run's outputs are from `reference`'s, over all outputs.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Difference {
    /// Root mean square of the differences over the largest absolute
    /// reference value: 1e-2 is a PSNR of 40 dB against that peak.
    rms: f64,
    /// The largest absolute difference over the same value.
    max: f64,
}

/// The differences between two runs' outputs relative to the largest
/// absolute value of `reference`'s; infinite where `other` is not finite
/// where `reference` is, or an integer output differs.
fn relative_difference(
    reference: &[(String, HostTensor)],
    other: &[(String, HostTensor)],
) -> Difference {
    const DIFFERENT: Difference = Difference {
        rms: f64::INFINITY,
        max: f64::INFINITY,
    };
    let (mut max_diff, mut max_abs, mut squares, mut n) = (0.0f64, 0.0f64, 0.0f64, 0usize);
    for ((_, a), (_, b)) in reference.iter().zip(other) {
        let floats = a.data_type().is_float();
        for (x, y) in a.to_f32().into_iter().zip(b.to_f32()) {
            let (x, y) = (x as f64, y as f64);
            if !x.is_finite() {
                continue;
            }
            if !y.is_finite() || (!floats && x != y) {
                return DIFFERENT;
            }
            max_diff = max_diff.max((x - y).abs());
            max_abs = max_abs.max(x.abs());
            squares += (x - y) * (x - y);
            n += 1;
        }
    }
    if max_diff == 0.0 {
        return Difference { rms: 0.0, max: 0.0 };
    }
    let peak = max_abs.max(f64::MIN_POSITIVE);
    Difference {
        rms: (squares / n as f64).sqrt() / peak,
        max: max_diff / peak,
    }
}

/// What a probe's outcome depends on: the model file's contents, the
/// input ranges the probe draws from, the adapter and the input size.
/// Files a model names beside itself (TF.js shards, ONNX external data) are
/// not in it: a process that rewrites those under a loaded model keeps the
/// first choice.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ProbeKey {
    digest: [u8; 32],
    ranges: String,
    adapter: String,
    input_hw: Option<(usize, usize)>,
}

impl ProbeKey {
    fn new(model: &Model, context: &Context, input_hw: Option<(usize, usize)>) -> ProbeKey {
        let ranges = format!(
            "{:?}",
            model.inputs.iter().map(|i| i.range).collect::<Vec<_>>()
        );
        let adapter = context.gpu_handle().map_or_else(String::new, |gpu| {
            let i = gpu.info();
            format!(
                "{:?}",
                (
                    &i.name,
                    i.vendor,
                    i.device,
                    &i.driver,
                    &i.driver_info,
                    i.backend
                )
            )
        });
        ProbeKey {
            digest: model.digest,
            ranges,
            adapter,
            input_hw,
        }
    }
}

/// `auto`'s probes in this process: an element that is stopped and started
/// again (a new `Model`, a new context on the same adapter) takes the
/// earlier outcome instead of building and running both graphs again.
fn probed() -> &'static std::sync::Mutex<std::collections::HashMap<ProbeKey, PrecisionChoice>> {
    static PROBED: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<ProbeKey, PrecisionChoice>>,
    > = std::sync::OnceLock::new();
    PROBED.get_or_init(Default::default)
}

impl Model {
    /// What [`Model::build_with`] builds for `precision` on `context` at
    /// `input_hw`. `F32` is itself. `F16` is itself on a GPU with
    /// SHADER_F16 and on the CPU context (which rounds as the GPU does, with
    /// no speed-up), and an error on a GPU without it. `Auto` is F32 on the
    /// CPU context and on a GPU without SHADER_F16; otherwise both graphs
    /// are built and run once on a seeded probe input in the model's input
    /// range ([`TensorInfo::range`](super::TensorInfo::range), else 0..1),
    /// and F16 is chosen when its outputs are within
    /// [`AUTO_F16_TOLERANCE`] of F32's. `Auto`'s choice is logged (INFO)
    /// and remembered per context and size, and the probe's outcome for the
    /// process (per model contents, input ranges, adapter and size).
    pub fn choose_precision(
        &self,
        context: &Context,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
    ) -> Result<PrecisionChoice> {
        let chosen = |precision, reason: &str| PrecisionChoice {
            precision,
            reason: reason.to_string(),
        };
        match precision {
            Precision::F32 => return Ok(chosen(Precision::F32, "asked for")),
            Precision::F16 => {
                return match (context.gpu_handle(), no_native_f16(context)) {
                    (Some(_), Some(why)) => Err(model_error(
                        &self.path,
                        "build",
                        format!("precision f16: {why}; use f32 or auto"),
                    )),
                    (None, _) => Ok(chosen(
                        Precision::F16,
                        "asked for; the CPU context rounds as a GPU does, with no speed-up",
                    )),
                    (Some(_), None) => Ok(chosen(Precision::F16, "asked for")),
                }
            }
            Precision::Auto => {}
        }
        let key = (context.id(), input_hw);
        if let Some(c) = self.choices.lock().unwrap().get(&key) {
            return Ok(c.clone());
        }
        let choice = match no_native_f16(context) {
            Some(why) => chosen(Precision::F32, &why),
            None => {
                let seen = ProbeKey::new(self, context, input_hw);
                let earlier = probed().lock().unwrap().get(&seen).cloned();
                match earlier {
                    Some(c) => c,
                    None => {
                        let c = self.probe(context, input_hw)?;
                        probed().lock().unwrap().insert(seen, c.clone());
                        c
                    }
                }
            }
        };
        log::info!(
            "{}: precision auto: {} ({})",
            self.path.display(),
            choice.precision,
            choice.reason
        );
        self.choices.lock().unwrap().insert(key, choice.clone());
        Ok(choice)
    }

    /// Builds and runs the model in both precisions on one probe input.
    fn probe(
        &self,
        context: &Context,
        input_hw: Option<(usize, usize)>,
    ) -> Result<PrecisionChoice> {
        let cached = |p| {
            self.graphs
                .lock()
                .unwrap()
                .contains_key(&(context.id(), input_hw, p, 1))
        };
        let had = (cached(Precision::F32), cached(Precision::F16));
        let f32_graph = self.graph(context, input_hw, Precision::F32, 1)?;
        let f16_graph = match self.graph(context, input_hw, Precision::F16, 1) {
            Ok(g) => g,
            Err(e) => {
                return Ok(PrecisionChoice {
                    precision: Precision::F32,
                    reason: format!("the float16 graph does not build: {e}"),
                })
            }
        };
        let choice = self.compare(context, &f32_graph, &f16_graph)?;
        // The graph not chosen was built for the probe alone: its weights
        // go now rather than sit beside the chosen graph's.
        let (loser, had_loser) = match choice.precision {
            Precision::F16 => (Precision::F32, had.0),
            _ => (Precision::F16, had.1),
        };
        if !had_loser {
            if let Some(g) = self
                .graphs
                .lock()
                .unwrap()
                .remove(&(context.id(), input_hw, loser, 1))
            {
                g.destroy();
            }
        }
        Ok(choice)
    }

    /// Runs both graphs once on a seeded probe input and compares them.
    fn compare(
        &self,
        context: &Context,
        f32_graph: &crate::ml::Graph,
        f16_graph: &crate::ml::Graph,
    ) -> Result<PrecisionChoice> {
        let mut rng = Probe(0x9e37_79b9_7f4a_7c15);
        let inputs: Vec<(String, HostTensor)> = f32_graph
            .inputs()
            .into_iter()
            .map(|(name, desc)| {
                let range = self
                    .inputs
                    .iter()
                    .find(|i| i.name == name)
                    .and_then(|i| i.range)
                    .unwrap_or([0.0, 1.0]);
                let t = probe_tensor(&desc, range, &mut rng);
                (name, t)
            })
            .collect();
        let named: Vec<(&str, HostTensor)> = inputs
            .iter()
            .map(|(n, t)| (n.as_str(), t.clone()))
            .collect();
        let reference = self.run_graph(context, f32_graph, &named)?;
        let halved = self.run_graph(context, f16_graph, &named)?;
        let diff = relative_difference(&reference, &halved);
        let tol = AUTO_F16_TOLERANCE;
        let (rms, max) = (diff.rms, diff.max);
        Ok(if rms <= tol {
            PrecisionChoice {
                precision: Precision::F16,
                reason: format!(
                    "rms rel diff {rms:.1e} <= {tol:.0e}, max {max:.1e}, on a probe input"
                ),
            }
        } else {
            PrecisionChoice {
                precision: Precision::F32,
                reason: format!(
                    "float16's rms rel diff {rms:.1e} > {tol:.0e}, max {max:.1e}, on a probe input"
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_values_are_seeded_and_in_range() {
        let desc = OperandDescriptor::f32([2, 3, 5]);
        let a = probe_tensor(&desc, [-1.0, 1.0], &mut Probe(7));
        let b = probe_tensor(&desc, [-1.0, 1.0], &mut Probe(7));
        assert_eq!(a, b);
        let v = a.to_f32();
        assert!(v.iter().all(|x| (-1.0..=1.0).contains(x)), "{v:?}");
        assert!(v.iter().any(|&x| x < -0.5) && v.iter().any(|&x| x > 0.5));
        let c = probe_tensor(&desc, [-1.0, 1.0], &mut Probe(8));
        assert_ne!(a, c);
    }

    #[test]
    fn differences_are_relative_to_the_largest_reference_value() {
        let t = |v: Vec<f32>| vec![("y".to_string(), HostTensor::f32([v.len()], v))];
        let same = relative_difference(&t(vec![1.0, -4.0]), &t(vec![1.0, -4.0]));
        assert_eq!(same, Difference { rms: 0.0, max: 0.0 });
        let d = relative_difference(&t(vec![1.0, -4.0]), &t(vec![1.02, -4.0]));
        assert!((d.max - 0.005).abs() < 1e-6, "{d:?}");
        // sqrt(0.02^2 / 2) / 4
        assert!((d.rms - 0.02 / 2f64.sqrt() / 4.0).abs() < 1e-6, "{d:?}");
        let inf = relative_difference(&t(vec![1.0, 2.0]), &t(vec![1.0, f32::INFINITY]));
        assert_eq!(inf.rms, f64::INFINITY);
        let i = |v: Vec<i32>| vec![("k".to_string(), HostTensor::i32([v.len()], v))];
        let ints = relative_difference(&i(vec![3, 1000]), &i(vec![4, 1000]));
        assert_eq!(ints.max, f64::INFINITY);
    }
}
