//! How every compute kernel of wgnn (`ml` and `video` alike) is specialised
//! and compiled.
//!
//! **Specialisation is generated WGSL text**: a kernel's configuration (element
//! types, layout switches, effect choices, workgroup sizes, fused activations)
//! becomes `alias` and `const` lines put before its body, built with
//! [`Specialization`]. Pipeline-overridable constants were the other choice;
//! they cannot change a type (`alias T = f16`) or generate code (a fused
//! activation chain), which the ML kernels need, so one mechanism serves both.
//! Values that change per frame or per tensor size are *not* specialised: they
//! travel in each kernel's `struct Params` uniform (a `#[repr(C)]` `Pod` struct
//! mirrored field by field in the WGSL), so a new size compiles nothing new.
//!
//! **Compilation goes through one cache per device** ([`Gpu::compute_pipeline`]),
//! keyed by the whole source and the [`Checks`] it is compiled with: a second
//! element, a second graph or a new input size reuses every pipeline compiled
//! before on the same [`Gpu`].

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::Gpu;
use crate::error::Result;

/// Set to 1, every trusted kernel keeps all of wgpu's injected runtime checks
/// (to tell a kernel's indexing bug from a driver's, say).
pub const SHADER_CHECKS_ENV: &str = "WGNN_SHADER_CHECKS";

/// `alias` and `const` lines that specialise a kernel, in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Specialization {
    text: String,
}

impl Specialization {
    pub fn new() -> Self {
        Self::default()
    }

    /// `alias name = ty;` (e.g. the element type `T` as `f32` or `f16`).
    pub fn alias(mut self, name: &str, ty: &str) -> Self {
        let _ = writeln!(self.text, "alias {name} = {ty};");
        self
    }

    pub fn u32(mut self, name: &str, value: u32) -> Self {
        let _ = writeln!(self.text, "const {name}: u32 = {value}u;");
        self
    }

    pub fn i32(mut self, name: &str, value: i32) -> Self {
        // i32::MIN has no positive literal; WGSL takes it as a bitcast.
        if value == i32::MIN {
            let _ = writeln!(self.text, "const {name}: i32 = i32(-2147483647) - 1;");
        } else {
            let _ = writeln!(self.text, "const {name}: i32 = {value}i;");
        }
        self
    }

    /// Exact to the bit for finite values (Rust's shortest round-trip form
    /// is a valid WGSL literal); infinities and NaN, which WGSL has no
    /// literal for, are clamped to the largest finite magnitude and 0.
    pub fn f32(mut self, name: &str, value: f32) -> Self {
        let v = if value.is_nan() {
            0.0
        } else {
            value.clamp(f32::MIN, f32::MAX)
        };
        let _ = writeln!(self.text, "const {name}: f32 = {};", f32_literal(v));
        self
    }

    pub fn bool(mut self, name: &str, value: bool) -> Self {
        let _ = writeln!(self.text, "const {name}: bool = {value};");
        self
    }

