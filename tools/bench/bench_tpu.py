#!/usr/bin/env python3
"""Training on the tpu target from torch.compile: where a step's time goes and what crosses
between host and device.

A step is zero_grad, forward, loss, backward and the optimizer step, with the model and loss
compiled by `torch.compile(..., backend="ember", options={"target": "tpu"})`, two ways: the model on the
CPU (its graphs take host tensors; the optimizer step runs with torch eager), and the model on
the `ember` device (`model.to("ember")`, the batch moved each step, the optimizer step compiled
too). Every graph is StableHLO run by PJRT (jax's CPU client on this machine; the TPU client on
a TPU host is not measured here). Each case runs in a fresh process with an empty Ember cache. Reported: the first
step (compile included), the median step after warm-up, of which the time from PJRT's execute to
ready results ("XLA") and the rest ("host": Dynamo's guards, AOT's wrappers, Ember's call path,
the transfers and the eager optimizer), the bytes moved to and from the device per step, and torch
eager's step for scale. torchax (the TPU users' other path from PyTorch) is tried in the same run
and reported as it fares. Writes tools/bench/results/tpu.md.

    python tools/bench/bench_tpu.py [--cases gpt2_lm,mlp_adamw] [--steps 10]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "python" / "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def gpt2_lm():
    import transformers

    cfg = transformers.GPT2Config(n_layer=2, n_embd=256, n_head=4, n_positions=128, vocab_size=4096, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 4096, (4, 128))
    return model, torch.optim.SGD(model.parameters(), lr=1e-2), lambda m, ids: m(input_ids=ids, labels=ids).loss, [ids]


def mlp_adamw():
    model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 1024))
    x, y = torch.randn(64, 1024), torch.randn(64, 1024)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-4), lambda m, x, y: F.mse_loss(m(x), y), [x, y]


CASES = {"gpt2_lm": gpt2_lm, "mlp_adamw": mlp_adamw}


def worker(case: str, backend: str, steps: int) -> dict:
    from ember import backend as eb
    from ember import device

    torch.manual_seed(0)
    model, opt, loss_fn, batch = CASES[case]()
    on_device = backend == "ember_device"
    if on_device:
        # `.to` swaps the parameters' contents: the optimizer's references stay valid.
        model.to("ember")
    # The loss is compiled with the model (outside a compiled graph every op on ember tensors
    # would cross to the host).
    compute = torch.compile(loss_fn, backend="ember", options={"target": "tpu"}) if backend != "eager" else loss_fn
    # On the device the optimizer step is compiled too (eagerly every op would cross to the host).
    opt_step = torch.compile(opt.step, backend="ember", options={"target": "tpu"}) if on_device else opt.step

    def moved() -> dict:
        return {"to_device_bytes": eb.stats["to_device_bytes"] + device.stats["to_device_bytes"],
                "from_device_bytes": eb.stats["from_device_bytes"] + device.stats["from_device_bytes"],
                "xla_seconds": eb.stats["xla_seconds"]}

    def step() -> tuple[float, dict]:
        before = moved()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = compute(model, *[t.to("ember") for t in batch] if on_device else batch)
        loss.backward()
        opt_step()
        value = float(loss)
        dt = time.perf_counter() - t0
        return dt, {k: v - before[k] for k, v in moved().items()} | {"loss": value}

    first, info0 = step()
    times, infos = [], []
    for _ in range(steps):
        dt, info = step()
        times.append(dt)
        infos.append(info)
    i = times.index(sorted(times)[len(times) // 2])
    xla_s, step_s = infos[i]["xla_seconds"], times[i]
    if on_device:
        # The steps above waited for every graph (`EMBER_XLA_SYNC=1`, set by main), which
        # times XLA; as users run them graphs are not waited for and the host goes on while XLA
        # computes, so the step is timed over consecutive steps, up to the last one's
        # parameters being ready.
        eb._SYNC = False
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        for p in model.parameters():
            device.array(p).block_until_ready()
        step_s = (time.perf_counter() - t0) / steps
    return {"case": case, "backend": backend, "first_s": first, "step_s": step_s, "xla_s": xla_s,
            "to_bytes": infos[i]["to_device_bytes"], "from_bytes": infos[i]["from_device_bytes"], "loss0": info0["loss"],
            "params_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
            "graphs": eb.stats["targets"], "fallbacks": eb.stats["fallbacks"]}


def torchax_probe() -> str:
    """How torchax fares here: its import, in a child process (it patches torch globally)."""
    code = "import torchax, torch; torchax.enable_globally(); print('ok', torchax.__version__)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if p.returncode == 0:
        return "imports (" + p.stdout.strip() + "); the step comparison is not written yet"
    last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
    return f"not usable here: `{last[:300]}`"


def run_worker(case: str, backend: str, steps: int, tmp: Path) -> dict:
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp / f"cache-{case}-{backend}"), TMPDIR=str(tmp), EMBER_XLA_SYNC="1")
    p = subprocess.run([sys.executable, __file__, "--_worker", f"{case}:{backend}", "--steps", str(steps)],
                       capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"{case} on {backend} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    by = {(r["case"], r["backend"]): r for r in rows}
    out = ["| case | tensors on | eager step ms | Ember tpu step ms | of which XLA ms | host ms (% of XLA) | first step s | to device / step | from device / step | parameters | first loss, Ember vs eager |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in dict.fromkeys(r["case"] for r in rows):
        e = by[(case, "eager")]
        for backend, where in (("ember", "cpu"), ("ember_device", "ember")):
            x = by.get((case, backend))
            if x is None:
                continue
            host = x["step_s"] - x["xla_s"]
            out.append(f"| {case} | {where} | {e['step_s'] * 1e3:.1f} | {x['step_s'] * 1e3:.1f} | {x['xla_s'] * 1e3:.1f} | "
                       f"{host * 1e3:.1f} ({100 * host / x['xla_s']:.0f} %) | {x['first_s']:.1f} | {_bytes(x['to_bytes'])} | "
                       f"{_bytes(x['from_bytes'])} | {x['params_bytes'] / 1e6:.2f} MB | {x['loss0']:.6f} vs {e['loss0']:.6f} |")
    return "\n".join(out)


def _bytes(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n} B"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated (default: all): {', '.join(CASES)}")
    ap.add_argument("--steps", type=int, default=10, help="timed steps after the first (default 10)")
    ap.add_argument("--out", default=str(HERE / "results" / "tpu.md"), help="the report (default results/tpu.md)")
    ap.add_argument("--_worker", dest="worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        case, backend = a.worker.split(":")
        torch.set_num_threads(2)
        print(json.dumps(worker(case, backend, a.steps)))
        return 0
    cases = a.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    load0 = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            for backend in ("eager", "ember", "ember_device"):
                rows.append(run_worker(case, backend, a.steps, Path(tmp)))
                print(f"{case} {backend}: {rows[-1]['step_s'] * 1e3:.1f} ms/step", file=sys.stderr)
    probe = torchax_probe()
    load1 = os.getloadavg()[0]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    import jax

    text = "\n".join([
        "# Training on the tpu target through torch.compile",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; commit {commit}; torch {torch.__version__}, jax {jax.__version__}; {platform.machine()}, 2 threads",
        f"- load average: {load0:.2f} at start, {load1:.2f} at end (a shared machine)",
        f"- command: `python tools/bench/bench_tpu.py --cases {a.cases} --steps {a.steps}`; per step: the median of the timed steps",
        "- PJRT client: jax's CPU client (XLA CPU), the code path a TPU host runs with libtpu; no TPU was measured",
        "- XLA: PJRT execute to ready results, summed over the step's graphs; host: the rest of the step (Dynamo, AOT, Ember's call path, transfers, the eager optimizer step)",
        "- on the ember device graphs run asynchronously: XLA's time is measured in steps that wait for every graph (`EMBER_XLA_SYNC=1`), the step as users run it (not waiting) over as many consecutive steps up to the last one's parameters being ready; host is the step's time beyond XLA's, what the overlap does not hide",
        "- bytes: what Ember handed to and took from the PJRT device per step (`ember.backend.stats`); on the CPU client a transfer is a host copy",
        f"- torchax {probe}",
        "",
        table(rows),
        "",
        "With the model on the CPU, inputs that are the same memory at the same torch version counter as the last",
        "call's stay on the device, and so do downloads passed on unchanged (saved activations); the eager optimizer",
        "writes every parameter each step, so the next forward uploads them again, and every output comes back to the",
        "host. On the ember device the weights, AdamW/SGD state, saved activations and gradients are device arrays",
        "between the graphs: per step the batch goes up and the loss comes down (plus the optimizer's step counter,",
        "a host scalar, for AdamW). Graphs whose results all stay on the device are not waited for, so the host's",
        "work for the next graph (Dynamo's guards, AOT's wrappers, the autograd engine) overlaps XLA's; a negative",
        "host time means the step took less than XLA's time measured in the synchronized steps (the machine's noise,",
        "and the waits that synchronizing adds).",
        "",
    ])
    Path(a.out).write_text(text)
    print(text)
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
