//! Loaders that turn model files into wgnn graphs: TFLite flatbuffers and
//! TF.js layers models (`model.json` plus weight shards).
//!
//! A [`Model`] keeps the parsed file and writes a graph per context and input
//! size on demand: TF.js models are fully convolutional and take any size,
//! and a graph's shapes are fixed when it is built.

mod batch;
pub mod onnx;
mod precision;
mod quantize;
mod tfjs;
mod tflite;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::ml::{
    BuildOptions, Context, DataType, Graph, GraphBuilder, HostStep, HostTensor, Operand,
    OperandDescriptor, Precision, Tensor, TensorDescriptor,
};
pub use precision::{PrecisionChoice, AUTO_F16_TOLERANCE};

/// The file formats [`load`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// TFLite flatbuffer (identifier "TFL3").
    Tflite,
    /// TF.js layers model (`model.json` with "modelTopology" and "weightsManifest").
    TfjsLayers,
    /// ONNX `ModelProto` protobuf.
    Onnx,
}

/// One input or output of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    /// `None` where the model accepts any size (TF.js height and width, batch).
    pub shape: Vec<Option<usize>>,
    pub data_type: DataType,
    /// The value range the model expects (inputs) or produces (outputs), where
    /// known. Neither format records it; these are each model family's
    /// conventions: MediaPipe TFLite image models take [0, 1], UpscalerJS
    /// TF.js models take [0, 255]. Override with [`Model::set_input_range`].
    pub range: Option<[f32; 2]>,
}

/// A graph writer for one parsed model file.
pub(crate) trait Source: Send + Sync {
    /// Writes the model into `builder` for an input of `hw` (height, width)
    /// (`None`: the size the file declares) and `batch` items (every input
    /// and output whose leading dimension the file declares as 1 or leaves
    /// open has `batch` there), and returns its named outputs. Notes each
    /// operator's origin on the builder (`GraphBuilder::note_origin`) so
    /// that [`batch::check`] can name it.
    fn write(
        &self,
        builder: &GraphBuilder,
        hw: Option<(usize, usize)>,
        batch: usize,
    ) -> Result<Vec<(String, Operand)>>;

    /// [`Source::write`], and what runs on the host after the graph where
    /// the file's results have sizes that only the data decides (an ONNX
    /// graph ending in NonZero or NonMaxSuppression): the graph's outputs
    /// are then the tensors that step reads, and the step's outputs the
    /// model's.
    fn write_staged(
        &self,
        builder: &GraphBuilder,
        hw: Option<(usize, usize)>,
        batch: usize,
    ) -> Result<Written> {
        Ok(Written {
            outputs: self.write(builder, hw, batch)?,
            step: None,
        })
    }

    /// A size used to check at load time that the layers' shapes chain.
    fn probe_size(&self) -> Option<(usize, usize)>;

    /// Number of operators (layers, nodes) in the file, for reporting what
    /// import and fusion made of them.
    fn operator_count(&self) -> usize;

    /// The file's free-form key/value metadata, in file order (ONNX's
    /// `metadata_props`, where exporters such as Ultralytics record the
    /// labels, input size and task); empty where the format has none.
    fn metadata(&self) -> &[(String, String)] {
        &[]
    }

    /// Makes a quantized model's inputs and outputs hold the real values
    /// they stand for rather than their integers ([`Model::with_real_io`]);
    /// whether anything changed.
    fn set_real_io(&mut self) -> bool {
        false
    }
}

/// A host step and the outputs it declares.
pub(crate) type Staged = (Arc<dyn HostStep>, Vec<(String, OperandDescriptor)>);

/// A written graph: its outputs, and the host step after it, if any.
pub(crate) struct Written {
    pub outputs: Vec<(String, Operand)>,
    pub step: Option<Staged>,
}

/// (context id, input size) of a cached graph or precision choice.
type SizeKey = (u64, Option<(usize, usize)>);

/// (context id, input size, F32 or F16, batch) of a cached graph.
type GraphKey = (u64, Option<(usize, usize)>, Precision, usize);

