"""Eager-mode benchmark: torch eager vs Ember strict vs Ember DeferAndFuse vs torch.compile.

Three loops, in one run, 2 threads (torch.set_num_threads and RAYON_NUM_THREADS for Ember):
- inference: the GPT-2-style block of cases.py (d 768, 12 heads, batch 4, 128 tokens),
  ``x = block(x)`` under no_grad, 50 iterations;
- training: MLP of 3 Linear layers of width 256 with ReLU, batch 64, MSE loss, AdamW,
  50 steps (zero_grad, forward, backward, step);
- elementwise: the 20-op chain of cases.py on a 2048x2048 fp32 tensor, ``x = chain(x)``,
  50 iterations;
- per op: chains of 80 elementwise ops on a 16-element tensor, each read with `.cpu()`: recording's
  cost per op against torch eager's own.

Each variant runs the 50-iteration loop once to warm up (compiles happen here), then REPEATS
timed loops, interleaved round by round with the other variants; the table gives the median time
per iteration. Ember's compile time is the plan
cache's compile time during warm-up; Inductor's is its warm-up loop minus a steady loop. The
cache hit rate is over the timed loops (steady state). Results are checked against torch eager.

    python tools/bench/bench_eager.py [--out tools/bench/results/eager.md]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")
# Inductor compiles cold, as a new program would (its on-disk cache would hide the compile time).
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", __import__("tempfile").mkdtemp(prefix="bench-eager-inductor-"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tools" / "python" / "python"))
import cases  # noqa: E402
import ember  # noqa: E402
from ember import deferred  # noqa: E402

ITERS = int(os.environ.get("BENCH_ITERS", "50"))
REPEATS = int(os.environ.get("BENCH_REPEATS", "5"))


class Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


class OneThread:
    def __enter__(self):
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(2)


def repeat_loop(f, x0):
    """A loop of `x = f(x)` from `x0` under no_grad and the variant's context."""

    def loop(ctx, iters=ITERS):
        with torch.no_grad(), ctx():
            x = x0
            for _ in range(iters):
                x = f(x)
        return x.cpu()

    return loop


def inference_case():
    torch.manual_seed(0)
    block, (x0,) = cases.gpt2_block()
    block.eval()

    def make(device="cpu"):
        return repeat_loop(block if device == "cpu" else copy.deepcopy(block).to(device), x0.to(device))

    def compiled():
        cb = torch.compile(block)

        def loop(ctx, iters=ITERS):
            with torch.no_grad():
                x = x0
                for _ in range(iters):
                    x = cb(x)
            return x

        return loop

    return make, compiled


def training_case():
    def make():
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256)
        )
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3)

    torch.manual_seed(1)
    data = torch.randn(64, 256), torch.randn(64, 256)

    def runner(step_fn_factory, device="cpu"):
        # One model, optimizer and step function per variant (torch.compile keeps its graphs);
        # every loop starts from the same weights and an empty optimizer state.
        model, opt = make()
        if device != "cpu":
            model.to(device)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        init = [p.detach().clone() for p in model.parameters()]
        step = step_fn_factory(model, opt, *(t.to(device) for t in data))

        def loop(ctx, iters=ITERS):
            with torch.no_grad():
                for p, p0 in zip(model.parameters(), init):
                    p.copy_(p0)
            opt.state.clear()
            with ctx():
                for _ in range(iters):
                    step()
            return torch.cat([p.detach().cpu().reshape(-1) for p in model.parameters()])

        return loop

    def plain(model, opt, x, y):
        def step():
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()

        return step

    def compiled():
        # The whole step (forward, backward, optimizer) under torch.compile.
        return runner(lambda model, opt, x, y: torch.compile(plain(model, opt, x, y)))

    return lambda device="cpu": runner(plain, device), compiled


def elementwise_case():
    torch.manual_seed(0)
    chain, (x0,) = cases.elementwise20()

    def make(device="cpu"):
        return repeat_loop(chain, x0.to(device))

    def compiled():
        cc = torch.compile(chain)

        def loop(ctx, iters=ITERS):
            with torch.no_grad():
                x = x0
                for _ in range(iters):
                    x = cc(x)
            return x

        return loop

    return make, compiled


