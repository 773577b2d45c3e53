#!/usr/bin/env python3
"""bf16 on the CPU through torch.compile, the path users run: torch eager vs Inductor
(`torch.compile` default) vs Ember (`backend="ember"`) in one process, 2 threads.

Cases: the MLP and the GPT-2 block of tools/bench/cases.py with bf16 weights and inputs
(`model.to(torch.bfloat16)`), and the MLP in f32 under `torch.autocast("cpu", bfloat16)`.
Per case: median latency of each backend, Ember/Inductor, Ember's error against eager
(relative to the output's scale), and Ember's fraction of the machine's bf16 GEMM roofline
(a bf16 `torch.mm` of the MLP's shape, fastest of the run, measured in the same run). Writes
tools/bench/results/cpu_bf16.md.

    python tools/bench/bench_lowp.py [--iters 10] [--rounds 3] [--cases mlp,gpt2_block,mlp_autocast]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(ROOT / "tools" / "python" / "python")]
THREADS = 2

import torch  # noqa: E402

import cases  # noqa: E402
from bench_cpu import time_fn  # noqa: E402


def bf16_roofline(iters: int) -> float:
    """GFLOP/s of a bf16 torch.mm of the MLP's shape, [4096, 1024] x [1024, 4096] (fastest
    call): what this CPU's bf16 GEMM does at that size."""
    a, b = torch.randn(4096, 1024).bfloat16(), torch.randn(1024, 4096).bfloat16()
    c = torch.empty(4096, 4096, dtype=torch.bfloat16)
    return 2 * 4096 * 1024 * 4096 / time_fn(lambda: torch.mm(a, b, out=c), iters)[1] / 1e6


def mlp_flops(x: torch.Tensor, m: torch.nn.Module) -> float:
    return 2 * x.shape[0] * (m.fc1.in_features * m.fc1.out_features + m.fc2.in_features * m.fc2.out_features)


def gpt2_flops(x: torch.Tensor, d: int = 768) -> float:
    b, t, _ = x.shape
    # qkv, proj, fc (4d), fc proj, and the two attention products.
    return 2 * b * t * (3 * d * d + d * d + 8 * d * d) + 2 * 2 * b * t * t * d


def case(name: str):
    torch.manual_seed(0)
    if name == "gpt2_block":
        m, (x,) = cases.gpt2_block()
        return m.eval().bfloat16(), x.bfloat16(), gpt2_flops(x), contextlib.nullcontext
    m, (x,) = cases.mlp()
    if name == "mlp_autocast":
        return m.eval(), x, mlp_flops(x, m), lambda: torch.autocast("cpu", dtype=torch.bfloat16)
    return m.eval().bfloat16(), x.bfloat16(), mlp_flops(x, m), contextlib.nullcontext


def bench(name: str, iters: int, rounds: int) -> dict:
    import ember.backend as eb

    m, x, flops, ctx = case(name)
    row = {"case": name}
    with torch.no_grad(), ctx():
        want = m(x)
        fns = {"eager": m}
        for backend in ("inductor", "ember"):
            torch._dynamo.reset()
            f = torch.compile(m, backend=backend)
            t0 = time.perf_counter()
            got = f(x)
            row[f"{backend}_compile_s"] = time.perf_counter() - t0
            fns[backend] = f
            if backend == "ember":
                row["fallbacks"] = eb.stats["fallbacks"]
                row["err"] = float((got.double() - want.double()).abs().max() / want.double().abs().max())
        # Interleaved rounds, each backend keeping its fastest median: load from other processes
        # on this shared machine only slows a round down.
        for _ in range(rounds):
            for backend, f in fns.items():
                row[backend] = min(row.get(backend, math.inf), time_fn(lambda: f(x), iters)[0])
    row["ratio"] = row["ember"] / row["inductor"]
    row["gflops"] = flops / row["ember"] / 1e6
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=10, help="timed calls per round (default 10)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each backend keeps its fastest (default 3)")
    ap.add_argument("--cases", default="mlp,gpt2_block,mlp_autocast")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "cpu_bf16.md")
    args = ap.parse_args()
    torch.set_num_threads(THREADS)
    # Empty compile caches: compile times are first compiles, not cache hits.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-")
    os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="ember-")
    names = [c for c in args.cases.split(",") if c]
    bad = [c for c in names if c not in ("mlp", "gpt2_block", "mlp_autocast")]
    if bad:
        ap.error(f"unknown case(s) {bad}")
    load0 = os.getloadavg()[0]
    peak = bf16_roofline(args.iters)
    rows = [bench(n, args.iters, args.rounds) for n in names]
    peak = max(peak, bf16_roofline(args.iters))
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# bf16 on the CPU through torch.compile: eager vs Inductor vs Ember",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; commit {head}; torch {torch.__version__}; {THREADS} threads",
        f"- load average at start: {load0:.2f} (a shared machine: ratios come from one run)",
        f"- bf16 GEMM roofline ([4096, 1024] x [1024, 4096] `torch.mm`, fastest call): **{peak:.0f} GFLOP/s**",
        "- compile s: the first call minus nothing (empty Inductor and Ember caches; Dynamo's tracing included)",
        f"- command: `python tools/bench/bench_lowp.py --iters {args.iters} --rounds {args.rounds}`; ms: the fastest round's median",
        "",
        "| case | eager ms | Inductor ms | Ember ms | Ember/Inductor | Ember GFLOP/s (% of roofline) | max err / scale | compile s (Inductor / Ember) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['eager']:.2f} | {r['inductor']:.2f} | {r['ember']:.2f} | **{r['ratio']:.2f}** | {r['gflops']:.0f} ({100 * r['gflops'] / peak:.0f}%) "
            f"| {r['err']:.2g} | {r['inductor_compile_s']:.1f} / {r['ember_compile_s']:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
