#!/usr/bin/env python3
"""Regenerate the bundled test models: testdata/models/NAME.pt2 + NAME.npz.

    python testdata/models/generate.py [NAME ...] [--seed N] [--out-dir DIR]

Uses the exporter in tools/python/python/ember (put on sys.path here, so the
`ember` package does not need to be built or installed).  Needs torch and, for
tiny_llama, transformers.  Output is deterministic: re-running it produces
byte-identical .npz and .pt2 files with the same torch/transformers versions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tools" / "python" / "python"))

from ember.export import ModelSpecError, export_model  # noqa: E402

MODELS = ["mlp", "gpt2_block", "tiny_llama", "resnet", "mlp_dynamic", "gpt2_block_dynamic", "mlp_f16", "tiny_llama_bf16"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", metavar="NAME", help=f"models (default: all of {', '.join(MODELS)})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out-dir", type=Path, default=HERE)
    args = p.parse_args(argv)
    names = args.names or MODELS
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        p.error(f"unknown model(s): {', '.join(unknown)}")
    for name in names:
        try:
            r = export_model(name, args.out_dir / f"{name}.pt2", seed=args.seed)
        except ModelSpecError as exc:
            print(f"generate.py: {name}: {exc}", file=sys.stderr)
            return 2
        diff = "n/a" if r.max_abs_diff is None else f"{r.max_abs_diff:.3g}"
        print(
            f"{name:12s} {r.pt2.stat().st_size:>9d} B pt2  {r.npz.stat().st_size:>7d} B npz  "
            f"max|exported-eager|={diff}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
