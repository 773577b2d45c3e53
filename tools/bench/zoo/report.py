"""The report: zoo.md (render, with its cells and failure causes) and zoo.png (plot)."""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opinfo.classify import failure_reason

from .common import ROOT, STATUSES, THREADS, key_of

if TYPE_CHECKING:
    from .run import Run


def git_rev(tree: Path | None) -> str:
    if tree is None:
        return ""
    p = subprocess.run(["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


def md(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def cell(res: dict[str, Any], target: str, current: bool = True) -> tuple[str, str | None]:
    """(status, error line) of a model on a target; export failures count for every target."""
    exp = res["export"]
    if exp["status"] == "export error":
        return ("timeout" if exp.get("kind") == "timeout" else "export error"), exp.get("error")
    t = res.get("targets", {}).get(target)
    if t is None:
        return "not run", None
    if t["status"] == "wrong":
        if (t.get("float64") or {}).get("rule"):
            return "pass", "float64 rule"
        return "wrong", t.get("error")
    return t["status"], t.get("error")


def cause(status: str, error: str | None) -> str:
    """The group key of a failure: the status and the error line without names and numbers."""
    if status == "wrong":
        return "wrong result"
    if status == "timeout":
        return "timeout: " + re.sub(r"\d+s", "Ns", error or "")
    key = failure_reason(error or "")
    if status == "export error":
        # Python exception lines: keep the type and the message's start, not its values.
        key = re.sub(r"'[^']*'", "'…'", key)
    key = re.sub(r"`[^`]*\.(pt2|npz)`", "`…`", key)
    return f"{status}: {key[:200]}"


def fmt_cell(status: str, error: str | None, t: dict[str, Any] | None) -> str:
    if status == "pass":
        return f"pass ({error})" if error else "pass"
    if status == "wrong":
        mad = t.get("max_abs") if t else None
        return f"**WRONG** (max abs diff {mad:.3g})" if mad is not None else "**WRONG**"
    if status == "not run":
        return "-"
    err = error or ""
    return f"{status}: {md(err if len(err) <= 200 else err[:199] + '…')}"


def render(specs: list[dict[str, Any]], results: dict[str, dict[str, Any]], run: Run, targets: list[str],
           notes: list[str], load: tuple[float, float], argv: list[str]) -> tuple[str, dict[str, Any]]:
    v = run.versions
    git = git_rev(ROOT)
    # The compiler's rev is that of the tree the binary was built in (ROOT/target/debug/ember:
    # this one), which a copied binary does not tell: --note can.
    binary = Path(run.ember).resolve()
    tree = binary.parents[2] if len(binary.parents) > 2 and binary.parent.parent.name == "target" else None
    ember_rev = f"built in {tree} at {git_rev(tree)}" if tree and git_rev(tree) else "built outside a git tree"
    ember_ver = subprocess.run([run.ember, "--version"], capture_output=True, text=True).stdout.strip()
    done = [s for s in specs if s["name"] in results]
    skipped = [s for s in done if results[s["name"]]["export"]["status"] == "build error"]
    tried = [s for s in done if s not in skipped]
    partial = len(done) < len(specs) or any(cell(results[s["name"]], t)[0] == "not run" for s in tried for t in targets)
    lines = [
        "# Model zoo: Ember vs torch eager", "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- torch {v['torch']}, transformers {v['transformers']}, torchvision {v['torchvision']}, jax {v['jax']}",
        f"- Ember: {ember_ver or 'ember'} `{run.ember}` (sha256 {run.ember_sha}), {ember_rev}; zoo.py from tree "
        f"{git or '?'}",
        f"- machine: {os.cpu_count()} logical CPUs, {platform.machine()}; 1-min load average "
        + (f"when the report was written: {load[1]:.2f} (--report-only: the run's load is not known)"
           if run.args.report_only else f"at start / end: {load[0]:.2f} / {load[1]:.2f}")
        + f"; {THREADS} threads per step",
        f"- command: `python tools/bench/zoo.py {' '.join(argv)}`".rstrip(),
        "- models: random weights (seed 0), small configs, batch 1, fp32, eval mode; exported with "
        "`ember.export` (torch.export + run_decompositions); outputs compared with eager at the "
        "dtype's tolerance (float32: rtol 1e-4, atol 1e-5; tools/bench/opinfo/compare.py); outside it, "
        "a result passes by Inductor's accuracy rule against the model run in float64 (every float "
        "output's RMSE from float64 within 2x eager's + 1e-5, other outputs equal: `pass (float64 rule)`)",
        f"- {len(tried)} architectures tried ({len(skipped)} more could not be built and are listed at the end, "
        "not counted)",
    ]
    if partial:
        n_complete = sum(all(cell(results[s["name"]], t)[0] != "not run" for t in targets) for s in tried)
        lines.append(f"- **PARTIAL RUN**: {len(done)} of {len(specs)} selected models reached, "
                     f"{n_complete} with every target done; `-` marks what has not run")
    stale = 0
    for s in done:
        res = results[s["name"]]
        if res.get("export_key") != key_of(run.export_salt, s, run.recipes[s["source"]]):
            stale += 1
        else:
            want = key_of(run.target_salt, res["export_key"])
            stale += any(r.get("key") != want for r in res.get("targets", {}).values())
    if stale:
        lines.append(f"- **{stale} model(s) have results from another ember binary, ember.export or zoo.py "
                     "recipe** than the current ones (a rerun without --report-only redoes them)")
    lines += [f"- note: {n}" for n in notes + run.args.note]

    # Pass rates.
    def counts(group: list[dict[str, Any]], target: str) -> Counter:
        return Counter(cell(results[s["name"]], target)[0] for s in group)

    lines += ["", "## Pass rate", "",
              "Of the architectures tried (an export error counts as a failure on every target).", "",
              "| target | pass | " + " | ".join(STATUSES[1:]) + " | pass rate |",
              "|---|" + "---|" * (len(STATUSES) + 1)]
    summary: dict[str, Any] = {}
    for t in targets:
        c = counts(tried, t)
        rate = c["pass"] / len(tried) if tried else 0.0
        summary[t] = rate
        lines.append(f"| {t} | " + " | ".join(str(c[s]) for s in STATUSES) + f" | {100 * rate:.0f}% |")
    exported = [s for s in tried if results[s["name"]]["export"]["status"] == "exported"]
    lines += ["", f"{len(exported)} of {len(tried)} exported; of those, pass: "
              + ", ".join(f"{t} {counts(exported, t)['pass']}/{len(exported)}" for t in targets) + "."]
    by_rule = Counter(t for s in exported for t in targets if cell(results[s["name"]], t) == ("pass", "float64 rule"))
    if by_rule:
        lines += ["", "Of the passes, outside eager's tolerance but within the float64 rule: "
                  + ", ".join(f"{t} {by_rule[t]}" for t in targets) + " (listed under Outside eager's tolerance)."]

    families = sorted({s["family"] for s in tried}, key=lambda f: (not f.startswith("hf"), f))
    lines += ["", "## Pass rate per family", "",
              "| family | tried | exported | " + " | ".join(targets) + " |", "|---|---|---|" + "---|" * len(targets)]
    fam_rates: dict[str, dict[str, float]] = {}
    for f in families:
        group = [s for s in tried if s["family"] == f]
        ex = sum(results[s["name"]]["export"]["status"] == "exported" for s in group)
        row = []
        fam_rates[f] = {}
        for t in targets:
            p = counts(group, t)["pass"]
            fam_rates[f][t] = p / len(group)
            row.append(f"{p}/{len(group)} ({100 * p / len(group):.0f}%)")
        lines.append(f"| {f} | {len(group)} | {ex} | " + " | ".join(row) + " |")

    # Failure causes.
    groups: dict[str, dict[str, Any]] = defaultdict(lambda: dict(n=0, targets=Counter(), models=[], example=""))
    for s in tried:
        res = results[s["name"]]
        if res["export"]["status"] != "exported":
            status, err = cell(res, targets[0])
            g = groups[cause(status, err)]
            g["n"] += 1
            g["targets"]["export"] += 1
            g["models"].append(s["name"])
            g["example"] = g["example"] or err
            continue
        for t in targets:
            status, err = cell(res, t)
            if status in ("pass", "not run"):
                continue
            g = groups[cause(status, err)]
            g["n"] += 1
            g["targets"][t] += 1
            if s["name"] not in g["models"]:
                g["models"].append(s["name"])
            g["example"] = g["example"] or err
    lines += ["", "## Failure causes", "",
              "(model, target) failures grouped by the normalized first error line; an export error counts "
              "once per model.", "",
              "| count | where | cause | example (first model's line) | models |", "|---|---|---|---|---|"]
    for key, g in sorted(groups.items(), key=lambda kv: (-kv[1]["n"], kv[0])):
        where = ", ".join(f"{t} {n}" for t, n in sorted(g["targets"].items()))
        models = ", ".join(g["models"][:6]) + (f", … ({len(g['models'])})" if len(g["models"]) > 6 else "")
        lines.append(f"| {g['n']} | {where} | {md(key)} | {md(g['example'] or '')[:200]} | {models} |")

    wrong = [(s["name"], t, results[s["name"]]["targets"][t]) for s in exported for t in targets
             if results[s["name"]].get("targets", {}).get(t, {}).get("status") == "wrong"]
    if wrong:
        lines += ["", "## Outside eager's tolerance", "",
                  "Max abs/rel diff over the first output that differs. `export diff`: torch running the exported "
                  "(decomposed) graph vs eager (often 0: it calls the same kernels).", "",
                  "`vs float64`: the max abs error from the model run in float64 (same weights and inputs) of "
                  "Ember's outputs and of eager's, and the largest output RMSE of each. The verdict is Inductor's "
                  "accuracy rule (every float output's RMSE within 2x eager's + 1e-5): float32 rounding amplified "
                  "by the model passes it, a miscompile does not; `?` when the model cannot run in float64.", "",
                  "| model | target | max abs diff | max rel diff | export diff | Ember / eager vs float64 (RMSE) | "
                  "verdict | first mismatch |", "|---|---|---|---|---|---|---|---|"]
        for name, t, r in wrong:
            ed = results[name]["export"].get("export_diff")
            rel = r.get("max_rel")
            f64 = r.get("float64") or {}
            if "rule" in f64:
                worst = max(f64["rmse"], key=lambda p: p[0] - 2 * p[1], default=[0.0, 0.0])
                vs = f"{f64['ember']:.3g} / {f64['eager']:.3g} ({worst[0]:.3g} / {worst[1]:.3g})"
                verdict = "passes the float64 rule" if f64["rule"] else "**WRONG** (fails the float64 rule)"
            else:
                vs, verdict = md(f64.get("error") or "-"), "**WRONG** (?)"
            lines.append(f"| {name} | {t} | {r.get('max_abs') or 0:.3g} | {'-' if rel is None else f'{rel:.3g}'} | "
                         f"{'-' if ed is None else f'{ed:.3g}'} | {vs} | {verdict} | {md(r.get('error') or '')[:240]} |")
    panics = [(s["name"], t, cell(results[s["name"]], t)[1]) for s in exported for t in targets
              if cell(results[s["name"]], t)[0] == "panic"]
    if panics:
        lines += ["", "## Panics and signals", "", "| model | target | message |", "|---|---|---|"]
        lines += [f"| {name} | {t} | {md(err or '')[:240]} |" for name, t, err in panics]

    lines += ["", "## Models", "",
              "| model | family | ops | params | " + " | ".join(targets) + " |", "|---|---|---|---|" + "---|" * len(targets)]
    for s in sorted(tried, key=lambda s: (s["family"], s["name"])):
        res = results[s["name"]]
        exp = res["export"]
        ops = exp.get("n_ops", "-")
        params = f"{exp['params'] / 1e6:.2f}M" if exp.get("params") else "-"
        cells = [fmt_cell(*cell(res, t), res.get("targets", {}).get(t)) for t in targets]
        # The same failure on several targets (an import error, a missing op) is written once.
        cells = [c if i == 0 or c == "pass" or c != cells[0] else f"(same as {targets[0]})"
                 for i, c in enumerate(cells)]
        if exp["status"] != "exported":
            cells = [fmt_cell(*cell(res, targets[0]), None)] + ["(export)"] * (len(targets) - 1)
        lines.append(f"| {s['name']} | {s['family']} | {ops} | {params} | " + " | ".join(cells) + " |")
    not_reached = [s for s in specs if s["name"] not in results]
    if skipped:
        lines += ["", "## Not built (skipped, not counted)", "",
                  "This script could not make the model or inputs that suit it (from its small config).", "",
                  "| model | family | reason |", "|---|---|---|"]
        for s in sorted(skipped, key=lambda s: s["name"]):
            lines.append(f"| {s['name']} | {s['family']} | {md(results[s['name']]['export'].get('error'))[:240]} |")
    if not_reached:
        lines += ["", f"## Not run yet ({len(not_reached)})", "", ", ".join(s["name"] for s in not_reached)]
    return "\n".join(lines) + "\n", dict(summary=summary, families=fam_rates, tried=len(tried))


def plot(stats: dict[str, Any], targets: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = ["all"] + list(stats["families"])
    vals = {t: [stats["summary"].get(t, 0)] + [stats["families"][f].get(t, 0) for f in fams[1:]] for t in targets}
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(fams) + 2), 4.5))
    w = 0.8 / max(1, len(targets))
    for i, t in enumerate(targets):
        xs = [x + (i - (len(targets) - 1) / 2) * w for x in range(len(fams))]
        bars = ax.bar(xs, [100 * v for v in vals[t]], w, label=t)
        for b, val in zip(bars, vals[t]):
            ax.annotate(f"{100 * val:.0f}", (b.get_x() + w / 2, 100 * val), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(fams)), fams, rotation=25, ha="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel("pass rate (% of architectures tried)")
    ax.set_title(f"Ember model zoo: {stats['tried']} architectures, random weights, fp32")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