def per_op() -> dict:
    """Recording cost per op: a chain of 80 elementwise ops on a 16-element tensor (the region's
    own run is timed by the plan cache and taken out), against torch eager running the same ops,
    in the same process; each a median of 9 rounds of 20 chains."""
    x0 = torch.randn(16)

    def chain(x):
        for i in range(16):
            x = torch.tanh(x * 0.5 + 0.25) - x * 0.125
        return x

    def eager_round():
        t = time.perf_counter()
        for _ in range(20):
            chain(x0)
        return time.perf_counter() - t

    def ember_round(make):
        s0 = deferred.stats()
        t = time.perf_counter()
        with make():
            for _ in range(20):
                chain(x0).cpu()
        dt = time.perf_counter() - t
        s1 = deferred.stats()
        return dt, s1["run_seconds"] - s0["run_seconds"], s1["hits"] - s0["hits"], s1["misses"] - s0["misses"]

    ops = 20 * 16 * 5
    variants = {"native recorder": lambda: ember.eager(mode="defer"), "Python recorder": python_recorder}
    for make in variants.values():
        ember_round(make)  # warm-up: compiles the chain's region
    res = {"torch eager": [], **{k: [] for k in variants}}
    runs = {k: [] for k in variants}
    hits = {k: [0, 0] for k in variants}
    for _ in range(9):
        res["torch eager"].append(eager_round())
        for k, make in variants.items():
            dt, run, h, m = ember_round(make)
            res[k].append(dt)
            runs[k].append(run)
            hits[k][0] += h
            hits[k][1] += m
    out = {"torch eager": dict(total=statistics.median(res["torch eager"]) / ops * 1e6)}
    for k in variants:
        out[k] = dict(
            total=statistics.median(res[k]) / ops * 1e6,
            record=statistics.median([a - b for a, b in zip(res[k], runs[k])]) / ops * 1e6,
            hit_rate=hits[k][0] / max(1, sum(hits[k])),
        )
    return out


CASES = {"inference (GPT-2 block)": inference_case, "training (MLP 3x256, AdamW)": training_case, "elementwise (20-op chain)": elementwise_case}


def python_recorder():
    os.environ["EMBER_EAGER_RECORDER"] = "python"
    try:
        return ember.eager(mode="defer")
    finally:
        del os.environ["EMBER_EAGER_RECORDER"]


def timed(loop, ctx):
    t0 = time.perf_counter()
    out = loop(ctx)
    return time.perf_counter() - t0, out


class Variant:
    """One way to run a loop: warm-up once, then timed loops interleaved with the other variants."""

    def __init__(self, loop, ctx, is_ember=False, compiled=False):
        self.loop, self.ctx, self.is_ember, self.compiled = loop, ctx, is_ember, compiled
        self.times: list[float] = []
        self.hits = self.misses = 0
        self.res: dict = {}

    def warm_up(self):
        s0 = deferred.stats()
        if self.compiled:
            t0 = time.perf_counter()
            self.loop(self.ctx, 1)  # the first call compiles
            self.first = time.perf_counter() - t0
        self.warm, _ = timed(self.loop, self.ctx)
        s1 = deferred.stats()
        if self.is_ember:
            self.res["compile"] = s1["compile_seconds"] - s0["compile_seconds"]

    def time_once(self):
        s0 = deferred.stats()
        t, self.out = timed(self.loop, self.ctx)
        s1 = deferred.stats()
        self.times.append(t)
        self.hits += s1["hits"] - s0["hits"]
        self.misses += s1["misses"] - s0["misses"]

    def result(self):
        res = dict(self.res, per_iter=statistics.median(self.times) / ITERS, out=self.out, out1=self.loop(self.ctx, 1))
        if self.is_ember:
            n = self.hits + self.misses
            res["hit_rate"] = self.hits / n if n else float("nan")
            res["regions"] = n / (len(self.times) * ITERS)
        elif self.compiled:
            res["compile"] = max(0.0, self.first - res["per_iter"])
        return res


