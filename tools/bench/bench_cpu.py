#!/usr/bin/env python3
"""CPU benchmark: torch eager vs Inductor vs Ember, through torch.compile and through the CLI.

For every case of tools/bench/cases.py (fp32, 2 threads) it measures two paths in one run:

- torch.compile (the path users run): in a fresh process per case with empty Inductor and
  Ember caches, eager, `torch.compile(m)` and `torch.compile(m, backend="ember")` timed in
  interleaved rounds (one call of each in turn, so a noisy machine loads them alike; for the
  call-overhead cases, CALLS calls of each in turn); the
  first call of each (Dynamo, compile, one execution), and in a second fresh process the first
  call again from the warm caches; Ember's outputs against eager's;
- the CLI: Inductor's first call in a fresh process and its per-call time, `ember compile`'s
  wall time and `ember run --repeat`'s median, Ember's fraction of the machine roofline (GEMM
  GFLOP/s or copy GB/s measured in the same run), e-graph vs greedy fusion.

Writes tools/bench/results/cpu.md and cpu.png.

    python tools/bench/bench_cpu.py [--cases mlp,gpt2_block] [--iters 20] [--ember PATH] [--paths compile,cli]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PYPKG = ROOT / "tools" / "python" / "python"
sys.path[:0] = [str(HERE), str(PYPKG)]
THREADS = 2
CALLS = 50  # calls per timed round of a call-overhead case
REL_TOL = 1e-3

import numpy as np  # noqa: E402
import torch  # noqa: E402

import cases  # noqa: E402
from ember.export import export_model, load_model  # noqa: E402


def time_fn(fn, iters: int, warmup: int = 3) -> tuple[float, float]:
    """(median, min) wall time in ms of fn() over iters calls, after warmup calls."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


def rel_diff(got, ref) -> tuple[float, float]:
    """(max abs diff, max abs diff / max |ref|) over all outputs."""
    mad, scale = 0.0, 0.0
    for g, r in zip(got, ref):
        g, r = np.asarray(g, np.float64), np.asarray(r, np.float64)
        if g.shape != r.shape:
            return math.inf, math.inf
        mad = max(mad, float(np.max(np.abs(g - r))))
        scale = max(scale, float(np.max(np.abs(r))))
    return mad, mad / max(scale, 1e-30)


def machine_roofline(iters: int) -> tuple[float, float]:
    """(GEMM GFLOP/s of a 2048^3 fp32 torch.mm, copy GB/s counting read + write), from the
    fastest iteration: the machine's capability even when other processes share the cores."""
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    c = torch.empty(2048, 2048)
    gemm_ms = time_fn(lambda: torch.mm(a, b, out=c), iters)[1]
    src, dst = torch.randn(64 << 20), torch.empty(64 << 20)  # 256 MiB each
    copy_ms = time_fn(lambda: dst.copy_(src), iters)[1]
    return 2 * 2048**3 / gemm_ms / 1e6, 2 * src.numel() * 4 / copy_ms / 1e6


def inductor_worker(case: str, iters: int) -> None:
    """Runs in a fresh process (empty TORCHINDUCTOR_CACHE_DIR set by the parent)."""
    torch.set_num_threads(THREADS)
    loaded = load_model(cases.CASES[case]["factory"], seed=0)
    model, inputs = loaded.module.eval(), loaded.inputs
    with torch.no_grad():
        ref = model(*inputs)
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        out = compiled(*inputs)
        compile_s = time.perf_counter() - t0
        ms, mn = time_fn(lambda: compiled(*inputs), iters)
    _, rel = rel_diff([out.numpy()], [ref.numpy()])
    print(json.dumps(dict(compile_s=compile_s, ms=ms, min=mn, rel=rel)))


