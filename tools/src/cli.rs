//! `ember`: the command-line front of the compiler. Only this crate parses arguments. A library,
//! so the `ember` binary (`main.rs`) and the Python package's `ember` command (the wheel's
//! console script, through `ember._ember.cli_main`) run the same code.

use clap::builder::PossibleValuesParser;
use clap::{Parser, Subcommand};
use ember_compiler::ir::Module;
use ember_compiler::target::{self, Options};
use ember_compiler::{CompileOptions, Pipeline};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "ember",
    version,
    about = "Ember: a graph compiler for PyTorch programs (torch.export) targeting CPU, TPU and Trainium",
    after_help = "Examples:\n  ember import testdata/models/mlp.pt2 -o mlp.mlir\n  ember opt mlp.mlir --passes=canonicalize,cse,dce\n  ember compile testdata/models/mlp.pt2 --target cpu -o out/\n  ember run out/ --inputs testdata/models/mlp.npz --outputs got.npz\n\nExit codes: 0 success, 2 bad input or unsupported feature (the message says which)."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Import a torch.export archive (.pt2) or a bare model.json as a torch-dialect module.
    #[command(after_help = "Example:\n  ember import testdata/models/gpt2_block.pt2 -o block.mlir\n\n\
The output is MLIR text that `mlir-opt --allow-unregistered-dialect` parses. Weights stay in the\n\
archive: parameters, buffers and constants are function arguments named by `ember.param`,\n\
`ember.buffer` and `ember.constant` attributes.")]
    Import {
        /// The model: a .pt2 archive from torch.export.save, or a model.json.
        model: PathBuf,
        /// Where to write the module (standard output when absent).
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Run passes over a module, like mlir-opt.
    #[command(after_help = opt_help())]
    Opt {
        /// A module (.mlir) or a model (.pt2 / model.json, imported first).
        input: PathBuf,
        /// Comma-separated passes, run in order; the IR is verified after each.
        #[arg(long, value_delimiter = ',', default_value = "")]
        passes: Vec<String>,
        /// Where to write the result (standard output when absent).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Print the IR to standard error after every pass.
        #[arg(long)]
        print_ir_after_all: bool,
        /// Print what the e-graph (`fuse`) did to standard error: blocks, iterations, e-nodes,
        /// why saturation stopped, and the rules that fired.
        #[arg(long)]
        trace: bool,
    },
    /// Compile a model for a target into an artifact directory.
    #[command(
        after_help = "Example:\n  ember compile testdata/models/mlp.pt2 --target cpu -o out/\n\nTargets: cpu (native code via LLVM; `ember run` runs it), tpu (StableHLO; `ember run` runs it on
XLA through the Python env), trainium (HLO for neuronx-cc + NKI kernels; `ember run` runs the
portable HLO on XLA CPU).
An existing OUT_DIR is replaced only if it is an Ember artifact; a failed compile leaves nothing."
    )]
    Compile {
        /// The model: a .pt2 archive from torch.export.save (or, without weights, its model.json or an .mlir module).
        model: PathBuf,
        /// cpu, tpu or trainium.
        #[arg(long, value_parser = PossibleValuesParser::new(target::names()))]
        target: String,
        /// The artifact directory to create.
        #[arg(short, long)]
        output: PathBuf,
        /// Also write OUT_DIR/report/: fusion.md (per kernel: ops, source lines, rules, estimated
        /// bytes/FLOPs/time before and after fusion), fusion.dot and, when Graphviz is
        /// installed, fusion.svg.
        #[arg(long)]
        report: bool,
        /// Who forms the cpu kernels: the e-graph optimizer (default) or the planner's simple
        /// greedy rule (for comparison).
        #[arg(long, value_parser = PossibleValuesParser::new(target::option_values("fusion")), default_value = "egraph")]
        fusion: String,
        /// tpu: shard over a device mesh, e.g. `x=2,y=4` (Shardy annotations; XLA partitions).
        #[arg(long, value_name = "AXIS=SIZE,..")]
        mesh: Option<String>,
        /// tpu, with --mesh: sharding rules `dp`, `fsdp`, `tp` (Megatron), each optionally `=AXIS`
        /// (default: dp and fsdp the first mesh axis, tp the last). Repeatable or comma-separated.
        #[arg(long, value_name = "RULE[=AXIS]")]
        shard: Vec<String>,
        /// tpu, with --mesh: user inputs that are parameters, by name (a torch.compile graph takes
        /// its parameters as inputs): the sharding rules treat them as parameters.
        #[arg(long, value_name = "NAME,..")]
        param_inputs: Option<String>,
        /// tpu, with --mesh: every output whole on every device (gathered inside the module), for
        /// runs where each process reads its outputs from its own devices.
        #[arg(long)]
        replicate_outputs: bool,
        /// tpu: precision of f32 matmuls (dot_general) on a TPU: default (one bf16 pass), high
        /// (three), highest (f32, matches torch; the default).
        #[arg(long, value_parser = PossibleValuesParser::new(target::option_values("precision")))]
        precision: Option<String>,
        /// tpu: also write a VHLO portable artifact (`*.vhlo.mlirbc`) of every module, made by
        /// `python -m ember.xla portable` (needs the Python env, like `ember run`).
        #[arg(long)]
        portable: bool,
        /// trainium: compute f64 values in f32 (Neuron has no fp64) instead of refusing them.
        #[arg(long)]
        allow_downcast: bool,
        /// trainium: keep int64 (neuronx-cc --native-int64, trn2+) instead of narrowing to int32.
        #[arg(long)]
        native_int64: bool,
        /// trainium: `matmult` computes f32 matmuls in bf16, as neuronx-cc's --auto-cast matmult (done
        /// by Ember, so `ember run` checks what Neuron runs; recorded in the manifest); `none` (the
        /// default) keeps every dtype. bf16 models stay bf16 either way.
        #[arg(long, value_name = "MODE", value_parser = PossibleValuesParser::new(target::option_values("auto-cast")))]
        auto_cast: Option<String>,
    },
    /// Show what the trainium target makes of a module: NKI kernels or legalized StableHLO.
    #[command(
        after_help = "Examples:\n  ember trainium testdata/targets/trainium/gemm_ragged_gelu_residual.mlir -o kernels/\n  \
ember trainium model.mlir --emit stablehlo --native-int64\n\n\
--emit kernels: each fusion group of @main with a kernel kind (gemm, softmax, layer_norm,\n\
rms_norm, attention) gets a tile plan, checked against the Trn2 tile and buffer limits, and NKI\n\
source `<name>.py`; with -o DIR, also `<name>.stablehlo.mlir`: the group's body alone, to check\n\
the kernel against. --emit stablehlo: the portable and Neuron forms of the whole module after\n\
legalization for Neuron (what `ember compile --target trainium` converts to HLO)."
    )]
    Trainium {
        /// A module (.mlir, or a .pt2 archive), usually with ember.fusion_group ops.
        input: PathBuf,
        /// `kernels` or `stablehlo`.
        #[arg(long, value_parser = ["kernels", "stablehlo"], default_value = "kernels")]
        emit: String,
        /// kernels: a directory for `<name>.py` and `<name>.stablehlo.mlir` (standard output when absent).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Compute f64 values in f32 (Neuron has no fp64) instead of refusing them.
        #[arg(long)]
        allow_downcast: bool,
        /// Keep int64 (neuronx-cc --native-int64, trn2+) instead of narrowing to int32.
        #[arg(long)]
        native_int64: bool,
    },
    /// Run a compiled artifact on inputs from an .npz (keys arg0, arg1, ... in user-input order).
    #[command(
        after_help = "Example:\n  ember run out/ --inputs testdata/models/mlp.npz --outputs got.npz\n\nOutputs are written as out0, out1, ... in user-output order; an in-place update of an input or\nbuffer (a functionalized mutation) as mutated_input.NAME / mutated_buffer.NAME.\n\nA graph with random ops (rand, randn, dropout in training mode, ...) takes one more input, last:\nits int64 seed `ember_seed`; without that array the run uses torch's default seed 67280421310721.\n\ntpu artifacts run on XLA through `python -m ember.xla run` (PJRT via jaxlib), with the Python\nin $EMBER_PYTHON, else ~/.cache/ember/venv/bin/python."
    )]
    Run {
        /// An artifact directory written by `ember compile`.
        artifact: PathBuf,
        /// Inputs as an .npz with arrays arg0, arg1, ... (user-input order).
        #[arg(long)]
        inputs: PathBuf,
        /// Where to write the outputs as an .npz with arrays out0, out1, ...
        #[arg(long)]
        outputs: PathBuf,
        /// Run this many timed iterations (after one warm-up) and print the median time to stderr.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
    },
    /// List the ops Ember knows, with their signatures and doc lines.
    #[command(after_help = "Example:\n  ember ops --dialect torch | grep softmax")]
    Ops {
        /// Only this dialect (torch, ember).
        #[arg(long)]
        dialect: Option<String>,
    },
}

