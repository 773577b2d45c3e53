"""The `export` and `check` commands."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Sequence

from . import __doc__ as _HARNESS_DOC
from .classify import claimed_targets, ember_known_ops, expected_map, failure_reason, reason_key, sample_id, unlowered_op
from .common import DEFAULT_CACHE, DEFAULT_EMBER, DEFAULT_EXPECTED, DEFAULT_REPORT_DIR, DEFAULT_STAGES, DTYPES, DTYPE_SUFFIX, PROG, SUBSET, index_path, load_index, log, matches, op_id, select_names, write_atomic, write_json
from .export import cmd_export
from .report import drop_locations, render_report
from .stages import STAGES, Context, run_sample


def cmd_check(args: argparse.Namespace) -> int:
    import threading

    cache = Path(args.cache).expanduser()
    ember = Path(args.ember)
    if not ember.exists():
        log(f"error: no ember binary at {ember} (cargo build -p ember-tools, or --ember PATH)")
        return 2
    entries = load_index(cache, args.dtype)
    if not entries:
        dt = "" if args.dtype == "float32" else f" --dtype {args.dtype}"
        log(f"error: {index_path(cache, args.dtype)} is missing or empty; run `{PROG} export{dt}` first")
        return 2
    index_meta = json.loads(index_path(cache, args.dtype).read_text())
    chosen = select_names(args)
    entries = [e for e in entries if matches(chosen, e["op"], e["variant_test_name"])]
    if args.max_samples_per_op is not None:
        entries = [e for e in entries if e["sample_index"] < args.max_samples_per_op]
    exported = [e for e in entries if e["status"] == "exported"]
    stage_names = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stage_names if s not in STAGES]
    if unknown or not stage_names:
        log(f"error: unknown stage(s) {', '.join(unknown)}; known: {', '.join(STAGES)}")
        return 2
    if args.write_expected and Path(args.write_expected).resolve() == DEFAULT_EXPECTED.resolve() and (
            not args.subset or args.ops or args.max_samples_per_op is not None or args.dtype != "float32"):
        log(f"error: {DEFAULT_EXPECTED.name} records the float32 --subset run: use --subset without "
            "--ops/--max-samples-per-op/--dtype, or --write-expected FILE")
        return 2
    stages = [STAGES[s]() for s in stage_names]
    workdir = Path(args.workdir).expanduser() if args.workdir else cache / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = Context(ember=ember, cache=cache, workdir=workdir)

    t0 = time.monotonic()
    log(f"checking {len(exported)} exported sample(s) with stages {','.join(stage_names)} "
        f"({ember}, {args.jobs} job(s))")
    lock = threading.Lock()
    progress = Counter()

    def one(e: dict[str, Any]) -> dict[str, Any]:
        r = run_sample(e, stages, ctx)
        with lock:
            progress["done"] += 1
            progress["ok"] += r["ok"]
            if progress["done"] % 250 == 0:
                log(f"  {progress['done']}/{len(exported)} checked, {progress['ok']} passed "
                    f"({time.monotonic() - t0:.0f}s)")
        return r

    with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(one, exported))
    for e, r in zip(exported, results):
        e["check"] = r
    wrong = [e for e in exported if e["check"]["kind"] == "wrong result"]
    if wrong:
        log(f"triage of {len(wrong)} wrong result(s): running their decomposed graphs in torch")
        for e in wrong:
            STAGES[e["check"]["stage"]].triage(e, ctx)  # type: ignore[attr-defined]
    seconds = time.monotonic() - t0

    # per op
    per_op: dict[str, dict[str, Any]] = {}
    for e in entries:
        oid = op_id(e["op"], e["variant_test_name"])
        row = per_op.setdefault(oid, {"samples": 0, "export_failed": 0, "passed": 0, "failed": 0,
                                      "stages": Counter(), "first_error": None,
                                      "first_export_error": None})
        row["samples"] += 1
        if e["status"] != "exported":
            row["export_failed"] += 1
            row["first_export_error"] = row["first_export_error"] or e["error"]
            continue
        row["stages"].update(e["check"]["passed"])
        if e["check"]["ok"]:
            row["passed"] += 1
        else:
            row["failed"] += 1
            row["first_error"] = row["first_error"] or e["check"]["error"]

    # per ATen target
    known = ember_known_ops(ember)
    per_target: dict[str, Counter] = defaultdict(Counter)
    for e in exported:
        for t in e["aten_targets"]:
            per_target[t]["samples"] += 1
            per_target[t]["passed" if e["check"]["ok"] else "failed"] += 1
            c = e["check"]
            if "cpu" in c["passed"] or (c["stage"] == "cpu" and c["kind"] != "compile"):
                per_target[t]["compiled"] += 1

    # failure reasons
    reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in exported:
        if not e["check"]["ok"]:
            reasons[reason_key(e)].append(e)
    export_reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        if e["status"] != "exported":
            export_reasons[failure_reason(e["error"] or "")].append(e)
    unlowered: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in exported:
        op = unlowered_op(e)
        if op:
            unlowered[op].append(e)
    claimed, claim_stat, n_relevant = claimed_targets(exported, known, set(unlowered))

    n_pass = sum(r["ok"] for r in results)
    n_fail = len(results) - n_pass

    # console table
    width = max([len(k) for k in per_op] + [10])
    cols = "".join(f"  {s:>6}" for s in stage_names)
    print(f"{'OpInfo':<{width}}  samples{cols}  failed  export_failed  first error")
    for oid in sorted(per_op):
        r = per_op[oid]
        err = drop_locations(r["first_error"] or "")[:110]
        vals = "".join(f"  {r['stages'][s]:>6}" for s in stage_names)
        print(f"{oid:<{width}}  {r['samples']:>7}{vals}  {r['failed']:>6}  "
              f"{r['export_failed']:>13}  {err}")
    print()
    print("per stage (exported samples reaching it: passed/failed):")
    reached = len(exported)
    for s in stage_names:
        failed_here = sum(1 for e in exported if e["check"]["stage"] == s)
        kinds = Counter(e["check"]["kind"] for e in exported if e["check"]["stage"] == s and e["check"]["kind"])
        extra = f"  ({', '.join(f'{n} {k}' for k, n in kinds.most_common())})" if kinds else ""
        print(f"  {s}: {reached - failed_here} passed, {failed_here} failed{extra}")
        reached -= failed_here
    print()
    print("top failure reasons:")
    for reason, es in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:15]:
        print(f"  {len(es):>5}  {reason[:150]}  [{es[0]['key']}]")
    print(f"claimed core ATen targets: {len(claimed)} (of {len(claim_stat)} in {n_relevant} samples "
          "with only supported targets)")
    print(f"checked in {seconds:.1f}s; {len(entries) - len(exported)} sample(s) were not exported")
    print(f"{n_pass} passed, {n_fail} failed")

    report = args.report
    if report is None and not args.ops:  # --ops: a look at a few ops, no report by default
        suffix = DTYPE_SUFFIX[args.dtype] + ("_subset" if args.subset else "")
        report = str(DEFAULT_REPORT_DIR / f"opinfo_{stage_names[-1]}{suffix}.md")
    if report:
        text = render_report(
            entries=entries, exported=exported, per_op=per_op, per_target=per_target,
            reasons=reasons, export_reasons=export_reasons, known=known, n_pass=n_pass,
            n_fail=n_fail, seconds=seconds, stage_names=stage_names, ember=ember,
            torch_version=index_meta.get("torch_version", "?"), args=args,
            unlowered=unlowered, claimed=claimed, claim_stat=claim_stat, n_relevant=n_relevant,
            unsupported=index_meta.get("unsupported_opinfos"),
            max_export=index_meta.get("max_samples_per_op"),
        )
        write_atomic(Path(report), text.encode())
        log(f"wrote {report}")
    if args.json:
        write_json(Path(args.json), {"passed": n_pass, "failed": n_fail, "stages": stage_names,
                                     "claimed": claimed, "samples": [
            {"id": sample_id(e), **{k: e.get(k) for k in (
                "op", "variant_test_name", "sample_index", "key", "sample", "status", "error",
                "aten_targets", "check")}} for e in entries]})
    if args.write_expected:
        path = Path(args.write_expected)
        write_json(path, {
            "about": (f"Per-sample results of `{PROG} check{' --subset' if args.subset else ''} "
                      f"--stages {','.join(stage_names)}`; tools/python/tests/test_opinfo_subset.py "
                      "fails when a sample listed as `pass` no longer passes. Regenerate with "
                      f"`{PROG} check --subset --write-expected`."),
            "torch_version": index_meta.get("torch_version", "?"),
            "stages": stage_names,
            "passed": n_pass,
            "failed": n_fail,
            "samples": expected_map(entries),
        })
        log(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=_HARNESS_DOC.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--cache", default=str(DEFAULT_CACHE), metavar="DIR",
                        help=f"sample cache (default: {DEFAULT_CACHE})")
        sp.add_argument("--subset", action="store_true",
                        help=f"only the {len(SUBSET)} common OpInfos of the CI subset")
        sp.add_argument("--ops", metavar="a,b,c", help="only these OpInfos (name or name.variant)")
        sp.add_argument("--jobs", type=int, default=2, metavar="J", help="parallel workers (default: 2)")
        sp.add_argument("--dtype", default="float32", metavar="D[,D]",
                        help="sample dtype(s), of: " + ", ".join(DTYPES) + " (default: float32, "
                             "which falls back to an integer/bool/complex dtype for ops without "
                             "float32); a list runs one after the other, each with its own index "
                             "and report")

    ex = sub.add_parser("export", help="export OpInfo samples to .pt2/.npz in the cache")
    common(ex)
    ex.add_argument("--limit-ops", type=int, metavar="N", help="only the first N selected OpInfos")
    ex.add_argument("--max-samples-per-op", type=int, default=8, metavar="K", help="default: 8")
    ex.add_argument("--force", action="store_true", help="re-export cached samples")

    ck = sub.add_parser("check", help="run the stages on every exported sample, write a report")
    common(ck)
    ck.add_argument("--ember", default=str(DEFAULT_EMBER), metavar="PATH",
                    help="the ember binary (default: target/debug/ember)")
    ck.add_argument("--report", default=None, metavar="FILE.md",
                    help="markdown report (default: tools/bench/results/opinfo_<last stage>.md, "
                         "with --subset opinfo_<last stage>_subset.md, with --ops none; '' for none)")
    ck.add_argument("--stages", default=DEFAULT_STAGES,
                    help=f"comma-separated, in order, of: {', '.join(STAGES)} (default: {DEFAULT_STAGES})")
    ck.add_argument("--max-samples-per-op", type=int, metavar="K",
                    help="only check the first K samples of each OpInfo")
    ck.add_argument("--write-expected", nargs="?", const=str(DEFAULT_EXPECTED), metavar="FILE",
                    help="write each sample's pass/fail to FILE (default: "
                         "tools/bench/opinfo_subset_expected.json, which the CI test compares with)")
    ck.add_argument("--json", metavar="FILE", help="also write per-sample results as JSON")
    ck.add_argument("--workdir", metavar="DIR", help="stage outputs (default: DIR/work)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TMPDIR", "/tmp/ember-tmp")
    Path(os.environ["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        log(f"error: unknown --dtype {', '.join(bad)}; known: {', '.join(DTYPES)}")
        return 2
    if len(dtypes) > 1 and args.cmd == "check" and (args.report or args.json or args.write_expected):
        log("error: --report/--json/--write-expected name one file: give one --dtype")
        return 2
    if args.cmd == "export":
        import warnings

        warnings.filterwarnings("ignore")
    rc = 0
    for d in dtypes:
        args.dtype = d
        rc = max(rc, cmd_export(args) if args.cmd == "export" else cmd_check(args))
    return rc

