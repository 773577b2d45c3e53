#!/usr/bin/env python3
"""Training benchmark: one optimizer step under torch eager, Inductor (`torch.compile` default
backend) and Ember (`torch.compile(backend="ember")`), fp32 (and the `_bf16` cases under bf16
autocast), 2 threads.

Step times come from one process per case that holds all three (same initial weights) and
steps them in turn, eager, Inductor, Ember, eager, ...: the machine is shared, and runs in
separate processes moved by up to 30 % against each other (load from elsewhere, and each
process's own heap: one backend's step took 258 ms alone and 204 ms next to another model).
Compile times come from a fresh process per (case, backend) with empty compile caches, in
rounds (each backend keeps its faster round). A step is zero_grad, forward, loss, backward and
the optimizer step, which `--compile-optimizer` compiles too under Inductor and Ember (table
train_optimizer). Reported per backend: the median step time over the timed
steps after warm-up, the compile time (first step minus the median step of that process), and
for Ember the graphs it compiled, how many were backward graphs, and its fallbacks; the first
step's loss is compared with eager's. Writes tools/bench/results/NAME.md and NAME.png
(`--name`, default train; the bf16 autocast cases are committed as train_bf16).

    python tools/bench/bench_train.py [--cases mlp_adamw,gpt2_lm,resnet_bn,mobilenet_v3,mlp_adamw_bf16,gpt2_lm_bf16] [--steps 20] [--compile-optimizer]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "python" / "python"))
THREADS = 2
BACKENDS = ("eager", "inductor", "ember")
#: Timed steps of the compile-time processes (their median is subtracted from the first step).
COMPILE_STEPS = 5
#: `--compile-optimizer`: Inductor and Ember also compile `opt.step` (eager's stays eager).
COMPILE_OPTIMIZER = False

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def mlp_adamw():
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096))
    x, y = torch.randn(256, 4096), torch.randn(256, 4096)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), lambda m: F.mse_loss(m(x), y)


def gpt2_lm():
    import transformers

    cfg = transformers.GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=256, vocab_size=8192, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 8192, (4, 256))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), lambda m: m(input_ids=ids, labels=ids).loss


def resnet_bn():
    def block(cin: int, cout: int, stride: int) -> torch.nn.Module:
        return torch.nn.Sequential(
            torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
            torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
        )  # fmt: skip

    model = torch.nn.Sequential(
        block(3, 32, 1), block(32, 64, 2), block(64, 128, 2), block(128, 256, 2),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 10),
    )  # fmt: skip
    x, y = torch.randn(16, 3, 64, 64), torch.randint(0, 10, (16,))
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), lambda m: F.cross_entropy(m(x), y)


def mobilenet_v3():
    """A model this repository did not write: torchvision's MobileNetV3-small (depthwise
    convolutions, hardswish, squeeze-excitation, 52 convolutions between Ember's pieces)."""
    import torchvision

    model = torchvision.models.mobilenet_v3_small(num_classes=10)
    x, y = torch.randn(16, 3, 128, 128), torch.randint(0, 10, (16,))
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), lambda m: F.cross_entropy(m(x), y)


def bf16_autocast(factory):
    """The case's forward and loss under `torch.autocast("cpu", bfloat16)` (f32 master weights)."""

    def make():
        model, opt, loss_fn = factory()

        def loss(m):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return loss_fn(m)

        return model, opt, loss

    return make


CASES = {
    "mlp_adamw": (mlp_adamw, "MLP 4096→4096→4096, GELU, AdamW, batch 256"),
    "gpt2_lm": (gpt2_lm, "GPT-2 LM (transformers), 4 blocks, d 512, 8 heads, seq 256, batch 4, vocab 8192, AdamW"),
    "resnet_bn": (resnet_bn, "ResNet-style conv net with BatchNorm, 3×64×64, batch 16, SGD momentum"),
    "mobilenet_v3": (mobilenet_v3, "torchvision MobileNetV3-small, 3×128×128, batch 16, SGD momentum"),
    "mlp_adamw_bf16": (bf16_autocast(mlp_adamw), "mlp_adamw under torch.autocast(\"cpu\", bfloat16)"),
    "gpt2_lm_bf16": (bf16_autocast(gpt2_lm), "gpt2_lm under torch.autocast(\"cpu\", bfloat16)"),
}


def make_step(case: str, backend: str) -> Callable[[], float]:
    """One training step of a fresh `case` model (seed 0) under `backend`; returns the loss."""
    torch.manual_seed(0)
    model, opt, loss_fn = CASES[case][0]()
    model.train()
    compiler = "ember" if backend == "ember" else "inductor"
    run = model if backend == "eager" else torch.compile(model, backend=compiler)
    opt_step = torch.compile(opt.step, backend=compiler) if COMPILE_OPTIMIZER and backend != "eager" else opt.step

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(run)
        loss.backward()
        opt_step()
        return float(loss)

    return step


