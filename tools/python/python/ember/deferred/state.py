"""Process-wide state of ``ember.eager()``: the plan cache, the counters ``stats()`` reports, and
what recording has learned about ops, shared by every block."""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any

_DEBUG = bool(os.environ.get("EMBER_EAGER_DEBUG"))


class EagerError(RuntimeError):
    """An error in a deferred op, reported with the user's line that issued it."""


def _native():
    from .. import _native as native

    return native()


_plans = None


def _plan_cache_dir() -> str:
    d = os.path.join(tempfile.gettempdir(), f"ember-eager-{os.getpid()}")
    os.makedirs(d, exist_ok=True)
    return d


def _plan_cache():
    global _plans
    if _plans is None:
        _plans = _native().EagerPlans(_plan_cache_dir())
    return _plans


#: Regions compiled for the tpu target ((target, region key) -> `backend._XlaProgram`), and their
#: counters (added to the CPU plan cache's in `stats()`).
_xla_plans: dict[tuple[str, str], Any] = {}
_xla_stats = {"hits": 0, "misses": 0, "compile_seconds": 0.0, "run_seconds": 0.0}
#: Region keys the Python recorder has compiled or run, per target, when `EMBER_EAGER_LOG` is
#: set (the nearest one explains a miss).
_keys_seen: dict[str, set[str]] = {}


#: ops_replayed: recorded ops that matched the last region's op at their place (`_replay`);
#: regions_replayed: regions run by the last region's plan handle, without conversion or key.
#: ops_aliased: `detach`/`alias` of a deferred value, answered with another wrapper of it (`_same_value`).
#: donations_copied: tpu-target runs whose program donates an input's buffer that was not free to
#: give (shared, or not the write it was compiled for), given a device copy instead.
_counters = {"flushes": 0, "ops_recorded": 0, "ops_replayed": 0, "regions_replayed": 0, "ops_eager": 0, "ops_aliased": 0, "values_written": 0,
             "donations_copied": 0}


def stats() -> dict[str, Any]:
    """Plan-cache and recorder counters since the last ``reset_stats()``, of both recorders (the
    native one records defer mode on the CPU, the Python one the strict modes and the tpu and
    trainium targets). ``flush_reasons`` and
    ``eager_ops`` count the native recorder's flushes by reason and the ops it ran with torch
    eager, by op."""
    hits, misses, compile_s, run_s, plans = _plan_cache().stats()
    x = _xla_stats
    hits, misses, compile_s, run_s, plans = hits + x["hits"], misses + x["misses"], compile_s + x["compile_seconds"], run_s + x["run_seconds"], plans + len(_xla_plans)
    out = dict(_counters, regions_interpreted=0, flush_reasons={}, eager_ops={})
    from . import native

    if native._ops is not None:
        o = native._ops
        recorded, eager, flushes, written, interpreted, nh, nm, ncs, nrs, nplans, aliased, flush_s = o.stats()
        out["ops_aliased"] += int(aliased)
        out["flush_seconds"] = flush_s
        out["ops_recorded"] += int(recorded)
        out["ops_eager"] += int(eager)
        out["flushes"] += int(flushes)
        out["values_written"] += int(written)
        out["regions_interpreted"] = int(interpreted)
        hits, misses, compile_s, run_s, plans = hits + int(nh), misses + int(nm), compile_s + ncs, run_s + nrs, plans + int(nplans)
        out["flush_reasons"] = _counts(o.flush_reasons())
        out["eager_ops"] = _counts(o.eager_ops())
    total = hits + misses
    out.update(hits=hits, misses=misses, hit_rate=(hits / total) if total else 1.0, compile_seconds=compile_s, run_seconds=run_s, plans=plans)
    return out


def _counts(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split("\t") for line in text.splitlines() if line)}


def reset_stats(clear_plans: bool = False) -> None:
    """Zeroes the recorder counters; with ``clear_plans`` also forgets every compiled plan and
    zeroes the cache counters (otherwise compare two ``stats()`` snapshots)."""
    for k in _counters:
        _counters[k] = 0
    if clear_plans:
        _plan_cache().clear()
        _xla_plans.clear()
        _keys_seen.clear()
        for k in _xla_stats:
            _xla_stats[k] = 0
    from . import native

    if native._ops is not None:
        native._ops.reset_stats(clear_plans)


#: Ops the CPU target could not lower (learned from regions), and ops already warned about.
_unsupported: dict[str, str] = {}
_warned: set[str] = set()
_lowered: dict[str, bool] = {}
#: Result metas by op signature (op, argument metas, non-tensor arguments): a pure function of
#: the key, so shared by every `ember.eager()` block (a new block's first step infers none again).
_meta_cache: dict[Any, tuple] = {}
#: `_meta_cache` entry of an op signature that runs with torch eager (no meta result Ember models).
_EAGER = object()


def _warn(target: str, file: str, line: int) -> None:
    """The one warning per op Ember cannot run, shown at the user's line that first issued it."""
    msg = f"ember.eager: `{target}` has no Ember lowering; it runs with torch eager (first at {file}:{line})"
    warnings.warn_explicit(msg, UserWarning, file, line, module="ember.eager")