/// A loaded model. Graphs are built per context and input size and cached.
pub struct Model {
    path: PathBuf,
    format: Format,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
    source: Box<dyn Source>,
    graphs: Mutex<HashMap<GraphKey, Graph>>,
    /// What `Precision::Auto` chose per context and size.
    choices: Mutex<HashMap<SizeKey, PrecisionChoice>>,
    /// SHA-256 of the model file, so that `auto`'s choice outlives this
    /// `Model` (an element loads its model again at every start).
    digest: [u8; 32],
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.path)
            .field("format", &self.format)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

/// The path of a model bundled with wgnn, `relative` to the models directory
/// (e.g. `selfie/selfie_segmentation.tflite`): under `models/` of
/// [`crate::assets::dir`].
pub fn bundled(relative: &str) -> PathBuf {
    crate::assets_dir().join("models").join(relative)
}

/// Loads a model, recognising its format from the file's contents. The
/// files it names (TF.js weight shards, ONNX external data) are read from
/// the model's folder.
pub fn load(path: impl AsRef<Path>) -> Result<Model> {
    let path = path.as_ref();
    let bytes = crate::files::read_regular(path).map_err(|e| {
        let bundled = path.starts_with(crate::assets::dir());
        if e.kind() == std::io::ErrorKind::NotFound && bundled && !crate::assets::found() {
            // A bundled model, and no copy of the assets anywhere: say where
            // they were looked for rather than only that one file is missing.
            model_error(
                path,
                "file",
                format!("{e}; {}", crate::assets::not_found_hint()),
            )
        } else {
            model_error(path, "file", e)
        }
    })?;
    let folder = path.parent().unwrap_or(Path::new("."));
    load_from(path, bytes, None, &Companions::Folder(folder))
}

/// Loads a model held in memory: `bytes` are the model file (a `.tflite`, a
/// TF.js `model.json`, a `.onnx`), `files` the files it names beside itself
/// (TF.js weight shards, ONNX external data) by the relative path the model
/// names them with; nothing is read from disk. `name` stands for the file
/// in errors and [`Model::path`]. `format` `None` recognises it from the
/// bytes as [`load`] does; a given one parses the bytes as that format.
pub fn load_bytes(
    name: impl AsRef<Path>,
    bytes: Vec<u8>,
    format: Option<Format>,
    files: &[(&str, &[u8])],
) -> Result<Model> {
    load_from(name.as_ref(), bytes, format, &Companions::Memory(files))
}

/// Where the files a model names beside itself come from. On disk, a name
/// must stay inside the model's folder ([`crate::files::inside`]).
pub(crate) enum Companions<'a> {
    /// The model file's folder on disk.
    Folder(&'a Path),
    /// Files held in memory, by their relative path.
    Memory(&'a [(&'a str, &'a [u8])]),
}

impl Companions<'_> {
    /// The length of the file at `relative`.
    pub(crate) fn len(&self, relative: &str) -> std::io::Result<u64> {
        match self {
            Companions::Folder(dir) => Ok(crate::files::check_regular(&crate::files::inside(
                dir,
                Path::new(relative),
            )?)?
            .len()),
            Companions::Memory(files) => Ok(Self::find(files, relative)?.len() as u64),
        }
    }

    /// `len` bytes of the file at `relative` from `offset`; the caller has
    /// checked them against [`Companions::len`], so a lying header never
    /// sizes an allocation.
    pub(crate) fn read(&self, relative: &str, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
        let short = || {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("has fewer than {len} bytes at offset {offset}"),
            )
        };
        match self {
            Companions::Folder(dir) => {
                use std::io::{Read, Seek, SeekFrom};
                let mut file =
                    crate::files::open_regular(&crate::files::inside(dir, Path::new(relative))?)?;
                file.seek(SeekFrom::Start(offset))?;
                let mut bytes = Vec::new();
                // `take` keeps a file that grew since `len` from growing the buffer.
                file.take(len as u64).read_to_end(&mut bytes)?;
                if bytes.len() != len {
                    return Err(short());
                }
                Ok(bytes)
            }
            Companions::Memory(files) => {
                let file = Self::find(files, relative)?;
                usize::try_from(offset)
                    .ok()
                    .and_then(|start| file.get(start..start.checked_add(len)?))
                    .map(<[u8]>::to_vec)
                    .ok_or_else(short)
            }
        }
    }

    fn find<'f>(files: &[(&str, &'f [u8])], relative: &str) -> std::io::Result<&'f [u8]> {
        files
            .iter()
            .find(|(name, _)| *name == relative)
            .map(|(_, bytes)| *bytes)
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "not among the files given with the model",
                )
            })
    }
}

