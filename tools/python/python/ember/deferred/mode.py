"""``ember.eager()``: the context manager that runs a block under the recorder."""

from __future__ import annotations

import gc
import os
import warnings

import torch
import torch.optim.optimizer as _optim

from .native import paused
from .recorder import _Recorder
from .state import EagerError

#: (trace, trace_plan) of the last `ember.eager()` block that ended cleanly in defer mode: a new
#: block starts by matching against it, so a loop that opens a block per epoch replays from its
#: first step (the match is exact, whatever block recorded the trace).
_last_trace: tuple | None = None


_TARGETS = ("cpu", "tpu", "trainium")


class eager:
    """``with ember.eager(mode="defer", target="cpu"):`` runs the block's PyTorch ops deferred
    and fused.

    ``mode``: ``"defer"`` (record, fuse, compile once, replay), ``"strict"`` (op by op through
    Ember) or ``"strict_blocking"`` (op by op, synchronized, NaN/Inf checked after every op).

    ``target``: ``"cpu"`` (regions compiled for this CPU, run in this process), ``"tpu"``
    (regions compiled to StableHLO and run on PJRT: jax's CPU client here, a TPU where
    ``$EMBER_XLA_PLATFORM`` names one) or ``"trainium"`` (its HLO, run the same way here). On
    ``tpu`` and ``trainium``, ops on ember-device tensors (``model.to("ember")``) are recorded
    too and their results stay on the device between regions; host tensors a region reads are
    uploaded (once while unchanged).
    """

    def __init__(self, mode: str = "defer", target: str = "cpu") -> None:
        if target not in _TARGETS:
            known = [repr(t) for t in _TARGETS]
            raise ValueError(f"ember.eager: unknown target {target!r} (use {', '.join(known[:-1])} or {known[-1]})")
        recorder = os.environ.get("EMBER_EAGER_RECORDER", "native")
        if recorder not in ("native", "python"):
            raise ValueError(f"EMBER_EAGER_RECORDER={recorder!r}: use 'native' or 'python'")
        self._native = None
        if target != "cpu":
            from .. import device

            if not device.register():
                raise EagerError(f"ember.eager(target={target!r}) needs the ember device, but PrivateUse1 is taken by "
                                 f"`{torch._C._get_privateuse1_backend_name()}`")
        # The native recorder records CPU tensors on the Lazy key; regions for PJRT (and the
        # strict modes) are recorded by the Python recorder.
        if mode == "defer" and recorder == "native" and target == "cpu":
            try:
                self._native = _Native()
            except EagerError as e:
                # No C++ compiler, or the build failed: the Python recorder (slower per op).
                warnings.warn(f"{e}\nember.eager: recording with the Python recorder instead", stacklevel=2)
        self._rec = None if self._native is not None else _Recorder(mode, target)

    def __enter__(self) -> "eager":
        # Recording allocates a few Python objects per op that live until the flush, so they
        # reach the oldest generation and trigger full collections over the whole heap (~150 ms
        # each with torch loaded). Objects alive at entry are moved out of the cycle collector's
        # way for the block (gc.freeze) and handed back at exit.
        self._froze = gc.get_freeze_count() == 0
        if self._froze:
            gc.freeze()
        # With oneDNN on, an LSTM runs as one `mkldnn_rnn_layer` op (and its backward reads that
        # op's opaque workspace), which Ember cannot record; without it ATen runs its composite
        # LSTM (linear, sigmoid, tanh, in-place ops on gate chunks), which it records. Recorded
        # convolutions and matmuls never reach oneDNN's backend choice, so nothing else changes.
        self._mkldnn = torch._C._get_mkldnn_enabled()
        torch._C._set_mkldnn_enabled(False)
        # The end of an optimizer step is an iteration boundary: flush there, so every training
        # step is one region and replays one plan.
        self._hook = _optim.register_optimizer_step_post_hook(lambda *a: self._flush("optimizer step"))
        if self._native is not None:
            self._native.enter()
            return self
        rec = self._rec
        if rec.mode == "defer" and rec.trace is None and not rec.queue and _last_trace is not None and rec.target == _last_trace[2]:
            rec.trace, rec.trace_plan, _ = _last_trace
            rec.rpos, rec.qbase, rec.qclean = 0, rec.next_vid, True
        rec.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        # Leaving the block is a sync point. After an exception the ops recorded before it still
        # run (as they would have in torch eager); the exception raised is the user's.
        global _last_trace
        try:
            if self._native is not None:
                self._native.exit(failed=exc[0] is not None)
            elif exc[0] is None:
                self._rec.flush("exit")
                if self._rec.trace is not None:
                    _last_trace = (self._rec.trace, self._rec.trace_plan, self._rec.target)
            else:
                try:
                    self._rec.flush("exit")
                except Exception:  # noqa: BLE001 - the original exception is the one to report
                    self._rec.queue, self._rec.pending, self._rec.scalars = [], {}, {}
                    self._rec.trace, self._rec.rpos, self._rec.qclean = None, -1, False
        finally:
            self._hook.remove()
            torch._C._set_mkldnn_enabled(self._mkldnn)
            if self._rec is not None:
                self._rec.__exit__(*exc)
            if self._froze:
                gc.unfreeze()

    def _flush(self, reason: str) -> None:
        (self._native.ops if self._native is not None else self._rec).flush(reason)

    def flush(self) -> None:
        """Runs every deferred op now (a sync point)."""
        self._flush("user")


#: Tensor methods that read memory directly (not through an ATen op): on a deferred tensor they
#: flush first. Patched while a native block is open.
_SYNC_METHODS = ("cpu", "numpy", "tolist", "__array__", "data_ptr", "untyped_storage", "__repr__", "__format__", "__dlpack__")


class _Native:
    """An `ember.eager()` block in defer mode on the native recorder (`native.cpp`)."""

    depth = 0
    saved: dict = {}

    def __init__(self) -> None:
        from . import native

        self.ops = native.ops()

    def enter(self) -> None:
        """Opens the block: the sync methods patched (for the outermost block), recording on."""
        ops = self.ops
        if _Native.depth == 0:
            for name in _SYNC_METHODS:
                orig = getattr(torch.Tensor, name)
                _Native.saved[name] = orig

                def synced(t, *a, _orig=orig, _name=name, **k):
                    # A sync point when `t` is deferred or written: everything queued runs, then
                    # the method reads real memory with recording off (printing's own ops are
                    # not recorded).
                    if ops.needs_flush(t):
                        ops.flush(_name)
                    with paused():
                        return _orig(t, *a, **k)

                setattr(torch.Tensor, name, synced)
        _Native.depth += 1
        ops.enter(int(os.environ.get("EMBER_EAGER_CAP", "4096")), bool(os.environ.get("EMBER_EAGER_LOG")))

    def exit(self, failed: bool) -> None:
        """Closes the block: the queue flushed (a flush error is raised unless the block already
        failed: its exception is the one to report), recording off, the methods restored."""
        try:
            try:
                self.ops.flush("exit")
            except Exception:
                if not failed:
                    raise
        finally:
            self.ops.leave()
            _Native.depth -= 1
            if _Native.depth == 0:
                for name, orig in _Native.saved.items():
                    setattr(torch.Tensor, name, orig)