    /// Generated WGSL that is not a single constant (a fused activation
    /// chain as a function, say). Ends with a newline.
    pub fn code(mut self, wgsl: &str) -> Self {
        self.text.push_str(wgsl);
        if !wgsl.ends_with('\n') {
            self.text.push('\n');
        }
        self
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The whole module: `enable` directives (which WGSL wants before any
    /// declaration), these lines, then `body`. Directives at the top of
    /// `body` are moved up.
    pub fn module(&self, enables: &[&str], body: &str) -> String {
        let mut src = String::new();
        for e in enables {
            let _ = writeln!(src, "enable {e};");
        }
        let mut body = body;
        while let Some(rest) = body.strip_prefix("enable ") {
            let end = rest.find('\n').map_or(rest.len(), |i| i + 1);
            src.push_str("enable ");
            src.push_str(&rest[..end]);
            body = &rest[end..];
        }
        src.push_str(&self.text);
        src.push_str(body);
        src
    }
}

/// A finite f32 as a WGSL float literal that round-trips exactly.
pub fn f32_literal(v: f32) -> String {
    let s = format!("{v:?}");
    // `{:?}` prints "1e-7" or "1.0": both are WGSL float literals; an
    // integer-looking form never occurs for f32's Debug output.
    debug_assert!(s.contains('.') || s.contains('e'), "{s}");
    s
}

/// Which of wgpu's injected runtime checks a kernel is compiled with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Checks {
    /// All of them: for kernels whose indices depend on values they read.
    All,
    /// Trusted kernels: wgnn's own generated WGSL, every index guarded in the
    /// shader itself and every loop bounded by its params. The two checks
    /// that cost most are left out: the clamp on every array and vector
    /// index, and the loop counters that keep drivers from unrolling inner
    /// products. Buffer accesses stay bounded by the driver wherever it
    /// offers robust buffer access, which wgpu enables; division by zero
    /// stays guarded. On an H100 this made the 3x3 64->64 conv2d 1.9x faster
    /// (1.58 to 0.84 ms) and the selfie model 1.2x. `WGNN_SHADER_CHECKS=1`
    /// compiles trusted kernels with every check again.
    Trusted,
}

impl Checks {
    fn runtime_checks(self) -> wgpu::ShaderRuntimeChecks {
        let all = wgpu::ShaderRuntimeChecks::checked();
        if self == Checks::All || std::env::var(SHADER_CHECKS_ENV).as_deref() == Ok("1") {
            return all;
        }
        let mut checks = all;
        checks.bounds_checks = false;
        checks.force_loop_bounding = false;
        checks
    }
}

/// The per-device cache behind [`Gpu::compute_pipeline`].
#[derive(Default)]
pub(crate) struct PipelineCache {
    map: Mutex<HashMap<(Checks, String), super::live::ComputePipeline>>,
    compiled: AtomicU64,
}

impl Gpu {
    /// The compute pipeline of `source` (entry point `main`, bind group
    /// layouts derived from the shader), compiled on this device the first
    /// time any caller asks for it and shared afterwards.
    pub fn compute_pipeline(
        &self,
        label: &str,
        source: &str,
        checks: Checks,
    ) -> Result<super::live::ComputePipeline> {
        let cache = &self.inner.pipelines;
        // Held while compiling, so that two elements starting together
        // compile a shared kernel once.
        let mut map = cache.map.lock().unwrap();
        if let Some(p) = map.get(&(checks, source.to_string())) {
            return Ok(p.clone());
        }
        let device = self.device();
        let pipeline = self.scoped(&format!("compiling the {label} kernel"), || {
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(label),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            };
            // SAFETY: `Checks::Trusted` is only asked for by wgnn's own
            // generated kernels, which guard their own indices and bound
            // their loops (see `Checks::Trusted`).
            let module =
                unsafe { device.create_shader_module_trusted(desc, checks.runtime_checks()) };
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        })?;
        let pipeline =
            super::live::Counted::new(pipeline, self.token(super::live::Kind::ComputePipeline, 0));
        cache.compiled.fetch_add(1, Ordering::Relaxed);
        map.insert((checks, source.to_string()), pipeline.clone());
        Ok(pipeline)
    }

    /// Empties the pipeline cache (pipelines still held elsewhere live on
    /// until dropped): after it, the device's live compute pipelines are the
    /// ones some element or graph still holds.
    pub fn clear_pipeline_cache(&self) {
        self.inner.pipelines.map.lock().unwrap().clear();
    }

    /// How many compute pipelines the cache holds.
    pub fn pipelines_cached(&self) -> usize {
        self.inner.pipelines.map.lock().unwrap().len()
    }

    /// How many compute pipelines this device has compiled (cache misses).
    pub fn pipelines_compiled(&self) -> u64 {
        self.inner.pipelines.compiled.load(Ordering::Relaxed)
    }
}