def rel(got, want) -> float:
    return (got - want).abs().max().item() / max(want.abs().max().item(), 1e-30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results" / "eager.md"))
    ap.add_argument("--only", default=None, help="run only cases whose name contains this")
    ap.add_argument("--per-op-only", action="store_true", help="only the per-op microbenchmark (printed, no table written)")
    args = ap.parse_args()
    torch.set_num_threads(2)
    if args.per_op_only:
        for k, r in per_op().items():
            print(k, r)
        return
    load0 = os.getloadavg()[0]
    rows = []
    for name, factory in CASES.items():
        if args.only and args.only not in name:
            continue
        loop_factory, compiled_factory = factory()
        print(f"== {name}", flush=True)
        runs = {
            "torch eager": Variant(loop_factory(), Null),
            # Reference: on a loaded machine torch's OpenMP threads lose the most from sharing cores.
            "torch eager, 1 thread": Variant(loop_factory(), OneThread),
            "Ember strict": Variant(loop_factory(), lambda: ember.eager(mode="strict"), is_ember=True),
            "Ember defer": Variant(loop_factory(), lambda: ember.eager(mode="defer"), is_ember=True),
            # The same mode on the Python recorder (a TorchDispatchMode), for the per-op cost.
            "Ember defer, Python recorder": Variant(loop_factory(), python_recorder, is_ember=True),
            "torch.compile": Variant(compiled_factory(), Null, compiled=True),
            # Regions on PJRT (jax's CPU client here), weights and inputs on the ember device.
            "Ember defer, tpu target": Variant(loop_factory("ember"), lambda: ember.eager(target="tpu"), is_ember=True),
        }
        for v in runs.values():
            v.warm_up()
        # Interleaved rounds, so load changes on the shared machine hit every variant alike.
        for _ in range(REPEATS):
            for v in runs.values():
                v.time_once()
        variants = {k: v.result() for k, v in runs.items()}
        ref, ref1 = variants["torch eager"]["out"], variants["torch eager"]["out1"]
        for v, r in variants.items():
            r["rel"] = rel(r["out"], ref)
            r["rel1"] = rel(r["out1"], ref1)
            comp = f"{r['compile']:.2f} s" if "compile" in r else "-"
            print(f"  {v:28s} {r['per_iter'] * 1e3:9.3f} ms/iter  compile {comp}  hit {r.get('hit_rate', float('nan')):.3f}  rel {r['rel1']:.1e} / {r['rel']:.1e}", flush=True)
        rows.append((name, variants))
    print("== per op", flush=True)
    ops = per_op()
    for k, r in ops.items():
        print(f"  {k:28s} {r['total']:.2f} us/op" + (f" (recording {r['record']:.2f} us/op, hit rate {r['hit_rate']:.3f})" if "record" in r else ""), flush=True)
    load1 = os.getloadavg()[0]
    write(args.out, rows, load0, load1, ops)


def write(path, rows, load0, load1, ops):
    try:
        tree = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        tree = "?"
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    lines = [
        "# Ember eager-mode benchmark (DeferAndFuse)",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M')} UTC; machine: {cpu}, {os.cpu_count()} logical CPUs; tree {tree}",
        f"- torch {torch.__version__}, 2 threads (torch.set_num_threads, RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS')}); ember extension: {ember_build()}",
        f"- **loaded machine**: other agents share the 2 cores; 1-min load average {load0:.2f} at start, {load1:.2f} at end. Compare ratios within this run only.",
        f"- per iteration = median of {REPEATS} timed {ITERS}-iteration loops (rounds interleaved across variants) after one warm-up loop, divided by {ITERS}; speedup = torch eager time / variant time",
        "- Ember compile = plan-cache compile time during the warm-up loop (every region compiled once); torch.compile compile = its first call (Dynamo + Inductor, empty TORCHINDUCTOR_CACHE_DIR) minus a steady iteration",
        "- hit rate = plan-cache hits / lookups over the timed loops (steady state); regions/iter = lookups per iteration",
        "- `torch eager, 1 thread` is a reference row (same loop with torch.set_num_threads(1)): under load, torch's 2 OpenMP threads can be slower than one; speedups stay relative to 2-thread torch eager as specified",
        f"- rel diff = max|variant - torch eager| / max|torch eager| of the loop's final tensor (training: all parameters), after 1 iteration / after {ITERS}",
        "",
        "| loop | variant | ms / iter | speedup vs eager | hit rate | regions / iter | compile s | rel diff |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, variants in rows:
        base = variants["torch eager"]["per_iter"]
        for v, r in variants.items():
            hit = f"{r['hit_rate'] * 100:.1f} %" if "hit_rate" in r else "-"
            reg = f"{r['regions']:.2f}" if "regions" in r else "-"
            comp = f"{r['compile']:.2f}" if "compile" in r else "-"
            lines.append(f"| {name} | {v} | {r['per_iter'] * 1e3:.2f} | {base / r['per_iter']:.2f}x | {hit} | {reg} | {comp} | {r['rel1']:.1e} / {r['rel']:.1e} |")
    lines += [
        "",
        "Per op (`per_op()`: chains of 80 elementwise ops on a 16-element tensor, each read with `.cpu()`; recording = wall time minus the region's run as the plan cache times it):",
        "",
        "| variant | us / op | recording us / op | ratio to torch eager | hit rate |",
        "|---|---|---|---|---|",
    ]
    base = ops["torch eager"]["total"]
    for k, r in ops.items():
        rec = f"{r['record']:.2f}" if "record" in r else "-"
        hit = f"{r['hit_rate'] * 100:.1f} %" if "hit_rate" in r else "-"
        lines.append(f"| {k} | {r['total']:.2f} | {rec} | {r['total'] / base:.2f}x | {hit} |")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")


def ember_build() -> str:
    so = Path(ember.__file__).parent / "_ember.abi3.so"
    return f"`{ember._native().build_profile()}` build ({so})"


if __name__ == "__main__":
    main()