def compile_worker(case: str, rounds: int, first_only: bool) -> None:
    """One case through torch.compile, in a fresh process whose caches the parent chose: with
    first_only, just each backend's first call (from warm caches: a second process)."""
    import ember.backend  # registers backend="ember"

    torch.set_num_threads(THREADS)
    loaded = load_model(cases.CASES[case]["factory"], seed=0)
    model, inputs = loaded.module.eval(), loaded.inputs
    res: dict = {}
    with torch.no_grad():
        ref = model(*inputs)
        fns = {"eager": model}
        for name, kw in (("inductor", {}), ("ember", {"backend": "ember"})):
            fn = torch.compile(model, **kw)
            t0 = time.perf_counter()
            out = fn(*inputs)
            res[f"{name}_first"] = time.perf_counter() - t0
            res[f"{name}_mad"], res[f"{name}_rel"] = rel_diff([out.numpy()], [ref.numpy()])
            fns[name] = fn
        res["stats"] = {k: v for k, v in ember.backend.stats.items() if k != "targets"}
        if not first_only:
            for fn in fns.values():
                for _ in range(3):
                    fn(*inputs)
            # A call-overhead case's round is CALLS calls in a row: a user's loop calls the same
            # compiled model, not three backends in turn (whose code and data evict the caches).
            calls = CALLS if cases.CASES[case]["kind"] == "call" else 1
            times: dict[str, list[float]] = {k: [] for k in fns}
            for _ in range(rounds):
                for k, fn in fns.items():
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        fn(*inputs)
                    times[k].append((time.perf_counter() - t0) * 1e3 / calls)
            for k, ts in times.items():
                res[k], res[k + "_min"] = statistics.median(ts), min(ts)
    print(json.dumps(res))


def run_compile(case: str, rounds: int, tmp: Path) -> dict:
    caches = Path(tempfile.mkdtemp(prefix=f"compile-{case}-", dir=tmp))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(caches / "inductor"), EMBER_CACHE_DIR=str(caches / "ember"),
               TMPDIR=str(tmp), RAYON_NUM_THREADS=str(THREADS))
    row: dict = {}
    for first_only in (False, True):
        argv = [sys.executable, __file__, "--_compile-worker", case, "--iters", str(rounds)]
        p = subprocess.run(argv + (["--_first-only"] if first_only else []), env=env, capture_output=True, text=True)
        if p.returncode != 0:
            return dict(row, error=("warm " if first_only else "") + "torch.compile failed: " + first_error_line(p.stderr))
        res = json.loads(p.stdout.strip().splitlines()[-1])
        if first_only:
            row.update(inductor_warm=res["inductor_first"], ember_warm=res["ember_first"], warm_stats=res["stats"])
        else:
            row.update(res)
    return row


