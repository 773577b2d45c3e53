//! `ember`: the command-line front of the compiler. Only this crate parses arguments.

use clap::{Parser, Subcommand};
use ember_compiler::artifact::{self, Target};
use ember_ir::Module;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    #[command(after_help = "Example:\n  ember compile testdata/models/mlp.pt2 --target cpu -o out/\n\nTargets: cpu (native code via LLVM; `ember run` runs it), tpu (StableHLO; `ember run` runs it on
XLA through the Python env), trainium (HLO for neuronx-cc + NKI kernels; `ember run` runs the
portable HLO on XLA CPU).
An existing OUT_DIR is replaced only if it is an Ember artifact; a failed compile leaves nothing.")]
    Compile {
        /// The model: a .pt2 archive from torch.export.save (or an .mlir module without weights).
        model: PathBuf,
        /// cpu, tpu or trainium.
        #[arg(long, value_parser = ["cpu", "tpu", "trainium"])]
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
        #[arg(long, value_parser = ["egraph", "greedy"], default_value = "egraph")]
        fusion: String,
        /// tpu: shard over a device mesh, e.g. `x=2,y=4` (Shardy annotations; XLA partitions).
        #[arg(long, value_name = "AXIS=SIZE,..")]
        mesh: Option<String>,
        /// tpu, with --mesh: sharding rules `dp`, `fsdp`, `tp` (Megatron), each optionally `=AXIS`
        /// (default: dp and fsdp the first mesh axis, tp the last). Repeatable or comma-separated.
        #[arg(long, value_name = "RULE[=AXIS]")]
        shard: Vec<String>,
        /// tpu: precision of f32 matmuls (dot_general) on a TPU: default (one bf16 pass), high
        /// (three), highest (f32, matches torch; the default).
        #[arg(long, value_parser = ["default", "high", "highest"])]
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
    },
    /// Show what the trainium target makes of a module: NKI kernels or legalized StableHLO.
    #[command(after_help = "Examples:\n  ember trainium testdata/targets/trainium/gemm_ragged_gelu_residual.mlir -o kernels/\n  \
ember trainium model.mlir --emit stablehlo --native-int64\n\n\
--emit kernels: each fusion group of @main with a kernel kind (gemm, softmax, layer_norm,\n\
rms_norm, attention) gets a tile plan, checked against the Trn2 tile and buffer limits, and NKI\n\
source `<name>.py`; with -o DIR, also `<name>.stablehlo.mlir`: the group's body alone, to check\n\
the kernel against. --emit stablehlo: the portable and Neuron forms of the whole module after\n\
legalization for Neuron (what `ember compile --target trainium` converts to HLO).")]
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
    #[command(after_help = "Example:\n  ember run out/ --inputs testdata/models/mlp.npz --outputs got.npz\n\nOutputs are written as out0, out1, ... in user-output order; an in-place update of an input or\nbuffer (a functionalized mutation) as mutated_input.NAME / mutated_buffer.NAME.\n\ntpu artifacts run on XLA through `python -m ember.xla run` (PJRT via jaxlib), with the Python\nin $EMBER_PYTHON, else ~/.cache/ember/venv/bin/python.")]
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
    let mut s = String::from("Example:\n  ember opt model.mlir --passes=canonicalize,cse,dce -o clean.mlir\n\nPasses:\n");
    for p in ember_passes::PASSES {
        s.push_str(&format!("  {:<14} {}\n", p.name, p.doc));
    }
    s
}

struct Failure(String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
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
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if ext == "mlir" {
        let text = std::fs::read_to_string(path).map_err(|e| Failure(format!("cannot read `{}`: {e}", path.display())))?;
        let m = ember_ir::parse_module(&text).map_err(|e| Failure(format!("{}:{e}", path.display())))?;
        if let Err(errs) = ember_ir::verify::verify(&m) {
            let lines: Vec<String> = errs.iter().map(|e| format!("  {e}")).collect();
            return Err(Failure(format!("`{}` does not verify:\n{}", path.display(), lines.join("\n"))));
        }
        return Ok(m);
    }
    let pb = spinner(format!("importing {}", path.display()));
    let r = ember_compiler::import_path(path);
    pb.finish_and_clear();
    Ok(r?.module)
}

fn emit(text: &str, output: Option<&Path>) -> Result<(), Failure> {
    match output {
        Some(p) => ember_compiler::write_atomic(p, text.as_bytes()).map_err(|e| Failure(format!("cannot write `{}`: {e}", p.display()))),
        None => {
            use std::io::Write;
            // A reader that stops early (`| head`) is not an error.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(())
        }
    }
}