fn load_from(
    path: &Path,
    bytes: Vec<u8>,
    format: Option<Format>,
    files: &Companions<'_>,
) -> Result<Model> {
    let format =
        match format {
            Some(f) => f,
            None if tflite::is_tflite(&bytes) => Format::Tflite,
            None if tfjs::is_tfjs(&bytes) => Format::TfjsLayers,
            None if onnx::is_onnx(&bytes) => Format::Onnx,
            None => return Err(model_error(
                path,
                "file",
                "neither a TFLite flatbuffer (no \"TFL3\" identifier at bytes 4..8) nor a TF.js \
                 layers model.json (no \"modelTopology\" and \"weightsManifest\") nor an ONNX \
                 model (no ir_version field first)",
            )),
        };
    let digest = {
        use sha2::Digest;
        sha2::Sha256::digest(&bytes).into()
    };
    let (inputs, outputs, source) = match format {
        Format::Tflite => tflite::parse(path, bytes)?,
        Format::TfjsLayers => tfjs::parse(path, &bytes, files)?,
        Format::Onnx => onnx::parse(path, &bytes, files)?,
    };
    let model = Model {
        path: path.to_path_buf(),
        format,
        inputs,
        outputs,
        source,
        graphs: Mutex::default(),
        choices: Mutex::default(),
        digest,
    };
    // Writing the graph once (without compiling it, with no context) checks
    // every op's options and that the shapes chain, so a bad file fails here.
    let builder = GraphBuilder::shapes_only();
    model.source.write(&builder, model.source.probe_size(), 1)?;
    Ok(model)
}

pub(crate) fn model_error(
    path: &Path,
    location: impl Into<String>,
    message: impl std::fmt::Display,
) -> Error {
    Error::Model {
        path: path.to_path_buf(),
        location: location.into(),
        message: message.to_string(),
    }
}

impl Model {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn inputs(&self) -> &[TensorInfo] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[TensorInfo] {
        &self.outputs
    }

    /// The model with real values at a quantized model's inputs and outputs
    /// (a full-integer TFLite model's int8 or uint8 edges): the graph
    /// quantizes its input and dequantizes its outputs, and the inputs take
    /// the real range `[0, 1]`, as the float model they were made from. The
    /// tasks read outputs as real scores and boxes; [`Model::run`] without
    /// this gives the integers the file declares.
    pub fn with_real_io(mut self) -> Model {
        if self.source.set_real_io() {
            for input in &mut self.inputs {
                input.range = Some([0.0, 1.0]);
            }
        }
        self
    }

    /// The file's key/value metadata ([`Source::metadata`]).
    pub fn metadata(&self) -> &[(String, String)] {
        self.source.metadata()
    }

    /// Number of operators (TFLite operators, ONNX nodes, TF.js layers) in
    /// the file; compare with [`Graph::written_node_count`] and
    /// [`Graph::node_count`] to see what import and fusion made of them.
    pub fn operator_count(&self) -> usize {
        self.source.operator_count()
    }

    /// Replaces the conventional input value range (see [`TensorInfo::range`]).
    pub fn set_input_range(&mut self, index: usize, range: Option<[f32; 2]>) -> Result<()> {
        let input = self.inputs.get_mut(index).ok_or_else(|| {
            Error::invalid(format!("set_input_range: the model has no input {index}"))
        })?;
        input.range = range;
        Ok(())
    }

