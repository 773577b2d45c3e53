"""A flushed region run by the Rust scheduler, or on PJRT for `target="tpu"` (or op by op with
torch eager when it holds an op Ember cannot compile)."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time

import torch

from ..dtypes import by_torch
from .ops import _Op, _Ref, _expand
from .schema import _schema
from .state import _DEBUG, EagerError, _counters, _keys_seen, _lowered, _plan_cache, _plan_cache_dir, _warn, _xla_plans, _xla_stats

_DTYPES = by_torch()


@functools.lru_cache(maxsize=4096)
def _device_scalar(dtype: torch.dtype, value: str) -> torch.Tensor:
    """A Python number a region reads (a learning rate, a bias correction) as an ember tensor,
    uploaded once per value (`value`: `float.hex`, which tells -0.0 and NaN apart)."""
    from .. import device

    return device.wrap(device._put(torch.scalar_tensor(float.fromhex(value), dtype=dtype)), dtype)


class _Region:
    """The recorder's region runner (a mixin of `_Recorder`)."""

    def _native(self, ops: list[_Op]):
        """The scheduler's plain-data form of `ops`: value ids made region-relative (inputs first)."""
        rel: dict[int, int] = {}
        inputs: list[int] = []
        produced = {v for op in ops for v in op.outs}
        for op in ops:
            for v in op.ins:
                if v not in produced and v not in rel:
                    rel[v] = len(inputs)
                    inputs.append(v)
        for op in ops:
            for v in op.outs:
                rel[v] = len(rel)
        native_ops = []
        for op in ops:
            _expand(op)
            args = []
            for a in op.spec:
                tag = a[1]
                if tag == "t":
                    args.append((a[0], "t", rel[a[2]]))
                elif tag == "ts":
                    args.append((a[0], "ts", [rel[x] for x in a[2]]))
                elif tag == "ots":
                    args.append((a[0], "ots", [None if x is None else rel[x] for x in a[2]]))
                else:
                    args.append(a)
            native_ops.append((op.target, args, op.native_outs, op.file, op.line))
        return native_ops, inputs, rel

    def _lowers(self, op: _Op) -> bool:
        """Whether the CPU target lowers `op`'s kind (asked once per op kind, import + lowering only)."""
        ok = _lowered.get(op.target)
        if ok is None:
            native_ops, inputs, _ = self._native([op])
            in_meta = [(list(self.metas[v][0]), _DTYPES[self.metas[v][2]]) for v in inputs]
            try:
                ok = not _plan_cache().unlowered(native_ops, in_meta)
            except ValueError:
                ok = False
            _lowered[op.target] = ok
            if not ok:
                self.unsupported[op.target] = f"{op.file}:{op.line}"
        return ok

    def _run(self, ops: list[_Op], outputs: list[int], plan: tuple | None = None) -> dict[int, torch.Tensor]:
        """Runs `ops` as one region; returns the values of `outputs`. `plan`: the trace's plan
        (`trace_plan`), when `ops` are the trace's ops again."""
        if not ops:
            return {}
        if self.xla:
            return self._run_xla(ops, outputs, plan)
        ext, scalars = self.ext, self.scalars
        if plan is not None and all(self.qbase + d in ext or self.qbase + d in scalars for d in plan[1]):
            _, in_rel, handle = plan
            # Python-number inputs packed into one buffer per dtype, read in place.
            packed: dict[int, tuple] = {}
            bufs = []
            by_dtype: dict = {}
            for v, (x, dtype) in scalars.items():
                by_dtype.setdefault(dtype, []).append((v, x))
            for dtype, items in by_dtype.items():
                buf = torch.tensor([x for _, x in items], dtype=dtype)
                bufs.append(buf)
                p, es = buf.data_ptr(), buf.element_size()
                for i, (v, _) in enumerate(items):
                    packed[v] = (p + i * es, es)
            in_ptrs = []
            for d in in_rel:
                t = ext.get(self.qbase + d)
                in_ptrs.append(packed[self.qbase + d] if t is None else (t.data_ptr(), t.numel() * t.element_size()))
            out_tensors = [torch.empty(self.metas[v][0], dtype=self.metas[v][2]) for v in outputs]
            try:
                ran = _plan_cache().run_plan(handle, in_ptrs, [(t.data_ptr(), t.numel() * t.element_size()) for t in out_tensors])
            except ValueError as exc:
                raise EagerError(f"ember.eager: a deferred region failed: {exc}") from None
            if ran:
                _counters["regions_replayed"] += 1
                self.last_run = plan[1:]
                if self.log:
                    self._explain(None, len(ops), len(in_rel), len(outputs))
                return dict(zip(outputs, out_tensors))
        self._lift_scalars()
        native_ops, inputs, rel = self._native(ops)
        in_tensors = [self.ext[v] for v in inputs]
        in_meta = [(list(t.shape), _DTYPES[t.dtype]) for t in in_tensors]
        in_ptrs = [(t.data_ptr(), t.numel() * t.element_size()) for t in in_tensors]
        out_tensors = [torch.empty(self.metas[v][0], dtype=self.metas[v][2]) for v in outputs]
        out_ptrs = [(t.data_ptr(), t.numel() * t.element_size()) for t in out_tensors]
        if self.log:
            self._explain(_plan_cache().key(native_ops, in_meta, [rel[v] for v in outputs]), len(ops), len(inputs), len(outputs))
        try:
            hit, missing, handle = _plan_cache().run(native_ops, in_meta, [rel[v] for v in outputs], in_ptrs, out_ptrs)
        except ValueError as exc:
            raise EagerError(f"ember.eager: a deferred region failed: {exc}") from None
        if missing:
            return self._unlowered(ops, outputs, missing)
        self.last_run = (tuple(v - self.qbase for v in inputs), handle)
        return self._checked(ops, dict(zip(outputs, out_tensors)))

    def _explain(self, key: str | None, n_ops: int, n_in: int, n_out: int) -> None:
        """`EMBER_EAGER_LOG=1`: the flush, its reason and user's line, and whether its region's
        plan is cached; on a miss, where its key first differs from the nearest cached one's (the
        longest common prefix), as the native recorder says it. `key` None: a rerun by handle."""
        reason, (file, line) = self.log_at
        seen = _keys_seen.setdefault(self.target, set())
        if key is None or key in seen:
            what = "plan cache hit"
        elif not seen:
            what = "miss (no region cached yet)"
        else:
            def common(k: str) -> int:
                return len(os.path.commonprefix([k, key]))

            nearest = max(sorted(seen), key=common)
            at = common(nearest)
            bar = key.index("|")
            if at <= bar:
                what = "miss; the nearest cached region differs in its inputs (shapes or dtypes)"
            else:
                i = key.count("\n", bar + 1, at)

                def op(k: str) -> str | None:
                    lines = k[k.index("|") + 1 :].split("\n")
                    return lines[i].split("(")[0] if i < len(lines) - 1 else None

                here, there = op(key), op(nearest)
                what = (f"miss; the nearest cached region differs at op {i} (`{here or 'the outputs'}` here, "
                        f"`{there or 'the outputs'}` there{': its arguments or their shapes' if here and here == there else ''})")
        if key is not None:
            seen.add(key)
        print(f"ember.eager: flush ({reason}) at {file}:{line}: {n_ops} ops, {n_in} inputs, {n_out} outputs, "
              f"{len(self.pending)} pending writes; {what}", file=sys.stderr)

    def _donations(self, inputs: list[int], outputs: list[int]) -> dict[int, int]:
        """Input position -> output position for each pending in-place write of a whole device
        tensor the region reads (a parameter, an optimizer moment): the result may take the old
        value's buffer, which nothing reads after the region (XLA's buffer donation, which
        TorchTPU's deferred mode does not do)."""
        from .. import device

        in_pos = {v: i for i, v in enumerate(inputs)}
        out_pos = {v: j for j, v in enumerate(outputs)}
        donate: dict[int, int] = {}
        for t, _, v in self.pending.values():
            i, j = in_pos.get(self.ext_of.get(id(t), -1)), out_pos.get(v)
            if i is None or j is None or j in donate.values() or self.ext[inputs[i]] is not t:
                continue
            shape, _, dtype = self.metas[v]
            if device.is_ember(t) and device._whole(t) and tuple(t.shape) == tuple(shape) and t.dtype == dtype:
                donate[i] = j
        return donate

    def _donatable(self, donate: dict[int, int], inputs: list[int], ins: list[torch.Tensor], outputs: list[int]) -> None:
        """Checks a cached program's donations against this run (`_donations` of this run, each
        donated array passed once and held by nothing else: a root sharing it after a copy, say);
        where one does not hold, the program consumes a device copy of the input instead."""
        from .. import device

        now = self._donations(inputs, outputs)
        # Inputs passed as their root's own array (`device.array`; a view is gathered into a new
        # one before the run): the donated array must not be another argument too.
        passed: dict[int, int] = {}
        for t in ins:
            if device.is_ember(t) and device._whole(t):
                a = device._state(t).array
                if a is not None and tuple(a.shape) == tuple(t.shape):
                    passed[id(a)] = passed.get(id(a), 0) + 1
        for i, j in donate.items():
            t = ins[i]
            ok = now.get(i) == j
            if ok:
                arr = device._state(t).array
                # The root's reference, `arr` and getrefcount's own argument.
                ok = arr is not None and tuple(arr.shape) == tuple(t.shape) and passed.get(id(arr)) == 1 and sys.getrefcount(arr) <= 3
                del arr
            if not ok:
                jax = device._jax()
                with jax.enable_x64(True):
                    ins[i] = device.wrap(jax.numpy.array(device.array(t), copy=True), t.dtype)
                _counters["donations_copied"] += 1

    def _unlowered(self, ops: list[_Op], outputs: list[int], missing: list[str]) -> dict[int, torch.Tensor]:
        if _DEBUG:
            print(f"ember.eager: region of {len(ops)} ops has no lowering for {missing}; running it with torch eager", file=sys.stderr)
        # Learned once: later records decompose these ops, or run them with torch eager.
        for op in ops:
            t = op.target.removesuffix(".default")
            if t in missing and op.target not in self.unsupported:
                self.unsupported[op.target] = f"{op.file}:{op.line}"
                if _schema(op.func).decomp is None:
                    self._warn_unsupported(op)
        return self._interpret(ops, outputs)

    def _checked(self, ops: list[_Op], results: dict[int, torch.Tensor]) -> dict[int, torch.Tensor]:
        if self.mode == "strict_blocking":
            for v, t in results.items():
                if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                    op = next(o for o in ops if v in o.outs)
                    raise EagerError(f"{op.file}:{op.line}: `{op.target}` produced NaN or Inf (ember.eager strict_blocking)")
        return results

    def _run_xla(self, ops: list[_Op], outputs: list[int], plan: tuple | None) -> dict[int, torch.Tensor]:
        """Runs `ops` as one region of the tpu target on PJRT: inputs on the ember device are read
        where they are (host ones uploaded), results on it stay there (`dev_vids`), the others
        come back to the host. Programs are cached by region key, so the key is the plan handle."""
        from ..backend import _XlaProgram
        from ..xla import XlaError

        for v, (x, dtype) in self.scalars.items():
            self.ext[v] = _device_scalar(dtype, float(x).hex())
        self.scalars = {}
        if plan is not None and all(self.qbase + d in self.ext for d in plan[1]):
            inputs = [self.qbase + d for d in plan[1]]
            key = plan[2]
            _xla_stats["hits"] += 1
            _counters["regions_replayed"] += 1
            if self.log:
                self._explain(None, len(ops), len(inputs), len(outputs))
        else:
            native_ops, inputs, rel = self._native(ops)
            in_meta = [(list(self.ext[v].shape), _DTYPES[self.ext[v].dtype]) for v in inputs]
            out_rel = [rel[v] for v in outputs]
            donate = self._donations(inputs, outputs)
            key = (self.target, _plan_cache().key(native_ops, in_meta, out_rel), tuple(sorted(donate.items())))
            if self.log:
                self._explain(key[1], len(ops), len(inputs), len(outputs))
            if key not in _xla_plans:
                t0 = time.perf_counter()
                d = os.path.join(_plan_cache_dir(), f"region-{len(_xla_plans)}-{time.monotonic_ns()}")
                try:
                    missing = _plan_cache().write(native_ops, in_meta, out_rel, self.target, d)
                    if missing:
                        return self._unlowered(ops, outputs, missing)
                    _xla_plans[key] = _XlaProgram(d, donate)
                except (ValueError, RuntimeError, XlaError) as exc:  # the compiler's, XLA's
                    raise EagerError(f"ember.eager: a deferred region failed to compile for {self.target}: {exc}") from None
                finally:
                    shutil.rmtree(d, ignore_errors=True)
                _xla_stats["misses"] += 1
                _xla_stats["compile_seconds"] += time.perf_counter() - t0
            else:
                _xla_stats["hits"] += 1
        prog = _xla_plans[key]
        ins = [self.ext[v] for v in inputs]
        if prog.donate:
            self._donatable(prog.donate, inputs, ins, outputs)
        t0 = time.perf_counter()
        outs = prog.run(ins, [v in self.dev_vids for v in outputs])
        _xla_stats["run_seconds"] += time.perf_counter() - t0
        self.last_run = (tuple(v - self.qbase for v in inputs), key)
        return self._checked(ops, dict(zip(outputs, outs)))

    def _warn_unsupported(self, op: _Op) -> None:
        if op.target not in self.warned:
            self.warned.add(op.target)
            _warn(op.target, op.file, op.line)

    def _interpret(self, ops: list[_Op], outputs: list[int]) -> dict[int, torch.Tensor]:
        """Runs a region op by op with torch eager (a region holding an op Ember cannot compile)."""
        env: dict[int, torch.Tensor] = dict(self.ext)

        def sub(x):
            if isinstance(x, _Ref):
                return env[x.vid]
            if isinstance(x, list):
                return [sub(y) for y in x]
            return x

        for op in ops:
            _expand(op)
            out = op.func(*[sub(p) for p in op.pos], **{k: sub(v) for k, v in op.kw.items()})
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for v, t in zip(op.outs, outs):
                env[v] = t
        return {v: env[v].contiguous() for v in outputs}
