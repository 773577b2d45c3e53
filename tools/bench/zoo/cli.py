"""Model zoo: many architectures, random weights, through every Ember target (issue 19).

Builds models from small configs with random weights (nothing is downloaded):
`transformers` model classes, one per model type (decoder, encoder, seq2seq, vision,
audio), and every `torchvision.models` builder (classification, detection, segmentation,
video, optical flow). Each model is exported with Ember's exporter (ember.export:
torch.export + run_decompositions, a .pt2 and an .npz of inputs and eager outputs), then
compiled and run on each target (`ember compile --target T`, `ember run`) and compared
with torch eager at the output dtype's tolerance (tools/bench/opinfo/compare.py).
Writes tools/bench/results/zoo.md and zoo.png.

    python tools/bench/zoo.py                       # everything (resumable)
    python tools/bench/zoo.py --subset ci           # the CI subset (test_zoo.py)
    python tools/bench/zoo.py --models 'tv/resnet' --targets cpu
    python tools/bench/zoo.py --only hf/gpt2        # run one model again; the report keeps the rest
    python tools/bench/zoo.py --rerun-failed        # redo every (model, target) that did not pass
    python tools/bench/zoo.py --report-only         # rewrite zoo.md/zoo.png from the cache

Results are cached per model in CACHE/results/NAME.json (default ~/.cache/ember/zoo), with
the .pt2/.npz and the artifacts of failures in CACHE/work/NAME/. An export is keyed by the
model's spec, how this script builds that source's models, the library versions and
ember.export; a target's result by the export and the ember binary (and ember.xla): a rerun
redoes only what changed. A model that cannot be built (the config or the inputs this
script makes do not suit it, or over MAX_PARAMS) is skipped and listed with the reason; it
is not counted.

Each export runs in a persistent worker process (torch and transformers imported once;
restarted after a crash or a timeout), each ember step in its own process, with timeouts
(export, compile and run 300 s each). The full set (399 model types and builders, 328 of
which built, in the first run) took 58 min on 2 shared cores with --jobs 2, most of it the
tpu and trainium runs (each `ember run` starts Python and jax). Set TMPDIR (Inductor's files)
and EMBER_PYTHON (the Python with jax for tpu/trainium runs; default: this one).

Per (model, target) the result is one of: pass; wrong (the numbers differ from eager:
max abs diff); compile error; run error; panic (a Rust panic or a signal); timeout; or
export error (torch.export failed, for every target). Errors keep their first useful line.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .common import DEFAULT_CACHE, DEFAULT_OUT, ROOT, SUBSETS, TARGETS, THREADS, log
from .models import all_specs
from .report import plot, render
from .run import Run, interleaved
from .worker import worker_main


def default_ember() -> str:
    built = ROOT / "target" / "debug" / "ember"
    if built.exists():
        return str(built)
    return shutil.which("ember") or str(built)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python tools/bench/zoo.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", choices=sorted(SUBSETS), help="a fixed subset: " + "; ".join(
        f"{k}: {', '.join(v)}" for k, v in SUBSETS.items()))
    ap.add_argument("--models", metavar="REGEX", help="only the models whose name (hf/TYPE, tv/BUILDER) or "
                    "family matches REGEX (re.search)")
    ap.add_argument("--only", metavar="NAME[,NAME]", help="run just these models, from scratch (export and every "
                    "target) even when cached; the report takes the other selected models from the cache")
    ap.add_argument("--rerun-failed", action="store_true", help="redo every (model, target) that did not pass "
                    "(and every export that failed) instead of taking it from the cache")
    ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated targets (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="models in parallel (default 1: each step already uses "
                    f"{THREADS} threads)")
    ap.add_argument("--ember", default=default_ember(), help="the ember binary (default: target/debug/ember of "
                    "this repo, else `ember` on PATH; now %(default)s)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="directory of zoo.md and zoo.png (default: "
                    "tools/bench/results)")
    ap.add_argument("--cache", default=str(DEFAULT_CACHE), help="cache and work directory (default: %(default)s)")
    ap.add_argument("--report-only", action="store_true", help="run nothing: write the report from the cache")
    ap.add_argument("--note", action="append", default=[], metavar="TEXT", help="a line for the report's "
                    "header, e.g. where a copied --ember binary was built (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the selected models and exit")
    ap.add_argument("--strict-cache", action="store_true", help="also invalidate cached exports when any of "
                    "zoo.py or of its package tools/bench/zoo/ changes (by default: the model's spec, how the "
                    "package builds models, the library versions and ember.export)")
    ap.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    bad = [t for t in args.targets if t not in TARGETS]
    if bad or not args.targets:
        ap.error(f"unknown target(s) {bad}; known: {', '.join(TARGETS)}")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.models:
        try:
            re.compile(args.models)
        except re.error as exc:
            ap.error(f"--models: bad regex: {exc}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args._worker:
        return worker_main()
    ember_path = shutil.which(args.ember) or args.ember
    if not args.list and not Path(ember_path).exists():
        log(f"zoo.py: error: no ember binary at {args.ember} (build it with `cargo build`, or pass --ember)")
        return 2
    args.ember = str(Path(ember_path).resolve()) if Path(ember_path).exists() else args.ember
    prefixes = tuple({n[:3] for n in SUBSETS[args.subset]}) if args.subset else ("hf/", "tv/")
    specs, notes = all_specs(prefixes)
    if args.subset:
        want = SUBSETS[args.subset]
        specs = [s for s in specs if s["name"] in want]
        missing = sorted(set(want) - {s["name"] for s in specs})
        if missing:
            log(f"zoo.py: error: subset {args.subset}: models not available: {', '.join(missing)}")
            return 2
    if args.models:
        rx = re.compile(args.models)
        specs = [s for s in specs if rx.search(s["name"]) or rx.search(s["family"])]
    only = {n for n in (args.only or "").split(",") if n}
    unknown = only - {s["name"] for s in specs}
    if unknown:
        log(f"zoo.py: error: --only: no such model among the selected: {', '.join(sorted(unknown))}")
        return 2
    if args.list:
        for s in specs:
            print(f"{s['name']}\t{s['family']}")
        return 0
    if not specs:
        log("zoo.py: error: no model selected")
        return 2
    run = Run(args)
    load0 = os.getloadavg()[0]
    results: dict[str, dict[str, Any]] = {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    def write_report(where: Path) -> None:
        text, stats = render(specs, results, run, args.targets, notes, (load0, os.getloadavg()[0]), argv)
        where.mkdir(parents=True, exist_ok=True)
        tmp = where / ".zoo.md.tmp"
        tmp.write_text(text)
        os.replace(tmp, where / "zoo.md")
        plot(stats, args.targets, where / "zoo.png")

    # Reports written while a run goes on land in the cache: the committed one in `out` changes
    # only when the run ends, so an interrupted run (or a commit made meanwhile) cannot replace
    # it with a partial one.
    progress = Path(args.cache) / "progress"

    try:
        # --only runs just those models; the report still covers the whole selection.
        to_run = [] if args.report_only else [s for s in specs if not only or s["name"] in only]
        for s in specs:
            r = None if s in to_run else run.load(s["name"])
            if r is not None:
                results[s["name"]] = r
        if to_run:
            with cf.ThreadPoolExecutor(args.jobs) as pool:
                futs = {pool.submit(run.run_model, s, s["name"] in only): s for s in interleaved(to_run)}
                for i, fut in enumerate(cf.as_completed(futs), 1):
                    s = futs[fut]
                    try:
                        results[s["name"]] = fut.result()
                    except Exception:  # noqa: BLE001 - a harness bug on one model must not stop the run
                        log(f"[{s['name']}] harness error:\n{traceback.format_exc()}")
                    if i % 10 == 0:  # a report to look at while a long run goes on
                        log(f"[zoo] {i}/{len(to_run)} models, {time.monotonic() - t0:.0f}s; report so far: {progress / 'zoo.md'}")
                        write_report(progress)
    finally:
        run.close()
    write_report(out)
    log(f"wrote {out / 'zoo.md'} and {out / 'zoo.png'} ({len(results)} models, {time.monotonic() - t0:.0f}s)")
    return 0
