#!/usr/bin/env python3
"""E-graph optimizer scale benchmark: how `fuse` grows with graph size.

Graphs: the GPT-2-style block (testdata), a 12-layer GPT-2 (transformers GPT2Model, small
width, exported here), and synthetic transformer stacks of ~10k and ~100k `ten` ops made by
chaining copies of the block's lowered IR (each copy with its own weights). For each it runs
`ember opt --passes=fuse --trace` and prints ops, e-nodes, e-classes, iterations, blocks, the
optimizer's wall time (fuse run minus a run without passes: parsing and printing excluded) and
peak memory (max RSS of the fuse run). Writes tools/bench/results/egraph_scale.md.

    python tools/bench/bench_egraph.py [--ember target/release/ember] [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "tools" / "python" / "python")]


def run(cmd: list[str]) -> tuple[float, int, str]:
    """(wall seconds, max RSS in MB, stderr) of cmd, measured by /usr/bin/time."""
    p = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", *cmd], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    m = re.search(r"TIME ([0-9.]+) ([0-9]+)", p.stderr)
    return float(m.group(1)), int(m.group(2)) // 1024, p.stderr


def lowered(ember: str, model: Path) -> str:
    p = subprocess.run([ember, "opt", str(model), "--passes=canonicalize,torch-to-ten,cse,dce"], capture_output=True, text=True, check=True)
    return p.stdout


def stack(block_ir: str, layers: int) -> str:
    """`layers` copies of a one-function module chained through its user input."""
    sig = re.search(r"func\.func @main\((.*)\) -> \((.*)\) \{", block_ir)
    args = re.findall(r"(%arg[0-9]+): (tensor<[^>]*>)( \{[^}]*\})?", sig.group(1))
    inp = next(a for a, t, at in args if at and "ember.input" in at)
    body = block_ir[sig.end():block_ir.rindex("return")].rstrip()
    ret = re.search(r"return (%[0-9]+) : (tensor<[^>]*>)", block_ir)
    new_args, lines, prev = [], [], None
    for i in range(layers):
        def rename(m, i=i):
            name = m.group(0)
            if name.startswith("%arg"):
                if name == inp:
                    return prev if prev else "%x"
                return f"%w{i}_{name[4:]}"
            return f"%l{i}_{name[1:]}"
        lines.append(re.sub(r"%arg[0-9]+|%[0-9]+", rename, body))
        for a, t, _ in args:
            if a != inp:
                new_args.append(f"%w{i}_{a[4:]}: {t}")
        prev = f"%l{i}_{ret.group(1)[1:]}"
    in_t = next(t for a, t, _ in args if a == inp)
    head = f"module {{\n  func.func @main(%x: {in_t}, {', '.join(new_args)}) -> ({ret.group(2)}) {{"
    return head + "\n".join(lines) + f"\n    return {prev} : {ret.group(2)}\n  }}\n}}\n"


def gpt2_12(tmp: Path) -> Path | None:
    """A 12-layer GPT-2 (width 64, 4 heads) exported with torch.export, or None if that fails."""
    try:
        import torch
        from transformers import GPT2Config, GPT2Model
        from ember.export import export_model

        def factory():
            torch.manual_seed(0)
            cfg = GPT2Config(n_layer=12, n_embd=64, n_head=4, vocab_size=128, n_positions=32, attn_implementation="eager", use_cache=False)
            return GPT2Model(cfg).eval(), (torch.randint(0, 128, (1, 16)),)

        return export_model(factory, tmp / "gpt2_12.pt2", seed=0).pt2
    except Exception as e:  # the table says so
        print(f"[gpt2-12] export failed: {e}", file=sys.stderr)
        return None


def measure(ember: str, name: str, path: Path, tmp: Path) -> dict:
    mlir = path
    if path.suffix == ".pt2":
        mlir = tmp / f"{name}.mlir"
        mlir.write_text(lowered(ember, path))
    base, _, _ = run([ember, "opt", str(mlir), "--passes=", "-o", "/dev/null"])
    wall, rss, err = run([ember, "opt", str(mlir), "--passes=fuse", "--trace", "-o", "/dev/null"])
    head = re.search(r"fuse: target \w+, (\d+) ops -> (\d+) ops after extraction, (\d+) kernels", err)
    blocks = re.findall(r"block \d+: (\d+) ops, (\d+) iterations, (\d+) e-nodes, (\d+) e-classes, stopped: ([^\n]+)", err)
    stops = sorted({b[4] for b in blocks})
    return dict(
        graph=name,
        ops=int(head.group(1)),
        kernels=int(head.group(3)),
        enodes=sum(int(b[2]) for b in blocks),
        eclasses=sum(int(b[3]) for b in blocks),
        iterations=max(int(b[1]) for b in blocks),
        blocks=len(blocks),
        stop=", ".join(stops),
        seconds=max(wall - base, 0.0),
        wall=wall,
        rss=rss,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ember", default=str(ROOT / "target" / "release" / "ember"))
    ap.add_argument("--sizes", default="10000,100000", help="synthetic stack sizes in ops")
    ap.add_argument("--out", default=str(HERE / "results" / "egraph_scale.md"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-egraph-", dir=os.environ.get("TMPDIR") or "/tmp"))
    block = ROOT / "testdata" / "models" / "gpt2_block.pt2"
    rows = [measure(args.ember, "GPT-2 block (testdata)", block, tmp)]
    g12 = gpt2_12(tmp)
    if g12:
        rows.append(measure(args.ember, "GPT-2, 12 layers (transformers, d=64)", g12, tmp))
    block_ir = lowered(args.ember, block)
    per_layer = rows[0]["ops"]
    for size in [int(s) for s in args.sizes.split(",") if s]:
        layers = max(1, round(size / per_layer))
        path = tmp / f"stack{layers}.mlir"
        path.write_text(stack(block_ir, layers))
        print(f"[stack] {layers} layers", file=sys.stderr, flush=True)
        rows.append(measure(args.ember, f"synthetic stack, {layers} blocks", path, tmp))
    load = os.getloadavg()[0]
    out = [
        "# E-graph optimizer scale", "",
        f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; {args.ember}; 1-min load average {load:.2f} (other processes share the 2 cores)",
        "- time = wall of `ember opt --passes=fuse` minus wall of `ember opt --passes=` on the same file (parse and print excluded); "
        "memory = max RSS of the fuse run; e-nodes/e-classes summed over saturation blocks",
        "- goal (issue): close to linear growth, 100k nodes under 30 s, peak memory under 4 GB",
        "",
        "| graph | ops | blocks | e-nodes | e-classes | max iterations | stopped | kernels | optimize s | µs/op | peak MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(f"| {r['graph']} | {r['ops']} | {r['blocks']} | {r['enodes']} | {r['eclasses']} | {r['iterations']} | {r['stop']} | "
                   f"{r['kernels']} | {r['seconds']:.2f} | {1e6 * r['seconds'] / r['ops']:.0f} | {r['rss']} |")
    text = "\n".join(out) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