    /// The graph for `context` and an input of `input_hw` (height, width);
    /// `None` takes the size the file declares (required where it declares none).
    /// Built once per (context, size) and then shared. Computes in float32
    /// as written: [`Model::build_with`] picks another precision.
    pub fn build(&self, context: &Context, input_hw: Option<(usize, usize)>) -> Result<Graph> {
        self.graph(context, input_hw, Precision::F32, 1)
    }

    /// [`Model::build`] in `precision`, resolved by
    /// [`Model::choose_precision`] (`Auto` may build and run both graphs
    /// once); [`Graph::precision`] says which was built. The graph's inputs
    /// and outputs are the same in every precision.
    pub fn build_with(
        &self,
        context: &Context,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
    ) -> Result<Graph> {
        let chosen = self.choose_precision(context, input_hw, precision)?;
        self.graph(context, input_hw, chosen.precision, 1)
    }

    /// [`Model::build_with`] for `batch` items at once: every input and
    /// output whose leading dimension the file declares as 1 (or leaves
    /// open) has `batch` there, and item k of every output is what the
    /// `batch == 1` graph computes from item k of the inputs. `batch == 1`
    /// is [`Model::build_with`] (the same cached graph). `Precision::Auto`
    /// is chosen at batch 1 ([`Model::choose_precision`]) and that
    /// precision built at `batch`. A model that cannot keep the items
    /// apart (an operator that mixes them, a reshape that folds the batch
    /// into another axis) is refused with one line naming its operator, as
    /// [`Model::check_batch`] does. Built once per (context, size,
    /// precision, batch) and then shared.
    pub fn build_batched(
        &self,
        context: &Context,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
        batch: usize,
    ) -> Result<Graph> {
        self.refuse_batch_zero(batch)?;
        let chosen = self.choose_precision(context, input_hw, precision)?;
        self.graph(context, input_hw, chosen.precision, batch)
    }

    /// Whether [`Model::build_batched`] can build this model for `batch`
    /// items at an input of `input_hw`: the same check, on shapes only
    /// (no context, nothing compiled), so cheap enough for an element to
    /// call at start. The error is one line naming the file and the
    /// operator that cannot take the batch, and says what works.
    pub fn check_batch(&self, input_hw: Option<(usize, usize)>, batch: usize) -> Result<()> {
        self.refuse_batch_zero(batch)?;
        let builder = GraphBuilder::shapes_only();
        let Written { outputs, step } = self.source.write_staged(&builder, input_hw, batch)?;
        self.refuse_staged_batch(step.is_some(), batch)?;
        self.check_batched_graph(&builder, &outputs, input_hw, batch)
    }

    /// A host step runs one item's results: such a model is built for one.
    fn refuse_staged_batch(&self, staged: bool, batch: usize) -> Result<()> {
        if staged && batch > 1 {
            return Err(model_error(
                &self.path,
                "build",
                format!(
                    "its results have sizes that depend on the data (computed on the host after \
                     the graph) and cannot be batched; use batch-size=1 (not {batch})"
                ),
            ));
        }
        Ok(())
    }

    fn refuse_batch_zero(&self, batch: usize) -> Result<()> {
        if batch == 0 {
            return Err(model_error(
                &self.path,
                "build",
                "a batch of 0 items is not a graph; use batch-size=1 or more",
            ));
        }
        Ok(())
    }

    /// [`batch::check`] of a graph written at `batch` against the same
    /// model written at 1 (shapes only); nothing to check at 1.
    fn check_batched_graph(
        &self,
        builder: &GraphBuilder,
        outputs: &[(String, Operand)],
        input_hw: Option<(usize, usize)>,
        batch: usize,
    ) -> Result<()> {
        if batch == 1 {
            return Ok(());
        }
        let single = GraphBuilder::shapes_only();
        let single_outputs = self.source.write(&single, input_hw, 1)?;
        batch::check(
            &self.path,
            batch::Written {
                builder: &single,
                outputs: &single_outputs,
            },
            batch::Written { builder, outputs },
            batch,
        )
    }