/// The Python that runs `ember.xla`: `EMBER_PYTHON`, else `~/.cache/ember/venv/bin/python`, if
/// it exists; `None` otherwise.
fn find_python() -> Option<PathBuf> {
    match std::env::var_os("EMBER_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/ember/venv/bin/python")).filter(|p| p.exists()),
    }
}

fn python(why: &str) -> Result<PathBuf, Failure> {
    find_python().ok_or_else(|| {
        Failure(format!(
            "{why} needs a Python with jax 0.10.2 and the ember package (`make setup` makes ~/.cache/ember/venv), or EMBER_PYTHON set to one"
        ))
    })
}

/// `python -m ember.xla portable`: StableHLO text -> (VHLO bytecode, StableHLO version).
fn vhlo(python: &Path, text: &str) -> Result<(Vec<u8>, String), String> {
    let dir = ember_compiler::scratch::temp_dir("vhlo").map_err(|e| format!("cannot create a scratch dir: {e}"))?;
    let (src, dst) = (dir.join("m.stablehlo.mlir"), dir.join("m.vhlo.mlirbc"));
    let r = (|| {
        std::fs::write(&src, text).map_err(|e| format!("cannot write `{}`: {e}", src.display()))?;
        let o = std::process::Command::new(python)
            .args(["-m", "ember.xla", "portable"])
            .arg(&src)
            .arg(&dst)
            .output()
            .map_err(|e| format!("cannot start `{}`: {e}", python.display()))?;
        if !o.status.success() {
            return Err(format!("`python -m ember.xla portable` failed: {}", String::from_utf8_lossy(&o.stderr).trim()));
        }
        let bytes = std::fs::read(&dst).map_err(|e| format!("cannot read `{}`: {e}", dst.display()))?;
        Ok((bytes, String::from_utf8_lossy(&o.stdout).trim().to_string()))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// `ember run` on a tpu artifact: hands it to `python -m ember.xla run` (the one module that uses
/// jaxlib) with the Python in `EMBER_PYTHON`, else `~/.cache/ember/venv/bin/python`. The runner's
/// exit code and messages are passed through.
fn run_xla(target: &str, dir: &Path, inputs: &Path, outputs: &Path, repeat: usize) -> Result<(), Failure> {
    let how = format!(
        "python -m ember.xla run {} --inputs {} --outputs {}",
        dir.display(),
        inputs.display(),
        outputs.display()
    );
    let Some(python) = find_python() else {
        return Err(Failure(format!(
            "`{}` is a {target} artifact: it runs on XLA through jaxlib, not in this binary. Run\n  {how}\nwith a Python that has jax 0.10.2 and the ember package (`make setup` makes ~/.cache/ember/venv), or set EMBER_PYTHON to one",
            dir.display()
        )));
    };
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "ember.xla", "run"]).arg(dir).arg("--inputs").arg(inputs).arg("--outputs").arg(outputs);
    if repeat > 1 {
        cmd.arg("--repeat").arg(repeat.to_string());
    }
    let status = cmd.status().map_err(|e| {
        Failure(format!("`{}` is a {target} artifact, run by `{how}`; cannot start `{}`: {e} (set EMBER_PYTHON to a Python with jax 0.10.2 and the ember package)", dir.display(), python.display()))
    })?;
    match status.code() {
        Some(0) => Ok(()),
        Some(c) => std::process::exit(c),
        None => Err(Failure(format!("`{} -m ember.xla` was killed by a signal", python.display()))),
    }
}

fn run(cmd: Cmd) -> Result<(), Failure> {
    match cmd {
        Cmd::Import { model, output } => {
            let m = load_module(&model)?;
            emit(&m.to_string(), output.as_deref())
        }
        Cmd::Opt { input, passes, output, print_ir_after_all, trace } => {
            let pipeline = ember_passes::parse_pipeline(&passes.join(","))?;
            let mut m = load_module(&input)?;
            ember_passes::run_pipeline(&mut m, &pipeline, &mut |name, m| {
                if print_ir_after_all {
                    eprintln!("// -----// IR Dump After {name} //----- //\n{m}");
                }
            })?;
            for t in ember_passes::egraph::take_traces() {
                if trace {
                    eprint!("{t}");
                }
            }
            emit(&m.to_string(), output.as_deref())
        }
        Cmd::Trainium { input, emit: what, output, allow_downcast, native_int64 } => {
            let mut m = load_module(&input)?;
            let opts = ember_compiler::trainium::Options { allow_downcast, native_int64 };
            let e = ember_compiler::trainium::inspect(&mut m, &opts)?;
            if what == "stablehlo" {
                return emit(&format!("// ---- portable form ----\n{}// ---- Neuron form ----\n{}", e.portable, e.neuron), output.as_deref());
            }
            match output {
                Some(dir) => {
                    std::fs::create_dir_all(&dir).map_err(|e| Failure(format!("cannot create `{}`: {e}", dir.display())))?;
                    for (k, _, region) in &e.kernels {
                        emit(&k.source, Some(&dir.join(format!("{}.py", k.name))))?;
                        emit(region, Some(&dir.join(format!("{}.stablehlo.mlir", k.name))))?;
                    }
                    Ok(())
                }
                None => {
                    let text: String = e.kernels.iter().map(|(k, _, _)| format!("# ---- kernels/{}.py ----\n{}", k.name, k.source)).collect();
                    emit(&text, None)
                }
            }
        }
        Cmd::Compile { model, target, output, report, fusion, mesh, shard, precision, portable, allow_downcast, native_int64 } => {
            let target = Target::parse(&target).expect("clap checked the target");
            let shard = match (&mesh, target == Target::Tpu) {
                (Some(mesh), true) => Some(ember_targets::tpu::sharding::Options::parse(mesh, &shard).map_err(Failure)?),
                (Some(_), false) => return Err(Failure(format!("--mesh is a tpu option; the {} target runs on one device", target.name()))),
                (None, _) if !shard.is_empty() => return Err(Failure("--shard needs --mesh (e.g. `--mesh x=2,y=4 --shard tp`)".into())),
                (None, _) => None,
            };
            if portable && target != Target::Tpu {
                return Err(Failure(format!("--portable is a tpu option (VHLO artifacts); not for the {} target", target.name())));
            }
            if precision.is_some() && target != Target::Tpu {
                return Err(Failure(format!("--precision is a tpu option; the {} target computes f32 matmuls in f32", target.name())));
            }
            if fusion != "egraph" && target != Target::Cpu {
                return Err(Failure(format!("--fusion is a cpu option; the {} target always uses the e-graph optimizer", target.name())));
            }
            let precision = precision.map(|p| ember_targets::tpu::Precision::parse(&p).expect("clap checked it")).unwrap_or_default();
            if (allow_downcast || native_int64) && target != Target::Trainium {
                return Err(Failure(format!("--allow-downcast and --native-int64 are trainium options; not for the {} target", target.name())));
            }
            let imported = if model.extension().is_some_and(|e| e == "mlir") {
                // A module without weights (every argument an `ember.input`), e.g. a test case.
                ember_compiler::Imported { module: load_module(&model)?, weights: vec![] }
            } else {
                let pb = spinner(format!("importing {}", model.display()));
                let imported = ember_compiler::import_path(&model);
                pb.finish_and_clear();
                imported?
            };
            let for_report = report.then(|| imported.module.clone());
            let fusion = if fusion == "greedy" { ember_compiler::cpu::Fusion::Greedy } else { ember_compiler::cpu::Fusion::Egraph };
            let r: Result<(), Failure> = match &target {
                Target::Cpu => {
                    let pb = spinner(format!("compiling for cpu into {}", output.display()));
                    let r = ember_compiler::cpu::compile_with(imported, &output, fusion);
                    pb.finish_and_clear();
                    let man = r.map_err(Failure)?;
                    eprintln!("wrote {} ({} kernels, {} GEMMs)", output.display(),
                        man.steps.iter().filter(|s| matches!(s, ember_targets::cpu::plan::Step::Kernel { .. })).count(),
                        man.steps.iter().filter(|s| matches!(s, ember_targets::cpu::plan::Step::Gemm(_))).count());
                    Ok(())
                }
                Target::Tpu => {
                    let pb = spinner(format!("compiling for tpu into {}", output.display()));
                    let python = if portable { Some(python("ember compile --portable")?) } else { None };
                    let serialize = |text: &str| vhlo(python.as_deref().expect("--portable"), text);
                    let opts = ember_targets::tpu::Options { shard, precision };
                    let r = ember_compiler::tpu::compile_portable(imported, &output, &opts, portable.then_some(&serialize as ember_compiler::tpu::Portable));
                    pb.finish_and_clear();
                    let man = r.map_err(Failure)?;
                    eprintln!("wrote {} (StableHLO for XLA; inputs: {}, weights: {}, outputs: {}); run it with `ember run` or\n  python -m ember.xla run {} --inputs IN.npz --outputs OUT.npz",
                        output.display(), man.inputs.len(), man.weights.len(), man.outputs.len(), output.display());
                    Ok(())
                }
                Target::Trainium => {
                    let pb = spinner(format!("compiling for trainium into {}", output.display()));
                    let opts = ember_compiler::trainium::Options { allow_downcast, native_int64 };
                    let r = ember_compiler::trainium::compile(imported, &output, &opts);
                    pb.finish_and_clear();
                    let man = r.map_err(Failure)?;
                    for w in &man.plain_groups {
                        eprintln!("warning: {w}");
                    }
                    for k in &man.kernels {
                        eprintln!("kernel {} ({}{}): {} SBUF bytes/partition, {} PSUM banks", k.name, k.kind,
                            if k.at.is_empty() { String::new() } else { format!(" at {}", k.at) }, k.sbuf_bytes_per_partition, k.psum_banks);
                    }
                    let buckets = man.buckets.as_ref().map(|b| format!(", {} padded buckets", b.len())).unwrap_or_default();
                    eprintln!("wrote {} (HLO for neuronx-cc, {} NKI kernels{buckets}); run the portable form on XLA CPU with `ember run`",
                        output.display(), man.kernels.len());
                    Ok(())
                }
            };
            r?;
            if let Some(module) = for_report {
                let name = model.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                write_report(&output, module, target.name(), &name)?;
            }
            Ok(())
        }
        Cmd::Run { artifact: dir, inputs, outputs, repeat } => {
            let h = artifact::read_header(&dir)?;
            if h.target == "tpu" || h.target == "trainium" {
                return run_xla(&h.target, &dir, &inputs, &outputs, repeat);
            }
            if h.target != "cpu" {
                return Err(Failure(format!("target `{}` is not built yet: this Ember runs cpu, tpu and trainium artifacts only", h.target)));
            }
            let prog = ember_targets::cpu::Program::load(&dir).map_err(|e| Failure(format!("`{}`: {e}", dir.display())))?;
            let mut arrays = ember_compiler::npz::read_npz(&inputs)?;
            let mut args = Vec::new();
            for (i, info) in prog.manifest.inputs.iter().enumerate() {
                let t = arrays.remove(&format!("arg{i}")).ok_or_else(|| Failure(format!(
                    "`{}` has no array `arg{i}` for input {i} (`{}`)", inputs.display(), info.name)))?;
                args.push(t);
            }
            let mut outs = prog.run(&args).map_err(|e| Failure(format!("`{}`: {e}", inputs.display())))?;
            if repeat > 1 {
                let mut times = Vec::with_capacity(repeat);
                for _ in 0..repeat {
                    let t = std::time::Instant::now();
                    // Free the previous outputs first, as a caller that drops each result does
                    // (torch's benchmark loop): the allocator then reuses their pages instead of
                    // faulting in fresh ones.
                    drop(std::mem::take(&mut outs));
                    outs = prog.run(&args).map_err(|e| Failure(e))?;
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
                times.sort_by(|a, b| a.partial_cmp(b).unwrap());
                eprintln!("median {:.4} ms over {repeat} runs (min {:.4}, max {:.4})", times[repeat / 2], times[0], times[repeat - 1]);
            }
            let mutates: Vec<Option<String>> = prog.manifest.outputs.iter().map(|o| o.mutates.clone()).collect();
            let named: Vec<(String, _)> = ember_compiler::artifact::output_array_names(&mutates).into_iter().zip(outs).collect();
            ember_compiler::npz::write_npz(&outputs, &named)?;
            Ok(())
        }
        Cmd::Ops { dialect } => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            for d in ember_ir::dialect::all_ops() {
                if dialect.as_deref().is_some_and(|x| x != d.dialect()) {
                    continue;
                }
                let trust = if d.rule == ember_ir::dialect::Rule::Trust { "  [result types trusted, not inferred]" } else { "" };
                // A closed pipe (`ember ops | head`) ends the listing quietly.
                if writeln!(out, "{}\n    {}\n    {}{trust}", d.name, d.sig, d.doc).is_err() {
                    break;
                }
            }
            Ok(())
        }
    }
}


/// Writes OUT/report/ (through a temp dir renamed into place, like every output).
fn write_report(out: &Path, module: ember_ir::Module, target: &str, model: &str) -> Result<(), Failure> {
    let (md, dot) = ember_compiler::artifact::fusion_report(module, target, model).map_err(Failure)?;
    let dir = out.join("report");
    let tmp = out.join(".report.tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| Failure(format!("cannot create {}: {e}", tmp.display())))?;
    let w = |name: &str, bytes: &[u8]| std::fs::write(tmp.join(name), bytes).map_err(|e| Failure(format!("cannot write {name}: {e}")));
    w("fusion.md", md.as_bytes())?;
    w("fusion.dot", dot.as_bytes())?;
    // The picture needs Graphviz; the DOT file is always there.
    if let Ok(o) = std::process::Command::new("dot").arg("-Tsvg").arg(tmp.join("fusion.dot")).output() {
        if o.status.success() {
            w("fusion.svg", &o.stdout)?;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir).map_err(|e| Failure(format!("cannot write {}: {e}", dir.display())))?;
    eprintln!("wrote {}", dir.join("fusion.md").display());
    Ok(())
}
