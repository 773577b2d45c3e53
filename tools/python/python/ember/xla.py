"""Run Ember's StableHLO on XLA through jaxlib's PJRT client.

This is the one module of the package that uses jax/jaxlib. It is pinned to jax
``0.10.2`` (:data:`JAX_VERSION`): StableHLO text is not a stable format across
jaxlib releases (versioned VHLO artifacts are not built yet), so another version
is refused with a clear error instead of failing somewhere inside XLA.

- :func:`run_stablehlo` compiles StableHLO text with the PJRT client and runs it
  on numpy arrays.
- :func:`verify` parses and verifies StableHLO text with the MLIR bindings that
  ship in jaxlib (``jaxlib.mlir``), raising :class:`ValueError` with MLIR's
  diagnostics.
- :func:`run_artifact` runs an ``ember compile --target tpu`` artifact:
  ``manifest.json`` + ``module.stablehlo.mlir`` + ``weights.bin``. The weights
  are arguments of ``@main`` like the user inputs (each at the argument index
  the manifest gives), read from ``weights.bin`` at their 64-byte aligned offsets.

Command line (``ember run`` on a tpu artifact calls this)::

    python -m ember.xla run ARTIFACT_DIR --inputs IN.npz --outputs OUT.npz
    python -m ember.xla verify module.stablehlo.mlir
    python -m ember.xla to-hlo model.stablehlo.mlir   # -> model.hlo_module.pb + model.hlo.txt

``IN.npz`` holds ``arg0, arg1, ...`` in user-input order; ``OUT.npz`` gets
``out0, out1, ...`` in user-output order (the layout ``python -m ember.export``
writes and ``ember run`` reads for cpu artifacts).

Platform: the default is the PJRT **CPU** client, which is what the tests use (there
is no TPU here). On a TPU host the same code would use the TPU PJRT client:
``--platform tpu`` (or ``EMBER_XLA_PLATFORM=tpu``) asks
``jax.extend.backend.get_backend("tpu")`` for it. That path is untested.
``dot_general`` ops carry ``precision = [HIGHEST, HIGHEST]`` so a TPU would not
round f32 matmul operands to bf16.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

JAX_VERSION = "0.10.2"

__all__ = ["JAX_VERSION", "XlaError", "run_stablehlo", "verify", "to_hlo", "run_hlo", "load_artifact", "run_artifact", "main"]


class XlaError(Exception):
    """Bad input to the runner (artifact, inputs, jax version): the message says what."""


def _jax() -> Any:
    try:
        import jax
    except ImportError as exc:
        raise XlaError(
            f"ember.xla needs jax {JAX_VERSION} (pip install 'jax=={JAX_VERSION}'); it is not importable: {exc}"
        ) from exc
    if jax.__version__ != JAX_VERSION:
        raise XlaError(
            f"ember.xla is pinned to jax {JAX_VERSION} (its StableHLO parser and PJRT API), "
            f"but jax {jax.__version__} is installed; install jax=={JAX_VERSION} and jaxlib=={JAX_VERSION}"
        )
    import jax.extend.backend  # noqa: F401  (jax.extend is not imported by `import jax`)

    return jax


def _platform(platform: str | None) -> str:
    return platform or os.environ.get("EMBER_XLA_PLATFORM") or "cpu"


def _client(platform: str | None = None) -> Any:
    jax = _jax()
    return jax.extend.backend.get_backend(_platform(platform))


def run_stablehlo(text: str, inputs: Sequence[np.ndarray], platform: str | None = None) -> list[np.ndarray]:
    """Compiles StableHLO `text` (entry `@main`) on the PJRT client and runs it once.

    `inputs` are `@main`'s arguments in order; the results come back as numpy arrays.
    """
    return _compile(text, platform)(inputs)


def _compile(text: str, platform: str | None = None) -> Any:
    jax = _jax()
    from jaxlib import xla_client as xc

    client = _client(platform)
    device = client.local_devices()[0]
    exe = client.compile_and_load(text, xc.DeviceList((device,)), xc.CompileOptions())

    def call(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        # jax canonicalizes 64-bit arrays to 32 bits unless x64 is enabled; Ember's modules take
        # int64 and float64 tensors as they are.
        with jax.enable_x64(True):
            args = [jax.device_put(np.ascontiguousarray(a), device) for a in inputs]
            outs = exe.execute(args)
            return [np.asarray(o) for o in outs]

    return call


def _mlir_context() -> Any:
    _jax()
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, stablehlo

    ctx = ir.Context()
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)  # func, arith, ... (what jax's own context loads)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    return ctx


def verify(text: str) -> None:
    """Parses and verifies StableHLO text with jaxlib's MLIR bindings; raises ValueError."""
    from jaxlib.mlir import ir

    with _mlir_context():
        try:
            module = ir.Module.parse(text)
        except ir.MLIRError as exc:
            raise ValueError(f"StableHLO does not parse: {exc}") from exc
        try:
            ok = module.operation.verify()
        except ir.MLIRError as exc:
            raise ValueError(f"StableHLO does not verify: {exc}") from exc
        if not ok:
            raise ValueError("StableHLO does not verify")