    /// The graph in `precision` (F32 or F16) for `batch` items, built once
    /// per (context, size, precision, batch).
    fn graph(
        &self,
        context: &Context,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
        batch: usize,
    ) -> Result<Graph> {
        let key = (context.id(), input_hw, precision, batch);
        if let Some(g) = self.graphs.lock().unwrap().get(&key) {
            return Ok(g.clone());
        }
        let builder = GraphBuilder::new(context);
        let Written { outputs, step } = self.source.write_staged(&builder, input_hw, batch)?;
        self.refuse_staged_batch(step.is_some(), batch)?;
        self.check_batched_graph(&builder, &outputs, input_hw, batch)?;
        let named: Vec<(&str, &Operand)> = outputs.iter().map(|(n, o)| (n.as_str(), o)).collect();
        let mut graph = builder
            .build_with(&named, BuildOptions { precision })
            .map_err(|e| model_error(&self.path, "build", e))?;
        if let Some((step, declared)) = step {
            graph = graph.with_host_step(step, declared);
        }
        self.graphs.lock().unwrap().insert(key, graph.clone());
        Ok(graph)
    }

    /// The shapes of the outputs for an input of `input_hw` (height, width),
    /// worked out by writing the graph without compiling it: cheap, and an
    /// error names the layer where a size does not fit.
    pub fn output_shapes(&self, input_hw: Option<(usize, usize)>) -> Result<Vec<Vec<usize>>> {
        let builder = GraphBuilder::shapes_only();
        Ok(match self.source.write_staged(&builder, input_hw, 1)? {
            Written {
                step: Some((_, declared)),
                ..
            } => declared.into_iter().map(|(_, d)| d.shape).collect(),
            Written { outputs, .. } => outputs.iter().map(|(_, o)| o.shape().to_vec()).collect(),
        })
    }

    /// The shapes of the inputs in [`Model::inputs`] order for an input of
    /// `input_hw` (height, width): symbolic dimensions resolved as a graph
    /// built at that size resolves them.
    pub fn input_shapes(&self, input_hw: Option<(usize, usize)>) -> Result<Vec<Vec<usize>>> {
        let builder = GraphBuilder::shapes_only();
        self.source.write(&builder, input_hw, 1)?;
        let declared = builder.declared_inputs();
        self.inputs
            .iter()
            .map(|info| {
                declared
                    .iter()
                    .find(|(n, _)| *n == info.name)
                    .map(|(_, d)| d.shape.clone())
                    .ok_or_else(|| {
                        model_error(
                            &self.path,
                            format!("input '{}'", info.name),
                            "the graph written from the file does not declare it",
                        )
                    })
            })
            .collect()
    }

    /// Runs the model once and returns every output, in the model's order,
    /// with its name. `inputs` are found by name; each must have the type
    /// and shape the graph built for `input_hw` declares. A convenience for
    /// tools and tests: pipelines keep tensors on the device and use
    /// `dispatch`.
    pub fn run(
        &self,
        context: &Context,
        input_hw: Option<(usize, usize)>,
        inputs: &[(&str, HostTensor)],
    ) -> Result<Vec<(String, HostTensor)>> {
        self.run_with(context, input_hw, Precision::F32, inputs)
    }

    /// [`Model::run`] of the graph [`Model::build_with`] builds in `precision`.
    pub fn run_with(
        &self,
        context: &Context,
        input_hw: Option<(usize, usize)>,
        precision: Precision,
        inputs: &[(&str, HostTensor)],
    ) -> Result<Vec<(String, HostTensor)>> {
        let graph = self.build_with(context, input_hw, precision)?;
        self.run_graph(context, &graph, inputs)
    }