def run_inductor(case: str, iters: int, tmp: Path) -> dict:
    cache = Path(tempfile.mkdtemp(prefix=f"inductor-{case}-", dir=tmp))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), TMPDIR=str(tmp))
    p = subprocess.run([sys.executable, __file__, "--_inductor-worker", case, "--iters", str(iters)],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return dict(error="inductor failed: " + (p.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


def first_error_line(text: str) -> str:
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    err = next((l for l in lines if "error" in l.lower()), lines[0] if lines else "unknown error")
    return err[:160]


def run_ember(ember: str, pt2: Path, npz: Path, iters: int, work: Path, fusion: str = "egraph") -> dict:
    art, got = work / f"art-{fusion}", work / f"got-{fusion}.npz"
    env = dict(os.environ, RAYON_NUM_THREADS=str(THREADS))
    t0 = time.perf_counter()
    p = subprocess.run([ember, "compile", str(pt2), "--target", "cpu", "-o", str(art), "--fusion", fusion],
                       env=env, capture_output=True, text=True)
    compile_s = time.perf_counter() - t0
    if p.returncode != 0:
        return dict(error="compile: " + first_error_line(p.stderr + p.stdout))
    k = re.search(r"\((\d+) kernels, (\d+) GEMMs\)", p.stderr)
    steps = int(k.group(1)) + int(k.group(2)) if k else None
    est = None
    if fusion == "egraph":
        r = subprocess.run([ember, "compile", str(pt2), "--target", "cpu", "-o", str(work / "art-report"), "--report"],
                           env=env, capture_output=True, text=True)
        m = re.search(r"time [0-9.]+ µs → ([0-9.]+) µs", (work / "art-report" / "report" / "fusion.md").read_text()) if r.returncode == 0 else None
        est = float(m.group(1)) / 1e3 if m else None
    p = subprocess.run([ember, "run", str(art), "--inputs", str(npz), "--outputs", str(got),
                        "--repeat", str(iters)], env=env, capture_output=True, text=True)
    m = re.search(r"median ([0-9.]+) ms .*\(min ([0-9.]+)", p.stderr)
    if p.returncode != 0 or not m:
        return dict(error="run: " + first_error_line(p.stderr + p.stdout), compile_s=compile_s)
    ref, out = np.load(npz), np.load(got)
    keys = sorted((k for k in ref.files if k.startswith("out")), key=lambda k: int(k[3:]))
    mad, rel = rel_diff([out[k] for k in keys], [ref[k] for k in keys])
    return dict(ms=float(m.group(1)), min=float(m.group(2)), compile_s=compile_s, mad=mad, rel=rel, steps=steps, est=est)


def roofline(spec: dict, ms: float, peak: dict) -> float | None:
    if spec["kind"] == "gemm":
        return spec["flops"] / ms / 1e6 / peak["gflops"]
    if spec["kind"] == "mem":
        return spec["bytes"] / ms / 1e6 / peak["gbps"]
    return None


def bench_case(name: str, args, tmp: Path, peak: dict) -> dict:
    spec = cases.CASES[name]
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp))
    row = dict(case=name, kind=spec["kind"])
    print(f"[{name}] export", file=sys.stderr, flush=True)
    res = export_model(spec["factory"], work / f"{name}.pt2", seed=0)
    print(f"[{name}] eager", file=sys.stderr, flush=True)
    loaded = load_model(spec["factory"], seed=0)
    model, inputs = loaded.module.eval(), loaded.inputs
    with torch.no_grad():
        row["eager"], row["eager_min"] = time_fn(lambda: model(*inputs), args.iters)
    del model, inputs, loaded
    print(f"[{name}] inductor (fresh process, cold cache)", file=sys.stderr, flush=True)
    ind = run_inductor(name, args.iters, tmp)
    row.update(ind_err=ind.get("error"), inductor=ind.get("ms"), inductor_min=ind.get("min"), ind_compile=ind.get("compile_s"),
               ind_rel=ind.get("rel"))
    print(f"[{name}] ember", file=sys.stderr, flush=True)
    emb = run_ember(args.ember, res.pt2, res.npz, args.iters, work)
    row.update(ember_err=emb.get("error"), ember=emb.get("ms"), ember_min=emb.get("min"), ember_compile=emb.get("compile_s"),
               mad=emb.get("mad"), rel=emb.get("rel"), steps=emb.get("steps"), est=emb.get("est"))
    print(f"[{name}] ember, greedy fusion (no e-graph)", file=sys.stderr, flush=True)
    gr = run_ember(args.ember, res.pt2, res.npz, args.iters, work, fusion="greedy")
    row.update(greedy=gr.get("ms"), greedy_steps=gr.get("steps"), greedy_err=gr.get("error"))
    if row["ember"]:
        row["roof"] = roofline(spec, row["ember"], peak)
        row["bad"] = not (row["rel"] <= REL_TOL)
    print(f"[{name}] {row}", file=sys.stderr, flush=True)
    return row


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def table(rows: list[dict]) -> str:
    head = ["case", "eager ms", "Inductor ms", "Ember ms", "Ember/Ind", "Ember/Ind (min)", "Ember/eager",
            "Ember roofline", "Ind compile s", "Ember compile s", "Ember max|diff| (rel)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        mm = lambda k: f"{fmt(r[k])} ({fmt(r[k + '_min'])})"
        ind = mm("inductor") if r["ind_err"] is None else r["ind_err"]
        if r["ember_err"]:
            cells = [r["case"], mm("eager"), ind, "ERROR: " + r["ember_err"].replace("|", "\\|"),
                     "-", "-", "-", "-", fmt(r["ind_compile"]), fmt(r["ember_compile"]), "-"]
        else:
            e = r["ember"]
            cells = [r["case"], mm("eager"), ind, mm("ember"),
                     fmt(e / r["inductor"]) if r["inductor"] else "-",
                     fmt(r["ember_min"] / r["inductor_min"]) if r["inductor"] else "-", fmt(e / r["eager"]),
                     f"{100 * r['roof']:.0f}% ({'GEMM' if r['kind'] == 'gemm' else 'mem'})" if r["roof"] else "-",
                     fmt(r["ind_compile"]), fmt(r["ember_compile"]),
                     f"{r['mad']:.2e} ({r['rel']:.1e})" + (" **WRONG**" if r["bad"] else "")]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def compile_table(rows: list[dict]) -> str:
    head = ["case", "eager ms", "Inductor ms", "Ember ms", "Ember/Ind", "Ember/Ind (min)", "Ember/eager",
            "first call s: Ind / Ember (ratio)", "warm-cache first call s: Ind / Ember", "Ember graphs: compiled, fallbacks",
            "Ember max|diff| (rel)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r.get("error") and "ember" not in r:
            out.append("| " + " | ".join([r["case"], "ERROR: " + r["error"].replace("|", "\\|")] + ["-"] * (len(head) - 2)) + " |")
            continue
        mm = lambda k: f"{fmt(r[k])} ({fmt(r[k + '_min'])})"
        st = r["stats"]
        cells = [r["case"], mm("eager"), mm("inductor"), mm("ember"), fmt(r["ember"] / r["inductor"]),
                 fmt(r["ember_min"] / r["inductor_min"]), fmt(r["ember"] / r["eager"]),
                 f"{r['inductor_first']:.2f} / {r['ember_first']:.2f} ({r['ember_first'] / r['inductor_first']:.2f})",
                 f"{fmt(r.get('inductor_warm'))} / {fmt(r.get('ember_warm'))}",
                 f"{st['compiled'] + st['cache_hits']}, {st['fallbacks']}",
                 f"{r['ember_mad']:.2e} ({r['ember_rel']:.1e})" + (" **WRONG**" if r["bad"] else "")]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def fusion_table(rows: list[dict]) -> str:
    """E-graph kernels vs the planner's greedy rule, and the cost model's estimate vs measurement."""
    head = ["case", "steps e-graph / greedy", "Ember e-graph ms", "Ember greedy ms", "e-graph/greedy",
            "estimated ms (CPU cost model)", "measured/estimated"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        e, g, est = r.get("ember"), r.get("greedy"), r.get("est")
        ratio = e / est if e and est else None
        flag = " **>2x off**" if ratio and (ratio > 2 or ratio < 0.5) else ""
        out.append("| " + " | ".join([
            r["case"], f"{r.get('steps') or '-'} / {r.get('greedy_steps') or '-'}", fmt(e),
            fmt(g) if g else (r.get("greedy_err") or "-"), fmt(e / g) if e and g else "-",
            fmt(est, ".3f"), (fmt(ratio) + flag) if ratio else "-"]) + " |")
    return "\n".join(out)


def geomean_ratio(rows, sfx=""):
    rs = [r["ember" + sfx] / r["inductor" + sfx] for r in rows if r.get("ember") and r.get("inductor")]
    return (math.exp(sum(map(math.log, rs)) / len(rs)), len(rs)) if rs else (None, 0)


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def plot(panels: list[tuple[str, list[dict]]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = [(t, rows) for t, rows in panels if rows]
    if not panels:
        return
    width = max(len(rows) for _, rows in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(1.6 * width + 2, 4.2 * len(panels)), squeeze=False)
    w = 0.27
    for ax, (title, rows) in zip(axes[:, 0], panels):
        for i, (key, label) in enumerate([("eager", "torch eager"), ("inductor", "Inductor"), ("ember", "Ember")]):
            vals = [r.get(key) or 0 for r in rows]
            bars = ax.bar([x + (i - 1) * w for x in range(len(rows))], vals, w, label=label)
            for b, v in zip(bars, vals):
                txt = f"{v:.3g}" if v else ("error" if key == "ember" else "n/a")
                ax.annotate(txt, (b.get_x() + w / 2, max(v, 1e-3)), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(rows)), [r["case"] for r in rows], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("median ms (log, lower is better)")
        ax.set_title(f"{title}: CPU fp32, {THREADS} threads ({cpu_model()})", fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def ember_extension() -> str:
    """Which build of the extension torch.compile uses (per-call overhead depends on it)."""
    p = subprocess.run([sys.executable, "-c", "import ember, ember._ember as e; print(f'{e.__file__} ({e.build_profile()} build)')"],
                       capture_output=True, text=True)
    return p.stdout.strip() or "not importable: " + first_error_line(p.stderr)


def compile_section(rows: list[dict], rounds: int) -> list[str]:
    gm, n = geomean_ratio(rows)
    gm_min, _ = geomean_ratio(rows, "_min")
    over = [r["case"] for r in rows if r.get("ember") and r.get("inductor") and r["ember"] > r["inductor"]]
    lines = ["## Through torch.compile (the path users run)", "",
             f"Fresh process per case, empty caches; eager, Inductor and Ember timed in {rounds} interleaved rounds "
             f"(fewer where the case says; a round of a call-overhead case (kind `call` in cases.py) is {CALLS} "
             "calls in a row, timed together), medians (mins) per call; first call = Dynamo + compile + one execution; "
             "warm-cache first call = the same in a second fresh process over the caches the first one filled. "
             "Ember graphs: graphs Ember compiled or loaded, and partitions left to eager.", "",
             compile_table(rows), ""]
    if gm:
        lines.append(f"**Geomean Ember/Inductor through torch.compile: {gm:.2f}x** (medians; {gm_min:.2f}x on min times) "
                     f"over {n} case(s); slower than Inductor: {', '.join(over) or 'none'}")
    add1 = next((r for r in rows if r["case"] == "add1" and r.get("ember")), None)
    if add1:
        lines.append(f"\nPer-call cost of a 16-element add (`add1`, all overhead): eager {1e3 * add1['eager']:.1f} µs, "
                     f"Inductor {1e3 * add1['inductor']:.1f} µs, Ember {1e3 * add1['ember']:.1f} µs (medians).")
    return lines + [""]


def cli_section(rows: list[dict], args, gflops: float, gbps: float) -> list[str]:
    gm, n = geomean_ratio(rows)
    gm_min, _ = geomean_ratio(rows, "_min")
    lines = [
        "## Through the CLI (`ember compile` + `ember run`)", "",
        f"- roofline measured in this run (fastest of {args.iters} iterations, best of start/end): GEMM {gflops:.1f} GFLOP/s "
        f"(torch.mm 2048x2048 fp32), memory {gbps:.1f} GB/s (256 MiB tensor copy, read+write bytes)",
        "- Ember roofline = FLOPs/(Ember median time) vs GEMM peak (GEMM cases) or minimal bytes (inputs+outputs)/time "
        "vs copy bandwidth (mem cases)",
        "- Inductor compile = first call in a fresh process with an empty TORCHINDUCTOR_CACHE_DIR "
        "(includes Dynamo tracing and one execution); Ember compile = wall time of `ember compile` "
        "on the exported .pt2 (torch.export not included)",
        "", table(rows), "",
        "Kernel formation: the e-graph optimizer (default) vs the CPU planner's greedy rule "
        "(`ember compile --fusion greedy`), measured in this run; steps = kernels + GEMM calls. "
        "The estimate is the CPU cost model's (report/fusion.md, sum over kernels run one after another).", "",
        fusion_table(rows), "",
        f"**Geomean Ember/Inductor through the CLI: {gm:.2f}x** (medians; {gm_min:.2f}x on min times) over {n} case(s) "
        "(>1 means Ember is slower)" if gm else "**Geomean Ember/Inductor through the CLI: n/a** (no case ran on both)",
    ]
    errs = [r["case"] for r in rows if r["ember_err"]]
    if errs:
        lines.append(f"\nEmber failed on: {', '.join(errs)}")
    return lines + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(cases.CASES), help="comma-separated (default: all): "
                    + ", ".join(cases.CASES))
    ap.add_argument("--iters", type=int, default=20, help="timed iterations (rounds) per backend (default 20)")
    ap.add_argument("--paths", default="compile,cli", help="which paths to measure: compile (torch.compile), cli "
                    "(default: both)")
    ap.add_argument("--ember", default=str(ROOT / "target" / "release" / "ember"), help="ember binary for the CLI path")
    ap.add_argument("--out", default=str(HERE / "results"), help="results dir (cpu.md, cpu.png)")
    ap.add_argument("--note", action="append", default=[], help="a line for the report's header (repeatable)")
    ap.add_argument("--_inductor-worker", dest="worker", help=argparse.SUPPRESS)
    ap.add_argument("--_compile-worker", dest="compile_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_first-only", dest="first_only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(THREADS)
    if args.worker:
        inductor_worker(args.worker, args.iters)
        return 0
    if args.compile_worker:
        compile_worker(args.compile_worker, args.iters, args.first_only)
        return 0
    names = [c for c in args.cases.split(",") if c]
    unknown = [c for c in names if c not in cases.CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; known: {list(cases.CASES)}")
    paths = [p for p in args.paths.split(",") if p]
    if not paths or set(paths) - {"compile", "cli"}:
        ap.error(f"--paths: choose from compile, cli (got {args.paths!r})")
    if "cli" in paths and not Path(args.ember).exists():
        ap.error(f"no ember binary at {args.ember} (cargo build --release -p ember-tools, or --ember)")
    tmp = Path(os.environ.get("TMPDIR") or "/tmp/ember-tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)
    tmp = Path(tempfile.mkdtemp(prefix="bench-cpu-", dir=tmp))
    load0 = os.getloadavg()[0]
    compile_rows: list[dict] = []
    if "compile" in paths:
        for n in names:
            rounds = min(args.iters, cases.CASES[n].get("rounds", args.iters))
            print(f"[{n}] torch.compile: eager, Inductor, Ember ({rounds} rounds)", file=sys.stderr, flush=True)
            row = dict(case=n, **run_compile(n, rounds, tmp))
            row["bad"] = "ember_rel" in row and not (row["ember_rel"] <= REL_TOL)
            compile_rows.append(row)
            print(f"[{n}] {row}", file=sys.stderr, flush=True)
    cli_rows: list[dict] = []
    gflops = gbps = 0.0
    if "cli" in paths:
        print("[roofline] torch.mm 2048^3 and 256 MiB copy", file=sys.stderr, flush=True)
        gflops, gbps = machine_roofline(args.iters)
        peak = dict(gflops=gflops, gbps=gbps)
        cli_names = [n for n in names if not cases.CASES[n].get("compile_only")]
        cli_rows = [bench_case(n, args, tmp, peak) for n in cli_names]
        print("[roofline] again, keeping the best of start and end", file=sys.stderr, flush=True)
        g2, b2 = machine_roofline(args.iters)
        if g2 > gflops or b2 > gbps:
            gflops, gbps = max(gflops, g2), max(gbps, b2)
            peak = dict(gflops=gflops, gbps=gbps)
            for r, n in zip(cli_rows, cli_names):
                if r.get("ember"):
                    r["roof"] = roofline(cases.CASES[n], r["ember"], peak)
    load1 = os.getloadavg()[0]
    bad = [r["case"] for r in compile_rows + cli_rows if r.get("bad")]
    ember_ver = subprocess.run([args.ember, "--version"], capture_output=True, text=True).stdout.strip() if "cli" in paths else ""
    git = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    lines = [
        "# Ember CPU benchmark", "",
        f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}",
        f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.machine()}, {platform.system()}",
        f"- torch {torch.__version__}, threads: {THREADS} (torch.set_num_threads, RAYON_NUM_THREADS for Ember); fp32; "
        f"tree {git or '?'}",
        f"- Ember: torch.compile uses the extension at {ember_extension()}"
        + (f"; the CLI is {ember_ver or 'ember'} ({args.ember})" if "cli" in paths else ""),
        f"- 1-min load average at start / end: {load0:.2f} / {load1:.2f} (other processes share the cores)",
        "- times are `median (min)` ms; ratios use medians unless marked (min)",
        f"- correctness: Ember outputs vs eager; rel = max|diff| / max|ref|, flagged WRONG above {REL_TOL:g}",
        *[f"- note: {t}" for t in args.note], "",
    ]
    if compile_rows:
        lines += compile_section(compile_rows, args.iters)
    if cli_rows:
        lines += cli_section(cli_rows, args, gflops, gbps)
    if bad:
        lines.append(f"**Wrong results (rel diff > {REL_TOL:g}): {', '.join(bad)}**")
    md = "\n".join(lines).rstrip() + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu.md").write_text(md)
    plot([("torch.compile", [r for r in compile_rows if r.get("ember")]), ("CLI", cli_rows)], out / "cpu.png")
    print(md)
    print(f"wrote {out / 'cpu.md'} and {out / 'cpu.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