/// Checks for kernels built elsewhere (`video`), with no GPU: the same
/// validator and SPIR-V writer a driver's compile would meet first, and the
/// agreement of a `struct Params` with the Rust struct it is filled from.
#[cfg(test)]
pub(crate) mod testing {
    use wgpu::naga;

    /// Parses, validates and translates `source` to SPIR-V; panics with
    /// `what` and the error otherwise. Returns the module for further checks.
    pub(crate) fn validate(what: &str, source: &str) -> naga::Module {
        let module = naga::front::wgsl::parse_str(source)
            .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::SHADER_FLOAT16,
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{what}: {}", e.emit_to_string(source)));
        naga::back::spv::write_vec(&module, &info, &Default::default(), None)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        module
    }

    /// The WGSL struct `name` of `source` and a Rust struct of `size` bytes
    /// with `fields` (name, offset) agree: same size, and every WGSL member
    /// has a Rust field of the same name at the same offset.
    pub(crate) fn assert_same_layout(
        source: &str,
        name: &str,
        size: usize,
        fields: &[(&str, usize)],
    ) {
        let module = validate(name, source);
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).expect("layout");
        let (handle, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no struct {name} in the kernel"));
        let naga::TypeInner::Struct { members, .. } = &ty.inner else {
            panic!("{name} is not a struct");
        };
        assert_eq!(
            layouter[handle].size as usize, size,
            "{name}: WGSL size vs Rust size_of"
        );
        assert_eq!(members.len(), fields.len(), "{name}: member count");
        for m in members {
            let member = m.name.as_deref().unwrap_or_default();
            let rust = fields
                .iter()
                .find(|(f, _)| *f == member)
                .unwrap_or_else(|| panic!("{name}.{member} has no Rust field"));
            assert_eq!(m.offset as usize, rust.1, "{name}.{member} offset");
        }
    }

    /// `[(name, offset_of!(T, name)), ...]` for [`assert_same_layout`].
    macro_rules! offsets {
        ($t:ty: $($f:ident),* $(,)?) => {
            [$((stringify!($f), std::mem::offset_of!($t, $f))),*]
        };
    }
    pub(crate) use offsets;
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::naga;

    #[test]
    fn specialization_lines_are_valid_wgsl_with_exact_values() {
        let spec = Specialization::new()
            .alias("T", "f32")
            .u32("N", 7)
            .i32("LOW", i32::MIN)
            .i32("OFF", -3)
            .f32("EPS", 1e-7)
            .f32("THIRD", 1.0 / 3.0)
            .f32("BIG", f32::INFINITY)
            .f32("NOT", f32::NAN)
            .bool("NHWC", true)
            .code("fn act(v: f32) -> f32 { return max(v, 0.0); }");
        let src = spec.module(
            &[],
            "@compute @workgroup_size(1) fn main() { let x = T(N) * EPS * THIRD + f32(LOW + OFF) + BIG + NOT + act(1.0); if NHWC { _ = x; } }\n",
        );
        let module = naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{src}\n{e}"));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{src}\n{e:?}"));
        assert!(src.contains(&format!("const THIRD: f32 = {:?};", 1.0f32 / 3.0)));
        assert!(src.contains("const BIG: f32 = 3.4028235e38;"), "{src}");
        assert!(src.contains("const NOT: f32 = 0.0;"), "{src}");
        for v in [0.1f32, 1e-30, 123456.79, -2.5e-12, f32::MIN_POSITIVE] {
            assert_eq!(
                f32_literal(v).parse::<f32>().unwrap().to_bits(),
                v.to_bits()
            );
        }
    }

    #[test]
    fn directives_go_before_the_specialisation() {
        let src = Specialization::new()
            .alias("T", "f16")
            .module(&["f16"], "enable wgpu_cooperative_matrix;\nfn f() {}\n");
        assert!(
            src.starts_with("enable f16;\nenable wgpu_cooperative_matrix;\nalias T = f16;\n"),
            "{src}"
        );
    }
}
