"""The markdown report of a check run."""

from __future__ import annotations

import datetime as _dt
import os
import re
import subprocess
from collections import Counter, defaultdict
from typing import Any

from .classify import ember_name, sample_id
from .common import PROG, REPO, op_id
from .compare import TOLERANCES, TORCH_DEFAULT_FLOAT32, _fmt


def _rmse(x: dict[str, Any]) -> str:
    """RMSE columns of a precision entry (older index entries lack them)."""
    return f"{x['rmse_ember']:.3g} / {x['rmse_eager']:.3g}" if "rmse_ember" in x else ""


def _rule(x: dict[str, Any]) -> str:
    """Which of `reclassify_precision`'s rules the entry met, in its order."""
    if x["ember_ok"]:
        return "within tolerance"
    if x["finite"] and x["nearer"] == x["differing"]:
        return "nearer"
    return "torch's fp64 rule" if x.get("torch_rule") else ""


def md_escape(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def code(s: Any, limit: int = 0) -> str:
    """A markdown code span that may itself contain backticks."""
    s = " ".join(str(s).split())
    if limit and len(s) > limit:
        s = s[: limit - 1] + "…"
    return "`` " + s.replace("|", "\\|") + " ``" if s else ""


def drop_locations(error: str) -> str:
    """An error line without its node/source locations (values kept)."""
    msg = re.sub(r"\s*at node `[^`]*`( \(from [^)]*\))?", "", error)
    msg = re.sub(r"node `[^`]*`( \(from [^)]*\))?:\s*", "", msg)
    return re.sub(r"\(from [^)]*\):\s*", "", msg)


def home_path(p: Any) -> str:
    s, home = str(p), os.path.expanduser("~")
    return "~" + s[len(home):] if s.startswith(home + os.sep) else s


def _repro(stage: str, key: str, cache: Any) -> str:
    c = home_path(cache)
    if stage == "cpu":
        return (f"ember compile {c}/{key}.pt2 --target cpu -o /tmp/{key[:8]} && "
                f"ember run /tmp/{key[:8]} --inputs {c}/{key}.npz --outputs /tmp/{key[:8]}/got.npz")
    if stage == "tpu":
        return (f"ember compile {c}/{key}.pt2 --target tpu -o /tmp/{key[:8]} && "
                f"ember run /tmp/{key[:8]} --inputs {c}/{key}.npz --outputs /tmp/{key[:8]}/got.npz")
    return f"ember import {c}/{key}.pt2"


def _ops_list(es: list[dict[str, Any]], n: int = 6) -> str:
    ops = sorted({op_id(e["op"], e["variant_test_name"]) for e in es})
    return ", ".join(ops[:n]) + (f", … (+{len(ops) - n})" if len(ops) > n else "")


def render_report(*, entries, exported, per_op, per_target, reasons, export_reasons, known,
                  n_pass, n_fail, seconds, stage_names, ember, torch_version, args,
                  unlowered, claimed, claim_stat, n_relevant, unsupported=None, max_export=None) -> str:
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    scope = "the --subset OpInfos" if args.subset else ("--ops " + args.ops if args.ops else "all cached OpInfos")
    cpu = "cpu" in stage_names
    out: list[str] = []
    w = out.append
    dtype = getattr(args, "dtype", "float32")
    w(f"# Ember OpInfo harness: {' + '.join(stage_names)}" + ("" if dtype == "float32" else f", {dtype}"))
    w("")
    w(f"- date: {now}")
    w(f"- torch: {torch_version}")
    try:
        built = _dt.datetime.fromtimestamp(ember.stat().st_mtime).astimezone().strftime("%Y-%m-%d %H:%M")
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
    except Exception:  # noqa: BLE001
        built, rev = "?", ""
    w(f"- ember: `{home_path(ember)}` (built {built}; repo HEAD at check time {rev or '?'})")
    cap = (f"; capped at the first {args.max_samples_per_op} samples per OpInfo "
           "(--max-samples-per-op)" if args.max_samples_per_op is not None else "")
    w(f"- scope: {scope}; {len(per_op)} OpInfos, {len(entries)} samples "
      f"({len(exported)} exported, {len(entries) - len(exported)} failed to export){cap}")
    if dtype != "float32":
        w(f"- dtype: samples drawn in **{dtype}** (`op.sample_inputs(\"cpu\", torch.{dtype})`); "
          f"{len(unsupported or [])} OpInfos that do not list {dtype} in `supported_dtypes(\"cpu\")` "
          f"are not sampled; up to {max_export or '?'} samples per OpInfo were exported")
    w(f"- **{n_pass} passed, {n_fail} failed** (exported samples; "
      f"{100.0 * n_pass / max(1, n_pass + n_fail):.1f}% pass), checked in {seconds:.1f}s "
      f"with {args.jobs} job(s)")
    reached = len(exported)
    for s in stage_names:
        here = [e for e in exported if e["check"]["stage"] == s]
        kinds = Counter(e["check"]["kind"] for e in here if e["check"]["kind"])
        extra = f": {', '.join(f'{n} {k}' for k, n in kinds.most_common())}" if kinds else ""
        note = ""
        if s == "cpu":
            nc = sum(1 for e in exported if e["check"]["ok"] and (e["check"].get("info") or {}).get("note"))
            note = f" ({nc} of them with values not compared, see below)" if nc else ""
        w(f"- stage `{s}`: {reached - len(here)} passed{note}, {len(here)} failed{extra}")
        reached -= len(here)
    if cpu:
        w(f"- claimed core ATen targets: **{len(claimed)}** (see below)")
    w("")
    sub = " --subset" if args.subset else ""
    dt_opt = "" if dtype == "float32" else f" --dtype {dtype}"
    ex_cap = f" --max-samples-per-op {max_export}" if max_export and max_export != 8 else ""
    w(f"Regenerate: `{PROG} export{sub}{dt_opt}{ex_cap} --jobs {args.jobs}` then "
      f"`{PROG} check{sub}{dt_opt} --stages {','.join(stage_names)} --jobs {args.jobs}"
      f"{f' --max-samples-per-op {args.max_samples_per_op}' if args.max_samples_per_op is not None else ''}`. "
      f"A sample is one `op.sample_inputs(\"cpu\", {dtype})` entry exported with "
      "`torch.export.export(...).run_decompositions()`; its files are "
      f"`{home_path(args.cache)}/<key>.pt2|.npz|.json` (`.npz`: inputs `arg0..`, eager outputs `out0..`).")
    w("")
    if cpu:
        w("The `cpu` stage runs `ember compile KEY.pt2 --target cpu -o DIR`, "
          "`ember run DIR --inputs KEY.npz --outputs got.npz` and compares `got.npz` with the "
          "eager outputs: same number of outputs, same shapes and dtypes, integer and bool "
          "outputs exactly equal, NaNs at the same positions, infinities equal, and floats "
          "within `|got - want| <= atol + rtol * |want|` (torch.testing.assert_close's rule) "
          "with these tolerances:")
        w("")
        w("| dtype | rtol | atol |")
        w("|---|---|---|")
        for dt, (rt, at) in TOLERANCES.items():
            w(f"| {dt} | {rt:g} | {at:g} |")
        w("")
        w("They are assert_close's defaults except float32/complex64, where torch uses "
          "rtol 1.3e-6 (about 11 ulp). Ember fuses elementwise chains into single kernels "
          "(intermediates stay in registers, LLVM may contract into FMAs), accumulates sums "
          "and GEMMs in a blocked, vectorized order, and evaluates exp/tanh/erf/sigmoid with "
          "inline polynomial approximations, so correct float32 results can differ from eager "
          "by more than torch's ~11 ulp, up to ~1e-4 relative (gelu, layer_norm; more near "
          "zero, where atol takes over); rtol 1e-4 absorbs that while lowering bugs (wrong "
          "formula, axis, broadcast or index) show up as errors of 1e-2 and more. Failures are "
          "classified as `compile` (e.g. `has no CPU lowering yet`, grouped by the op it "
          "names), `run` and `wrong result` (max abs/rel error reported); a wrong result "
          "that torch's own decomposed graph reproduces (run with `torch.export.load(...).module()`) "
          "is a `decomposition mismatch` instead, not an Ember bug. Outputs defined only up "
          "to sign (`SIGN_FREE` in opinfo/compare.py: linalg.eigh's eigenvectors, whose sign "
          "LAPACK leaves to its algorithm) are compared after negating each vector of Ember's "
          "whose dot product with eager's is negative.")
        w("")
        f32 = [e for e in exported if e["check"]["ok"] and "strict_ok" in (e["check"].get("info") or {})]
        if f32:
            rel = sorted(((e["check"]["info"].get("max_rel") or 0.0, e) for e in f32),
                         key=lambda re_: -re_[0])
            n_strict = sum(1 for e in f32 if not e["check"]["info"]["strict_ok"])
            above = [(r, e) for r, e in rel if r > TORCH_DEFAULT_FLOAT32[0]]
            above4 = [(r, e) for r, e in rel if r > 1e-4]
            w(f"Measured on this run: of the {len(f32)} passing samples with float32 outputs, "
              f"{n_strict} would fail torch's default float32 tolerances (rtol "
              f"{TORCH_DEFAULT_FLOAT32[0]:g}, atol {TORCH_DEFAULT_FLOAT32[1]:g}); OpInfo values "
              f"are O(1), so atol dominates. {len(above)} have a max relative error above "
              f"{TORCH_DEFAULT_FLOAT32[0]:g} and {len(above4)} above 1e-4 (all on small "
              "values, within atol); the largest: " + ", ".join(
                  f"{md_escape(sample_id(e))} {r:.2g}" for r, e in rel[:8]) + ".")
            w("")

    if cpu:
        w("## Claimed ops")
        w("")
        w(f"Core ATen targets (`aten.*`) for which every exported sample containing them "
          f"passes, counting only the {n_relevant} samples whose graph contains only "
          "supported targets (defined in `ember ops --dialect torch` and not named by a "
          "`has no CPU lowering yet` error) and whose outputs are compared by value. "
          f"**{len(claimed)} targets** (samples in parentheses):")
        w("")
        w(", ".join(f"`{t}` ({claim_stat[t]['samples']})" for t in claimed) or "None.")
        w("")
        near = sorted(((t, c) for t, c in claim_stat.items() if t.startswith("aten.") and c["failed"]),
                      key=lambda tc: (-tc[1]["passed"], tc[0]))
        if near:
            w("Supported targets not claimed (some sample containing them fails): " +
              ", ".join(f"`{t}` ({c['passed']}/{c['samples']})" for t, c in near) + ".")
            w("")

    w("## Top failure reasons")
    w("")
    w("Failures grouped by stage and error message with locations and concrete "
      "shapes/values stripped; wrong results are grouped by the ATen targets of the graph. "
      "`unknown op` means Ember's torch dialect has no definition; verifier messages point "
      "at a wrong result-type/shape rule.")
    w("")
    w("| # | samples | OpInfos | reason | example (OpInfo #sample: inputs) | key |")
    w("|---|---|---|---|---|---|")
    ranked = sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for n, (reason, es) in enumerate(ranked, 1):
        ex = es[0]
        w(f"| {n} | {len(es)} | {md_escape(_ops_list(es))} | {code(reason, 300)} | "
          f"{md_escape(op_id(ex['op'], ex['variant_test_name']))} #{ex['sample_index']}: "
          f"{code(ex.get('sample', ''), 160)} | `{ex['key']}` |")
    w("")
    if ranked:
        w("<details><summary>The example of each reason: full error line and the commands "
          "that reproduce it</summary>")
        w("")
        for n, (reason, es) in enumerate(ranked, 1):
            ex = es[0]
            w(f"{n}. {code(drop_locations(ex['check']['error'] or ''), 600)} — "
              f"{code(_repro(ex['check']['stage'], ex['key'], args.cache))}")
        w("")
        w("</details>")
        w("")

    wrong = [e for e in exported if e["check"].get("kind") == "wrong result"]
    target = "cpu" if cpu else "tpu"
    if cpu or "tpu" in stage_names:
        w("## Wrong results")
        w("")
        w("Samples that compile and run but whose outputs differ from eager beyond the "
          "tolerances: bugs in Ember's lowering or code generation. `max abs`/`max rel` are "
          "over all finite elements of the first differing output; `worst` is the element "
          "furthest outside the tolerance. Reproduce with "
          f"`ember compile {home_path(args.cache)}/KEY.pt2 --target {target} -o OUT && ember run OUT "
          f"--inputs {home_path(args.cache)}/KEY.npz --outputs got.npz` and compare `got.npz` "
          "with `out0..` of `KEY.npz` (the inputs are its `arg0..`).")
        w("")
        if wrong:
            w("| OpInfo #sample | inputs | ATen targets | output | mismatched | max abs | max rel | worst: got vs expected | key |")
            w("|---|---|---|---|---|---|---|---|---|")
            for e in sorted(wrong, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                i = e["check"].get("info") or {}
                if "mismatched" in i:
                    outp = f"{i['output']} {i['dtype']}[{'x'.join(map(str, i['shape']))}]"
                    mm = f"{i['mismatched']}/{i['size']}" + (f" ({i['nan_mismatch']} NaN)" if i.get("nan_mismatch") else "")
                    ma = "" if i.get("max_abs") is None else f"{i['max_abs']:.3g}"
                    mr = "" if i.get("max_rel") is None else f"{i['max_rel']:.3g}"
                    worst = f"{i['worst_index']}: {_fmt(i['got'])} vs {_fmt(i['want'])}"
                else:  # count/shape/dtype mismatch
                    outp, mm, ma, mr = "", code(e["check"]["error"].removeprefix("wrong result: "), 120), "", ""
                    worst = ""
                x = i.get("exact")
                if x:
                    worst += f"; vs float64 ({x['output']}): Ember {x['ember']:.3g}, eager {x['eager']:.3g}"
                w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | "
                  f"{md_escape(', '.join(t.removeprefix('aten.') for t in e['aten_targets']))} | "
                  f"{md_escape(outp)} | {mm} | {ma} | {mr} | {md_escape(worst)} | `{e['key']}` |")
        else:
            w("None.")
        w("")
        dm = [e for e in exported if e["check"].get("kind") == "decomposition mismatch"]
        if dm:
            w("### Decomposition mismatches")
            w("")
            w("Ember's outputs differ from eager, but torch's own decomposed graph (the .pt2) "
              "gives the same outputs as Ember: the core-ATen decomposition changes what the "
              "op returns. Counted as failures, left out of the claims.")
            w("")
            w("| OpInfo #sample | inputs | decomposed graph vs eager | key |")
            w("|---|---|---|---|")
            for e in sorted(dm, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                diff = re.sub(r"^.*differs from eager \((.*)\) and Ember matches.*$", r"\1",
                              e["check"]["error"])
                w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | "
                  f"{code(diff, 160)} | `{e['key']}` |")
            w("")
        ties = [e for e in exported if e["check"].get("kind") == "tie order"]
        if ties:
            w("### Equal values in another order (sort, argsort, topk)")
            w("")
            w("Index outputs that differ from eager's but pick exactly the same values along the "
              "sorted dim: torch's sort is not stable unless asked, Ember's is. Counted as "
              "failures, left out of the claims.")
            w("")
            w("| OpInfo #sample | inputs | output error | key |")
            w("|---|---|---|---|")
            for e in sorted(ties, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | {code(e['check']['error'], 160)} | `{e['key']}` |")
            w("")
        pr = [e for e in exported if e["check"].get("kind") == "precision"]
        if dtype != "float32":
            w("### Rounding (Ember checked against float64)")
            w("")
            w(f"Wrong results re-evaluated in float64: the OpInfo's sample is drawn again, its {dtype} "
              "inputs widened to float64 and the op run in eager; a sample is listed here (not "
              "under wrong results) when Ember's output is within the tolerances of that value, or "
              "at least as near it as eager at every element where Ember and eager differ (the "
              "errors below are over those elements), or when it passes torch's own check of a "
              "compiled graph against eager in this dtype (torch._dynamo.utils.same with a float64 "
              "reference: RMSE at most 3x eager's plus a tenth of the dtype's rtol). The difference "
              "from eager is then rounding: eager rounds every op's output to the narrow dtype, "
              "Ember's and XLA's fused kernels keep f32 between ops (or accumulate differently), "
              "which matters most where a sum cancels. Counted as failures, left out of the "
              "claims. Wrong results above carry the same measurement where it could be made.")
            w("")
            if pr:
                w("| OpInfo #sample | inputs | ATen targets | output | Ember vs float64 (max abs) | eager vs float64 (max abs) | RMSE Ember / eager | rule | key |")
                w("|---|---|---|---|---|---|---|---|---|")
                for e in sorted(pr, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                    x = e["check"]["info"]["exact"]
                    w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | "
                      f"{md_escape(', '.join(t.removeprefix('aten.') for t in e['aten_targets']))} | "
                      f"{x['output']} | {x['ember']:.3g} | {x['eager']:.3g} | {_rmse(x)} | {_rule(x)} | `{e['key']}` |")
            else:
                w("None.")
            w("")

    if cpu:
        w("## Ops without a CPU lowering")
        w("")
        w("Ops named by `has no CPU lowering yet` at the compile step (each blocks every graph "
          "that contains it; a graph stops at its first such op).")
        w("")
        if unlowered:
            w("| op | samples | OpInfos |")
            w("|---|---|---|")
            for op, es in sorted(unlowered.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                w(f"| `{op}` | {len(es)} | {md_escape(_ops_list(es, 8))} |")
        else:
            w("None.")
        w("")

    if known is not None:
        missing = sorted(t for t in per_target if ember_name(t) and ember_name(t) not in known)
        w("## ATen targets Ember lacks")
        w("")
        w("Targets that occur in exported graphs but have no definition in "
          "`ember ops --dialect torch` (each blocks every graph that contains it).")
        w("")
        if missing:
            w("| target | samples | OpInfos |")
            w("|---|---|---|")
            for t in missing:
                es = [e for e in exported if t in e["aten_targets"]]
                w(f"| `{t}` | {per_target[t]['samples']} | {md_escape(_ops_list(es, 8))} |")
        else:
            w("None.")
        w("")

    w("## Per OpInfo")
    w("")
    w("Columns per stage: exported samples that passed it (stages run in order, so each "
      "count includes only samples that passed the previous ones).")
    w("")
    w(f"| OpInfo | samples | export failed | {' | '.join(stage_names)} | failed | first failure |")
    w(f"|---|---|---|{'---|' * len(stage_names)}---|---|")
    for oid in sorted(per_op):
        r = per_op[oid]
        err = drop_locations(r["first_error"]) if r["first_error"] else (
            f"(export) {r['first_export_error']}" if r["first_export_error"] else "")
        vals = " | ".join(str(r["stages"][s]) for s in stage_names)
        w(f"| {md_escape(oid)} | {r['samples']} | {r['export_failed']} | {vals} | "
          f"{r['failed']} | {code(err, 220)} |")
    w("")

    w("## ATen targets in exported graphs")
    w("")
    w("A target passes a sample when the graph containing it passed. "
      "`known`: has a definition in `ember ops --dialect torch`"
      + ("; `lowered`: `no` if named by `has no CPU lowering yet`, `yes` if some graph "
         "containing it compiled; `claimed`: see above." if cpu else "."))
    w("")
    if cpu:
        w("| target | known | lowered | samples | passed | failed | claimed |")
        w("|---|---|---|---|---|---|---|")
    else:
        w("| target | known | samples | passed | failed |")
        w("|---|---|---|---|---|")
    claimed_set = set(claimed)
    for t in sorted(per_target):
        c = per_target[t]
        en = ember_name(t)
        k = "?" if known is None or en is None else ("yes" if en in known else "**no**")
        if cpu:
            lo = "**no**" if en in unlowered else ("yes" if c["compiled"] else "?")
            w(f"| `{t}` | {k} | {lo} | {c['samples']} | {c['passed']} | {c['failed']} | "
              f"{'yes' if t in claimed_set else ''} |")
        else:
            w(f"| `{t}` | {k} | {c['samples']} | {c['passed']} | {c['failed']} |")
    w("")

    if cpu:
        nc = [e for e in exported if e["check"]["ok"] and (e["check"].get("info") or {}).get("note")]
        w("## Values not compared")
        w("")
        w("Samples whose eager outputs are random draws or uninitialized memory: they pass "
          "when the outputs' count, shapes and dtypes match, and are left out of the claims.")
        w("")
        if nc:
            by: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for e in nc:
                by[e["check"]["info"]["note"].removeprefix("values not compared: ")].append(e)
            w("| samples | why | OpInfos |")
            w("|---|---|---|")
            for why, es in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                w(f"| {len(es)} | {md_escape(why)} | {md_escape(_ops_list(es, 8))} |")
        else:
            w("None.")
        w("")

    w("## Export failures (torch side)")
    w("")
    w("Samples the harness could not export; not counted in the totals above.")
    w("")
    if export_reasons:
        w("| samples | reason | example |")
        w("|---|---|---|")
        for reason, es in sorted(export_reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:40]:
            ex = es[0]
            w(f"| {len(es)} | {code(reason, 180)} | {md_escape(op_id(ex['op'], ex['variant_test_name']))} #{ex['sample_index']} |")
        if len(export_reasons) > 40:
            w(f"| … | {len(export_reasons) - 40} more reasons | |")
    else:
        w("None.")
    w("")
    return "\n".join(out)