def to_hlo(text: str) -> tuple[bytes, str]:
    """StableHLO text -> (serialized XLA HloModuleProto, HLO text), by XLA's own converter.

    This is what the trainium target hands to neuronx-cc (``--framework XLA``)."""
    _jax()
    from jaxlib import xla_client as xc

    try:
        comp = xc._xla.mlir.mlir_module_to_xla_computation(text, use_tuple_args=False, return_tuple=False)
    except Exception as exc:  # jaxlib raises its own error types here
        raise ValueError(f"StableHLO -> HLO conversion failed: {exc}") from exc
    return comp.as_serialized_hlo_module_proto(), comp.as_hlo_text()


def run_hlo(proto: bytes, inputs: Sequence[np.ndarray], platform: str | None = None) -> list[np.ndarray]:
    """Runs a serialized HloModuleProto (converted back to StableHLO by XLA) on the PJRT client."""
    return run_stablehlo(_hlo_to_stablehlo_text(proto), inputs, platform)


def _hlo_to_stablehlo_text(proto: bytes) -> str:
    """XLA's HLO -> StableHLO converter returns MLIR bytecode (with `mhlo.*` attributes)."""
    _jax()
    from jaxlib import xla_client as xc
    from jaxlib.mlir import ir

    ctx = _mlir_context()
    ctx.allow_unregistered_dialects = True
    with ctx:
        return str(ir.Module.parse(xc._xla.mlir.hlo_to_stablehlo(proto)))


_DTYPES = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
}


