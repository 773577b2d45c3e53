"""``with ember.eager():`` — DeferAndFuse eager mode on Ember's CPU target.

Ordinary PyTorch code (inference loops, training steps with backward and an optimizer) runs with
its ATen ops *recorded* instead of executed. Defer mode records with the native recorder
(``native.cpp``, loaded by ``native``; ``mode._Native`` opens its blocks): a C++ kernel on torch's
``Lazy`` dispatch key records every op without a Python frame, and live results become ordinary
CPU tensors at each flush (docs/design/eager.md). What follows describes the Python recorder,
which the strict modes use, and defer mode where no C++ compiler can build the native one
(``EMBER_EAGER_RECORDER=python``). A ``TorchDispatchMode`` sees every op; shapes and
dtypes are inferred at once on the meta device (cached per op signature), so a bad op raises at
the user's line. Results are ``DeferredTensor`` wrappers. At a flush, the queued ops become a
region that the Rust scheduler (``ember._ember.EagerPlans``, ``compiler/src/eager.rs``) compiles
once with the CPU target and replays from its plan cache; only values somebody still holds are
written out, straight into fresh torch tensors. Ops that repeat the last region op for op are
matched against it instead of recorded afresh (no meta inference, key or frame walk), and a region
that repeated it whole reruns its plan by handle; the first difference falls back to recording.

Flushes happen on sync points (``.item()``/``bool()``/``.tolist()``, ``.cpu()``/``.numpy()``,
printing, an op Ember cannot run), at the end of every ``optimizer.step()`` (the training-step
boundary; ``backward()`` itself does not flush), at a queue cap, when leaving the block, and by the
repeated-subsequence heuristic: once the queue holds the same op sequence twice in a row it is cut
after the first copy, and later queues are cut at that same point, so every loop iteration
replays one cached plan (and a loop-carried chain never grows beyond one iteration).

Python numbers that scale tensors (``lr``, ``1 - beta1``, ``alpha``) are passed as rank-0 input
buffers, so changing them does not recompile. In-place ops are recorded as their functional form;
an in-place op on a real tensor (a parameter in ``optimizer.step()``) becomes a pending write,
applied at the flush, and later reads see the pending value.

Modes: ``defer`` (default), ``strict`` (every op is its own region, compiled and run at once) and
``strict_blocking`` (``strict`` plus a NaN/Inf check after every op, raised at the op's line).
Ops Ember has no lowering or decomposition for run with torch eager, listed once in a warning.

Views of deferred tensors are recorded as values; an in-place write to a tensor that a live view
aliases (or to the view) first materializes them, the views as real views of their base, so the
write reaches every alias as in torch. Known limits: CPU tensors of the dtypes Ember models (others
run with torch eager).

Modules: ``mode`` (``ember.eager``), ``native`` (building and loading the native recorder), ``recorder`` (the dispatch mode: routing, recording),
``tensor`` (the wrapper), ``views`` (views, writes through them), ``replay`` (matching the last
region), ``flush`` (where to cut, what a flush writes back), ``region`` (running a region),
``schema`` and ``ops`` (per-op facts, queued ops), ``fast_decomps``, ``state`` (plan cache,
counters, what recording learned).
"""

from __future__ import annotations

from .mode import eager
from .state import EagerError, reset_stats, stats
from .tensor import DeferredTensor

__all__ = ["eager", "EagerError", "DeferredTensor", "stats", "reset_stats"]