    /// [`Model::run`] of a graph built from this model (e.g. by
    /// [`Model::build_batched`]): `inputs` by name, each with the type and
    /// shape the graph declares.
    pub fn run_graph(
        &self,
        context: &Context,
        graph: &Graph,
        inputs: &[(&str, HostTensor)],
    ) -> Result<Vec<(String, HostTensor)>> {
        let declared = graph.inputs();
        let fail = |message: String| model_error(&self.path, "run", message);
        if let Some((name, _)) = inputs
            .iter()
            .find(|(name, _)| !declared.iter().any(|(d, _)| d == name))
        {
            let names: Vec<&str> = declared.iter().map(|(n, _)| n.as_str()).collect();
            return Err(fail(format!(
                "the model has no input '{name}' (its inputs: {})",
                names.join(", ")
            )));
        }
        let mut bound = Vec::with_capacity(declared.len());
        for (name, desc) in &declared {
            let value = inputs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v)
                .ok_or_else(|| fail(format!("input '{name}' ({desc}) is not given")))?;
            value
                .check(&format!("input '{name}'"))
                .map_err(|e| fail(e.to_string()))?;
            if value.descriptor() != *desc {
                return Err(fail(format!(
                    "input '{name}' is {desc}, got {}",
                    value.descriptor()
                )));
            }
            let t = context.create_tensor(
                TensorDescriptor::new(desc.data_type, desc.shape.clone()).writable(),
            )?;
            context.write_host(&t, value)?;
            bound.push((name.clone(), t));
        }
        let outputs: Vec<(String, Tensor)> = graph
            .outputs()
            .into_iter()
            .map(|(name, desc)| {
                let t = context
                    .create_tensor(TensorDescriptor::new(desc.data_type, desc.shape).readable())?;
                Ok((name, t))
            })
            .collect::<Result<_>>()?;
        let ins: Vec<(&str, &Tensor)> = bound.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let outs: Vec<(&str, &Tensor)> = outputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        context.dispatch(graph, &ins, &outs)?;
        let values = outputs
            .iter()
            .map(|(name, t)| Ok((name.clone(), context.read_host(t)?)))
            .collect();
        for (_, t) in bound.iter().chain(&outputs) {
            t.destroy();
        }
        values
    }
}

/// TF's SAME padding along one axis: (before, after).
pub(crate) fn same_padding(
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
) -> (usize, usize) {
    let effective = (kernel - 1) * dilation + 1;
    let out = input.div_ceil(stride);
    let total = ((out - 1) * stride + effective).saturating_sub(input);
    (total / 2, total - total / 2)
}

#[cfg(test)]
mod tests {
    use super::{bundled, load, same_padding};
    use crate::ml::{workers_started_here, Context};

    #[test]
    fn checking_a_model_starts_no_context() {
        let before = workers_started_here();
        let selfie = load(bundled("selfie/selfie_segmentation.tflite")).unwrap();
        assert_eq!(selfie.output_shapes(None).unwrap(), [vec![1, 256, 256, 1]]);
        let esrgan = load(bundled("esrgan-slim/x2/model.json")).unwrap();
        let shapes = esrgan.output_shapes(Some((6, 10))).unwrap();
        assert_eq!(shapes, [vec![1, 12, 20, 3]]);
        // A batch is checked on shapes only too, at any size.
        selfie.check_batch(None, 64).unwrap();
        esrgan.check_batch(Some((6, 10)), 64).unwrap();
        assert_eq!(
            workers_started_here(),
            before,
            "loading or checking started a CPU context"
        );
        // The counter does count what it watches.
        Context::cpu().destroy();
        assert_eq!(workers_started_here(), before + 1);
    }

    #[test]
    fn same_padding_matches_tf() {
        // TF puts the odd pixel after: 5 wide, 3x3 stride 2 -> out 3, total 2.
        assert_eq!(same_padding(5, 3, 2, 1), (1, 1));
        assert_eq!(same_padding(4, 3, 2, 1), (0, 1));
        assert_eq!(same_padding(256, 3, 1, 1), (1, 1));
        assert_eq!(same_padding(8, 3, 1, 2), (2, 2));
        assert_eq!(same_padding(8, 1, 1, 1), (0, 0));
    }
}