def _np_dtype(name: str) -> np.dtype:
    if name in _DTYPES:
        return np.dtype(_DTYPES[name])
    import ml_dtypes  # ships with jax

    ml = {"bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}
    if name not in ml:
        raise XlaError(f"unknown dtype `{name}` in the manifest")
    return np.dtype(ml[name])


def _shape(dims: Sequence[str], what: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in dims)
    except ValueError:
        raise XlaError(f"{what} has symbolic dims {list(dims)}; tpu artifacts have static shapes") from None


class Artifact:
    """A loaded tpu artifact: manifest, StableHLO text and weights (numpy views of weights.bin)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.dir = Path(directory)
        path = self.dir / "manifest.json"
        try:
            self.manifest: dict[str, Any] = json.loads(path.read_text())
        except OSError as exc:
            raise XlaError(f"`{self.dir}` is not an Ember artifact: cannot read {path}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise XlaError(f"{path} is malformed: {exc}") from exc
        version = str(self.manifest.get("format_version", ""))
        if version.split(".")[0] != "1":
            raise XlaError(f"{path} has format_version {version!r}; this ember.xla reads major 1. Recompile the model.")
        target = self.manifest.get("target")
        if target not in ("tpu", "trainium"):
            raise XlaError(f"`{self.dir}` is a {target} artifact; ember.xla runs tpu and trainium artifacts (use `ember run` for cpu)")
        self.target = target
        if "module" not in self.manifest and target == "trainium":
            raise XlaError(f"{path} names no `module`; recompile the model")
        module = self.dir / self.manifest.get("module", "module.stablehlo.mlir")
        if target == "trainium":
            # The portable HLO proto itself (not the StableHLO it came from) is what runs.
            self.text = _hlo_to_stablehlo_text(module.read_bytes())
        else:
            self.text = module.read_text()
        # trainium: arguments/results whose dtype legalization changed (int64 -> i32, f64 -> f32).
        self.narrowed: dict[str, str] = dict(self.manifest.get("narrowed", {}))
        blob = np.fromfile(self.dir / "weights.bin", dtype=np.uint8) if self.manifest["weights"] else np.zeros(0, np.uint8)
        n_args = len(self.manifest["inputs"]) + len(self.manifest["weights"])
        self.args: list[np.ndarray | None] = [None] * n_args
        for w in self.manifest["weights"]:
            dt = _np_dtype(w["dtype"])
            shape = _shape(w["dims"], f"weight `{w['name']}`")
            start, n = int(w["offset"]), int(w["bytes"])
            if start + n > blob.size:
                raise XlaError(f"weights.bin is shorter than the manifest says (weight `{w['name']}`)")
            self.args[w["arg"]] = self._narrow(blob[start : start + n].view(dt).reshape(shape), w["arg"], f"weight `{w['name']}`")

    def _narrow(self, a: np.ndarray, arg: int, what: str) -> np.ndarray:
        to = self.narrowed.get(f"arg{arg}")
        if to is None:
            return a
        dt = _np_dtype(to)
        if dt.kind in "iu" and a.size:
            info = np.iinfo(dt)
            if a.min() < info.min or a.max() > info.max:
                raise XlaError(f"{what} has values outside {dt}, to which Neuron narrows {a.dtype}; recompile with --native-int64")
        return a.astype(dt)

    def widen(self, outs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Outputs in the model's dtypes (results whose dtype legalization changed, converted back)."""
        specs = self.manifest["outputs"]
        return [o.astype(_np_dtype(specs[i]["dtype"])) if f"out{i}" in self.narrowed else o for i, o in enumerate(outs)]

    def bind(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """`@main`'s arguments: the weights with `inputs` (user-input order) in their slots."""
        specs = self.manifest["inputs"]
        if len(inputs) != len(specs):
            raise XlaError(f"the model takes {len(specs)} inputs, got {len(inputs)}")
        args = list(self.args)
        for i, (spec, a) in enumerate(zip(specs, inputs)):
            a = np.asarray(a)
            dt = _np_dtype(spec["dtype"])
            shape = _shape(spec["dims"], f"input `{spec['name']}`")
            if a.dtype != dt:
                raise XlaError(f"input {i} (`{spec['name']}`) must be {dt}, got {a.dtype}")
            if a.shape != shape:
                raise XlaError(f"input {i} (`{spec['name']}`) must have shape {list(shape)}, got {list(a.shape)}")
            args[spec["arg"]] = self._narrow(a, spec["arg"], f"input {i} (`{spec['name']}`)")
        return args  # type: ignore[return-value]


def load_artifact(directory: str | os.PathLike[str]) -> Artifact:
    return Artifact(directory)


def run_artifact(directory: str | os.PathLike[str], inputs: Sequence[np.ndarray], platform: str | None = None) -> list[np.ndarray]:
    """Runs a tpu artifact on `inputs` (user-input order); returns the outputs in order."""
    art = Artifact(directory)
    return art.widen(run_stablehlo(art.text, art.bind(inputs), platform))


def _run_cli(ns: argparse.Namespace) -> None:
    art = Artifact(ns.artifact)
    try:
        npz = np.load(ns.inputs)
    except OSError as exc:
        raise XlaError(f"cannot read `{ns.inputs}`: {exc}") from exc
    inputs = []
    for i, spec in enumerate(art.manifest["inputs"]):
        key = f"arg{i}"
        if key not in npz.files:
            raise XlaError(f"`{ns.inputs}` has no array `{key}` for input {i} (`{spec['name']}`)")
        inputs.append(npz[key])
    args = art.bind(inputs)
    call = _compile(art.text, ns.platform)
    outs = call(args)
    if ns.repeat > 1:
        times = []
        for _ in range(ns.repeat):
            t = time.perf_counter()
            outs = call(args)
            times.append((time.perf_counter() - t) * 1e3)
        times.sort()
        print(
            f"median {times[len(times) // 2]:.4f} ms over {ns.repeat} runs (min {times[0]:.4f}, max {times[-1]:.4f})",
            file=sys.stderr,
        )
    outs = art.widen(outs)
    tmp = Path(ns.outputs).with_name(f".{Path(ns.outputs).name}.tmp-{os.getpid()}.npz")
    np.savez(tmp, **{f"out{i}": o for i, o in enumerate(outs)})
    os.replace(tmp, ns.outputs)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m ember.xla",
        description="Run Ember tpu artifacts (StableHLO) on XLA through jaxlib's PJRT client.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an `ember compile --target tpu` artifact")
    r.add_argument("artifact")
    r.add_argument("--inputs", required=True, help=".npz with arg0, arg1, ... in user-input order")
    r.add_argument("--outputs", required=True, help=".npz to write out0, out1, ... to")
    r.add_argument("--repeat", type=int, default=1, help="timed runs after the first; the median goes to stderr")
    r.add_argument("--platform", default=None, help="PJRT platform (default cpu, or $EMBER_XLA_PLATFORM)")
    v = sub.add_parser("verify", help="parse and verify a StableHLO file with jaxlib's MLIR bindings")
    v.add_argument("file")
    h = sub.add_parser("to-hlo", help="convert X.stablehlo.mlir files to X.hlo_module.pb + X.hlo.txt (XLA's converter)")
    h.add_argument("files", nargs="+")
    ns = p.parse_args(argv)
    try:
        if ns.cmd == "run":
            _run_cli(ns)
        elif ns.cmd == "to-hlo":
            for f in ns.files:
                proto, text = to_hlo(Path(f).read_text())
                stem = str(f).removesuffix(".mlir").removesuffix(".stablehlo")
                Path(stem + ".hlo_module.pb").write_bytes(proto)
                Path(stem + ".hlo.txt").write_text(text)
        else:
            verify(Path(ns.file).read_text())
    except (XlaError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
