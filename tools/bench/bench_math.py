"""Transcendental-heavy elementwise chain through torch.compile: eager vs Inductor vs Ember.

One process, 2 threads (torch.set_num_threads, RAYON_NUM_THREADS for Ember), the three backends
timed in interleaved rounds (each round times one call of each, in turn) so a noisy machine
loads them alike; medians and mins over the rounds, the load average before and after. Compiled
graphs go to a fresh cache dir, so every run compiles with the extension it imports.

    PYTHONPATH=tools/python/python python tools/bench/bench_math.py [--rounds 15] [--out PATH]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "2")
os.environ.setdefault("EMBER_CACHE_DIR", tempfile.mkdtemp(prefix="ember-bench-math-"))

import torch  # noqa: E402

import ember  # noqa: E402,F401  (registers the backend)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cases import MathChain  # noqa: E402

_CHAIN = MathChain()

N = 4 * 1024 * 1024


def chain(x, y):
    """22 ops: sin, cos, log, pow, atan, tan, log1p among multiplies and adds (bench_cpu's math_chain)."""
    return _CHAIN(x, y)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    torch.set_num_threads(2)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, generator=g)
    y = torch.rand(N, generator=g) * 2.0
    load0 = os.getloadavg()
    fns = {
        "eager": chain,
        "inductor": torch.compile(chain),
        "ember": torch.compile(chain, backend="ember"),
    }
    ref = chain(x.double(), y.double())
    for name, fn in fns.items():
        out = fn(x, y)
        err = ((out.double() - ref).abs() / (ref.abs() + 1e-3)).max().item()
        print(f"{name}: max rel error vs f64 {err:.2e}", file=sys.stderr)
        for _ in range(2):
            fn(x, y)
    times = {k: [] for k in fns}
    for _ in range(args.rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn(x, y)
            times[name].append((time.perf_counter() - t0) * 1e3)
    load1 = os.getloadavg()
    med = {k: statistics.median(v) for k, v in times.items()}
    mn = {k: min(v) for k, v in times.items()}
    lines = [
        f"| backend {args.label} | median ms | min ms | / Inductor (median) | / Inductor (min) |",
        "|---|---|---|---|---|",
    ]
    for k in fns:
        lines.append(
            f"| {k} | {med[k]:.2f} | {mn[k]:.2f} | {med[k] / med['inductor']:.2f} | {mn[k] / mn['inductor']:.2f} |"
        )
    lines.append("")
    lines.append(
        f"- {N} f32 elements, 22 ops (sin x2, cos, log, pow, atan, tan, log1p), {args.rounds} interleaved "
        f"rounds, torch {torch.__version__}, 2 threads; load average before {load0[0]:.2f} "
        f"{load0[1]:.2f} {load0[2]:.2f}, after {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}"
    )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as f:
            f.write(text + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