def worker(case: str, backend: str, steps: int) -> dict:
    torch.set_num_threads(THREADS)
    step = make_step(case, backend)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        first_loss = step()
        first = time.perf_counter() - t0
        for _ in range(3):
            step()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e3)
    out = dict(ms=statistics.median(times), min=min(times), first_s=first, first_loss=first_loss)
    out["compile_s"] = max(first - out["ms"] / 1e3, 0.0)
    if backend == "ember":
        from ember import backend as eb

        out["stats"] = dict(eb.stats)
        out["warnings"] = sorted({str(w.message)[:200] for w in caught if "ember" in str(w.message)})
    return out


def interleaved(case: str, steps: int) -> dict:
    """Median and min step ms per backend, the three stepped in turn in this process."""
    torch.set_num_threads(THREADS)
    steps_of = {b: make_step(case, b) for b in BACKENDS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in steps_of.values():
            for _ in range(4):
                step()
        times: dict[str, list[float]] = {b: [] for b in BACKENDS}
        for _ in range(steps):
            for b, step in steps_of.items():
                t0 = time.perf_counter()
                step()
                times[b].append((time.perf_counter() - t0) * 1e3)
    return {b: dict(ms=statistics.median(t), min=min(t)) for b, t in times.items()}


def run_worker(case: str, backend: str, steps: int, tmp: Path) -> dict:
    """`worker` (or, for backend "all", `interleaved`) in a fresh process with empty caches."""
    cache = Path(tempfile.mkdtemp(prefix=f"{case}-{backend}-", dir=tmp))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"), EMBER_CACHE_DIR=str(cache / "ember"), TMPDIR=str(tmp))
    flags = ["--compile-optimizer"] if COMPILE_OPTIMIZER else []
    p = subprocess.run([sys.executable, __file__, "--_worker", case, backend, "--steps", str(steps), *flags], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return dict(error=(p.stderr.strip().splitlines() or ["?"])[-1][:200])
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(r: dict, key: str, spec: str) -> str:
    v = r.get(key)
    return "error" if v is None else format(v, spec)


def table(rows: list[dict]) -> str:
    head = "| case | eager ms | Inductor ms | Ember ms | Ember/Inductor | Ember/eager | compile s: Inductor | compile s: Ember | compile Ember/Inductor | Ember graphs (backward) | fallbacks | loss Ember vs eager |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        e, i, m = (r[b] for b in BACKENDS)
        ratio = m["ms"] / i["ms"] if "ms" in m and "ms" in i else None
        vs_eager = m["ms"] / e["ms"] if "ms" in m and "ms" in e else None
        cratio = m["compile_s"] / i["compile_s"] if "compile_s" in m and i.get("compile_s") else None
        st = m.get("stats", {})
        graphs = f"{st.get('compiled', 0) + st.get('cache_hits', 0)} ({st.get('backward', 0)})" if st else "-"
        own = f" ({st['compile_seconds']:.1f})" if "compile_seconds" in st else ""
        dloss = abs(m["first_loss"] - e["first_loss"]) / max(abs(e["first_loss"]), 1e-30) if "first_loss" in m and "first_loss" in e else None
        lines.append(
            f"| {r['case']} | {fmt(e, 'ms', '.1f')} | {fmt(i, 'ms', '.1f')} | {fmt(m, 'ms', '.1f')} | "
            f"{'-' if ratio is None else f'**{ratio:.2f}**'} | {'-' if vs_eager is None else f'{vs_eager:.2f}'} | "
            f"{fmt(i, 'compile_s', '.1f')} | {fmt(m, 'compile_s', '.1f')}{own} | {'-' if cratio is None else f'{cratio:.2f}'} | "
            f"{graphs} | {st.get('fallbacks', '-') if st else '-'} | {'-' if dloss is None else f'{dloss:.1e}'} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2.4 * len(rows) + 2, 4.5))
    w = 0.27
    for k, (b, label) in enumerate(zip(BACKENDS, ("torch eager", "Inductor", "Ember"))):
        vals = [r[b].get("ms", 0.0) for r in rows]
        bars = ax.bar([x + (k - 1) * w for x in range(len(rows))], vals, w, label=label)
        for bar, v in zip(bars, vals):
            ax.annotate(f"{v:.0f}" if v else "error", (bar.get_x() + w / 2, max(v, 0.1)), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(rows)), [r["case"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("median ms per training step (log, lower is better)")
    ax.set_title(f"training step, CPU fp32, {THREADS} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated (default: all): {', '.join(CASES)}")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per backend after 1 + 3 warm-up steps, in the one process per case that steps all three in turn (default 20)")
    ap.add_argument("--rounds", type=int, default=2, help="compile-time runs of every (case, backend), in turn; each keeps its fastest compile (default 2)")
    ap.add_argument("--out", default=str(HERE / "results"), help="results dir (NAME.md, NAME.png)")
    ap.add_argument("--name", help="results file stem (default train, or train_optimizer with --compile-optimizer; the bf16 autocast cases' table is train_bf16)")
    ap.add_argument("--compile-optimizer", action="store_true", help="Inductor and Ember also compile the optimizer step (torch.compile(opt.step)); torch eager's stays eager")
    ap.add_argument("--_worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    global COMPILE_OPTIMIZER
    COMPILE_OPTIMIZER = args.compile_optimizer
    args.name = args.name or ("train_optimizer" if args.compile_optimizer else "train")
    if args.steps < 1 or args.rounds < 1:
        ap.error("--steps and --rounds must be at least 1")
    if args._worker:
        case, backend = args._worker
        print(json.dumps(interleaved(case, args.steps) if backend == "all" else worker(case, backend, args.steps)))
        return 0
    names = [c for c in args.cases.split(",") if c]
    unknown = [c for c in names if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {unknown}; known: {list(CASES)}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-train-", dir=os.environ.get("TMPDIR") or "/tmp"))
    load0 = os.getloadavg()[0]
    rows = []
    for n in names:
        row = {"case": n}
        for r in range(args.rounds):
            for b in BACKENDS:
                print(f"[{n}] {b} (round {r + 1})", file=sys.stderr, flush=True)
                got = run_worker(n, b, COMPILE_STEPS, tmp)
                print(f"[{n}] {b}: {got}", file=sys.stderr, flush=True)
                # Each backend keeps its faster round: load from elsewhere only slows a run down.
                if b not in row or got.get("compile_s", math.inf) < row[b].get("compile_s", math.inf):
                    row[b] = got
        print(f"[{n}] all three in one process", file=sys.stderr, flush=True)
        steps = run_worker(n, "all", args.steps, tmp)
        print(f"[{n}] {steps}", file=sys.stderr, flush=True)
        for b in BACKENDS:
            row[b].pop("min", None)
            row[b].pop("ms", None)
            if "error" in steps:
                row[b].setdefault("error", steps["error"])
            else:
                row[b].update(steps[b])
        rows.append(row)
    load1 = os.getloadavg()[0]
    ratios = [r["ember"]["ms"] / r["inductor"]["ms"] for r in rows if "ms" in r["ember"] and "ms" in r["inductor"]]
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    git = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    notes = [f"- {n}: {CASES[n][1]}" for n in names]
    warn = [f"- {r['case']}: {w}" for r in rows for w in r["ember"].get("warnings", [])]
    errors = [f"- {r['case']} {b}: {r[b]['error']}" for r in rows for b in BACKENDS if "error" in r[b]]
    md = "\n".join(
        [
            "# Training step: torch eager vs Inductor vs Ember (torch.compile)",
            "",
            f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; tree {git or '?'}; torch {torch.__version__}; {platform.machine()}, {os.cpu_count()} logical CPUs",
            f"- fp32 (`_bf16` cases: the forward and loss under bf16 autocast), {THREADS} threads; step times: one process per case holding the three, "
            f"stepped in turn (eager, Inductor, Ember, eager, ...), median of {args.steps} steps each after 1 + 3 warm-up steps; "
            f"compile times: each case and backend in a fresh process with empty compile caches, {args.rounds} round(s), each backend's faster kept",
            "- a step: zero_grad, forward, loss, backward, optimizer step ("
            + ("compiled too under Inductor and Ember: `torch.compile(opt.step)`; compile times include it)" if COMPILE_OPTIMIZER else "the optimizer step is not compiled)"),
            "- compile s = first step minus the median step (Dynamo, AOT Autograd and the backend's compiler); "
            "in parentheses the seconds Ember itself took (`ember.backend.stats[\"compile_seconds\"]`: partitioning, export, "
            "compiling the graphs AOT Autograd handed it), the rest being Dynamo's and AOT Autograd's, which Inductor spends too",
            f"- 1-min load average at start / end: {load0:.2f} / {load1:.2f} (the machine is shared: compare ratios within this run)",
            *notes,
            "",
            table(rows),
            "",
            f"**Geomean Ember/Inductor: {geo:.2f}x** over {len(ratios)} case(s) (>1: Ember is slower)" if geo else "**Geomean Ember/Inductor: n/a**",
            *(["", "Ember warnings (ops or graphs run with torch eager):", *warn] if warn else []),
            *(["", "Errors:", *errors] if errors else []),
        ]
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.md").write_text(md + "\n")
    try:
        plot(rows, out / f"{args.name}.png")
    except ImportError:
        print("matplotlib is not installed: no train.png", file=sys.stderr)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