fn opt_help() -> String {
    let mut s =
        String::from("Example:\n  ember opt model.mlir --passes=canonicalize,cse,dce -o clean.mlir\n\nPasses:\n");
    for (name, doc) in Pipeline::passes() {
        s.push_str(&format!("  {name:<14} {doc}\n"));
    }
    s
}

/// A message for stderr and the exit code (2: bad input or an unsupported feature).
struct Failure {
    msg: String,
    code: i32,
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure { msg: e.to_string(), code: 2 }
    }
}

/// Runs the command line `args` (the program name first) and returns the exit code: 0, 2 for bad
/// input (the message is on stderr), clap's own codes for usage errors and `--help`, or the code
/// of a runner in another process (`ember run` of an XLA artifact).
pub fn main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    match run(cli.cmd) {
        Ok(()) => 0,
        Err(Failure { msg, code }) => {
            if !msg.is_empty() {
                eprintln!("error: {msg}");
            }
            code
        }
    }
}

fn spinner(msg: String) -> indicatif::ProgressBar {
    let pb = indicatif::ProgressBar::new_spinner();
    pb.set_message(msg);
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

fn load_module(path: &Path) -> Result<Module, Failure> {
    Ok(load(path)?.module)
}

fn load(path: &Path) -> Result<ember_compiler::Imported, Failure> {
    let pb = spinner(format!("importing {}", path.display()));
    let r = ember_compiler::load(path);
    pb.finish_and_clear();
    Ok(r?)
}

fn emit(text: &str, output: Option<&Path>) -> Result<(), Failure> {
    match output {
        Some(p) => ember_compiler::write_atomic(p, text.as_bytes())
            .map_err(|e| Failure::from(format!("cannot write `{}`: {e}", p.display()))),
        None => {
            use std::io::Write;
            // A reader that stops early (`| head`) is not an error.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(())
        }
    }
}

/// The target options among the CLI's arguments that were given (a flag's value is empty).
fn options(given: Vec<(&str, Option<String>)>) -> Options {
    Options(given.into_iter().filter_map(|(name, value)| Some((name.to_string(), value?))).collect())
}

fn run(cmd: Cmd) -> Result<(), Failure> {
    match cmd {
        Cmd::Import { model, output } => {
            let m = load_module(&model)?;
            emit(&m.to_string(), output.as_deref())
        }
        Cmd::Opt { input, passes, output, print_ir_after_all, trace } => {
            let pipeline = Pipeline::parse(&passes.join(","))?;
            let mut m = load_module(&input)?;
            let traces = pipeline.run(&mut m, &mut |name, m| {
                if print_ir_after_all {
                    eprintln!("// -----// IR Dump After {name} //----- //\n{m}");
                }
            })?;
            if trace {
                traces.iter().for_each(|t| eprint!("{t}"));
            }
            emit(&m.to_string(), output.as_deref())
        }
        Cmd::Trainium { input, emit: what, output, allow_downcast, native_int64 } => {
            let mut m = load_module(&input)?;
            let opts = options(vec![
                ("allow-downcast", allow_downcast.then(String::new)),
                ("native-int64", native_int64.then(String::new)),
            ]);
            let e = ember_compiler::trainium::inspect(&mut m, &opts)?;
            if what == "stablehlo" {
                return emit(
                    &format!("// ---- portable form ----\n{}// ---- Neuron form ----\n{}", e.portable, e.neuron),
                    output.as_deref(),
                );
            }
            match output {
                Some(dir) => {
                    std::fs::create_dir_all(&dir)
                        .map_err(|e| Failure::from(format!("cannot create `{}`: {e}", dir.display())))?;
                    for (k, _, region) in &e.kernels {
                        emit(&k.source, Some(&dir.join(format!("{}.py", k.name))))?;
                        emit(region, Some(&dir.join(format!("{}.stablehlo.mlir", k.name))))?;
                    }
                    Ok(())
                }
                None => {
                    let text: String = e
                        .kernels
                        .iter()
                        .map(|(k, _, _)| format!("# ---- kernels/{}.py ----\n{}", k.name, k.source))
                        .collect();
                    emit(&text, None)
                }
            }
        }
        Cmd::Compile {
            model,
            target,
            output,
            report,
            fusion,
            mesh,
            shard,
            param_inputs,
            replicate_outputs,
            precision,
            portable,
            allow_downcast,
            native_int64,
            auto_cast,
        } => {
            // In the order their errors are reported.
            let mut given = vec![("mesh", mesh)];
            given.extend(shard.into_iter().map(|s| ("shard", Some(s))));
            given.extend([
                ("param-inputs", param_inputs),
                ("replicate-outputs", replicate_outputs.then(String::new)),
                ("portable", portable.then(String::new)),
                ("precision", precision),
                ("fusion", Some(fusion)),
            ]);
            given.extend([
                ("allow-downcast", allow_downcast.then(String::new)),
                ("native-int64", native_int64.then(String::new)),
                ("auto-cast", auto_cast),
            ]);
            let options = options(given);
            let report =
                report.then(|| model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
            let opts = CompileOptions { target, out: output, options, report };
            opts.check()?;
            let imported = load(&model)?;
            let pb = spinner(format!("compiling for {} into {}", opts.target, opts.out.display()));
            let r = ember_compiler::compile(imported, &opts);
            pb.finish_and_clear();
            for line in r? {
                eprintln!("{line}");
            }
            Ok(())
        }
        Cmd::Run { artifact: dir, inputs, outputs, repeat } => {
            let ran = ember_compiler::run(&dir, &inputs, &outputs, repeat)?;
            for line in &ran.notes {
                eprintln!("{line}");
            }
            if ran.exit_code != 0 {
                // The runner printed its own message.
                return Err(Failure { msg: String::new(), code: ran.exit_code });
            }
            Ok(())
        }
        Cmd::Ops { dialect } => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            for d in ember_compiler::ir::dialect::all_ops() {
                if dialect.as_deref().is_some_and(|x| x != d.dialect()) {
                    continue;
                }
                let trust = if d.rule == ember_compiler::ir::dialect::Rule::Trust {
                    "  [result types trusted, not inferred]"
                } else {
                    ""
                };
                // A closed pipe (`ember ops | head`) ends the listing quietly.
                if writeln!(out, "{}\n    {}\n    {}{trust}", d.name, d.sig, d.doc).is_err() {
                    break;
                }
            }
            Ok(())
        }
    }
}
