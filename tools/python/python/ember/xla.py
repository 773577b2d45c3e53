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
import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from . import dtypes
from .export import write_atomic, write_npz

JAX_VERSION = "0.10.2"

__all__ = [
    "JAX_VERSION", "XlaError", "run_stablehlo", "donating", "verify", "serialize_portable", "deserialize_portable",
    "to_hlo", "run_hlo", "load_artifact", "run_artifact", "compiled_hlo", "main",
]


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
    _join_processes(jax)
    return jax.extend.backend.get_backend(_platform(platform))


def processes() -> int:
    """How many processes run this program together: `WORLD_SIZE`, as `torchrun` sets it."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def _join_processes(jax: Any) -> None:
    """Under `torchrun` (WORLD_SIZE > 1), joins the processes into one PJRT client before the
    backend starts, with jax's distributed client: its coordinator is at `JAX_COORDINATOR_ADDRESS`,
    or `MASTER_ADDR` at port `MASTER_PORT + 1` (next to torch's own store). Every device of
    every process is then one mesh; on the CPU client the collectives between processes go
    over gloo."""
    from jax._src import distributed

    if processes() == 1 or distributed.global_state.client is not None:
        return
    address = os.environ.get("JAX_COORDINATOR_ADDRESS")
    if address is None:
        try:
            address = f"{os.environ['MASTER_ADDR']}:{int(os.environ['MASTER_PORT']) + 1}"
        except (KeyError, ValueError):
            raise XlaError("WORLD_SIZE > 1 but neither JAX_COORDINATOR_ADDRESS nor MASTER_ADDR/MASTER_PORT is set: launch with torchrun") from None
    if _platform(None) == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=address, num_processes=processes(), process_id=int(os.environ["RANK"]))


def run_stablehlo(text: str, inputs: Sequence[np.ndarray], platform: str | None = None) -> list[np.ndarray]:
    """Compiles StableHLO `text` (entry `@main`) on the PJRT client and runs it once.

    `inputs` are `@main`'s arguments in order; the results come back as numpy arrays.
    """
    return _compile(text, platform)(inputs)


def _compile(text: str, platform: str | None = None) -> "Executable":
    jax = _jax()
    from jaxlib import xla_client as xc

    client = _client(platform)
    device = client.local_devices()[0]
    return Executable(client.compile_and_load(text, xc.DeviceList((device,)), xc.CompileOptions()), jax, device=device)


class Executable:
    """A module compiled for one PJRT device, or SPMD-partitioned over a mesh of them. Called on
    host arrays it uploads them, runs and downloads the results; `put` and `run` keep arrays on
    the device between calls (the torch.compile backend keeps weights resident that way)."""

    def __init__(self, exe: Any, jax: Any, device: Any = None, mesh: Any = None,
                 arg_specs: Sequence[Sequence[str | None]] = (), out_specs: Sequence[Sequence[str | None]] = ()) -> None:
        self.exe, self.jax, self.device, self.mesh = exe, jax, device, mesh
        if mesh is not None:
            from jax.sharding import NamedSharding, PartitionSpec

            self.arg_shardings = [NamedSharding(mesh, PartitionSpec(*sp)) for sp in arg_specs]
            self.out_shardings = [NamedSharding(mesh, PartitionSpec(*sp)) for sp in out_specs]

    def put(self, a: np.ndarray, slot: int = 0) -> Any:
        """`a` uploaded as argument `slot` (split over the mesh as that argument is)."""
        # jax canonicalizes 64-bit arrays to 32 bits unless x64 is enabled; Ember's modules take
        # int64 and float64 tensors as they are.
        with self.jax.enable_x64(True):
            if self.mesh is None:
                return self.jax.device_put(np.ascontiguousarray(a), self.device)
            sharding = self.arg_shardings[slot]
            if sharding.is_fully_addressable:
                return self.jax.device_put(np.ascontiguousarray(a), sharding)
            # Other processes' devices: each process places the pieces on its own (every
            # process holds the whole value, as each runs the same program on the same data).
            a = np.asarray(a)
            return self.jax.make_array_from_callback(a.shape, sharding, lambda index: a[index])

    def place(self, dev: Any, slot: int) -> Any:
        """A device array as argument `slot` takes it: moved between devices only when its
        sharding differs (an output of another module read by this one)."""
        if self.mesh is None:
            return dev
        want = self.arg_shardings[slot]
        if dev.sharding.is_equivalent_to(want, dev.ndim):
            return dev
        if want.is_fully_addressable:
            return self.jax.device_put(dev, want)
        return self.put(self.to_host(dev), slot)

    @staticmethod
    def to_host(dev: Any) -> np.ndarray:
        """A result as a host array. A multi-process run's results are whole on every device
        (`--replicate-outputs`): a process reads its own copy."""
        if dev.is_fully_addressable:
            return np.asarray(dev)
        if not dev.is_fully_replicated:
            raise XlaError("a result split over other processes' devices cannot be read here; compile with --replicate-outputs")
        return np.asarray(dev.addressable_data(0))

    def run(self, args: Sequence[Any]) -> list[Any]:
        """The results, on the device(s), of `@main` on device arrays."""
        with self.jax.enable_x64(True):
            if self.mesh is None:
                return self.exe.execute(list(args))
            per_device = self.exe.execute_sharded(list(args)).disassemble_into_single_device_arrays()
            outs = []
            for bufs, sharding in zip(per_device, self.out_shardings):
                whole = tuple(d * (self.mesh.shape[a] if a else 1) for d, a in zip(bufs[0].shape, sharding.spec))
                outs.append(self.jax.make_array_from_single_device_arrays(whole, sharding, bufs))
            return outs

    def __call__(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [self.to_host(o) for o in self.run([self.put(a, i) for i, a in enumerate(inputs)])]


def _ensure_devices(n: int, platform: str | None) -> Any:
    """The PJRT client, with at least `n` devices over all processes. On the CPU client each
    process needs `XLA_FLAGS=--xla_force_host_platform_device_count=N/processes` before the
    backend starts: it is set here when absent, which works as long as nothing in this process
    has started it yet."""
    flag = "--xla_force_host_platform_device_count"
    if n % processes():
        raise XlaError(f"a mesh of {n} devices does not divide over {processes()} processes")
    local = n // processes()
    if _platform(platform) == "cpu" and flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}={local}".strip()
    client = _client(platform)
    have = len(client.devices())
    if have < n:
        raise XlaError(
            f"the mesh has {n} devices but the {_platform(platform)} client has {have}; "
            f"on the CPU client set XLA_FLAGS={flag}={local} before anything in the process starts the backend"
        )
    return client


def _mesh_size(mesh: Sequence[dict[str, Any]]) -> int:
    return int(np.prod([int(a["size"]) for a in mesh]))


def _compile_sharded(
    text: str,
    mesh_axes: Sequence[dict[str, Any]],
    arg_specs: Sequence[Sequence[str | None]],
    out_specs: Sequence[Sequence[str | None]],
    platform: str | None = None,
) -> Executable:
    """Compiles a Shardy-annotated module SPMD-partitioned over the mesh's devices (device ids
    row-major over the axes, as `sdy.mesh` numbers them): each argument is placed with its
    sharding, whole outputs reassembled."""
    jax = _jax()
    from jax.sharding import Mesh
    from jaxlib import xla_client as xc

    n = _mesh_size(mesh_axes)
    client = _ensure_devices(n, platform)
    devices = sorted(client.devices(), key=lambda d: d.id)[:n]
    opts = xc.CompileOptions()
    build = opts.executable_build_options
    build.num_replicas = 1
    build.num_partitions = n
    build.use_spmd_partitioning = True
    build.use_shardy_partitioner = True
    build.device_assignment = xc.DeviceAssignment.create(np.array([[d.id for d in devices]]))
    exe = client.compile_and_load(text, xc.DeviceList(tuple(devices)), opts)
    mesh = Mesh(np.array(devices).reshape([int(a["size"]) for a in mesh_axes]), tuple(a["name"] for a in mesh_axes))
    return Executable(exe, jax, mesh=mesh, arg_specs=arg_specs, out_specs=out_specs)


def compiled_hlo(directory: str | os.PathLike[str], platform: str | None = None) -> str:
    """The HLO XLA compiled for a tpu artifact (after SPMD partitioning, for a sharded one): shows
    the collectives (`all-reduce`, `all-gather`, `reduce-scatter`, ...) the partitioner inserted."""
    return "\n".join(m.to_string() for m in Artifact(directory).compile(platform).exe.hlo_modules())


def _mlir_context() -> Any:
    _jax()
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext
    from jaxlib.mlir.dialects import chlo, sdy, stablehlo

    ctx = ir.Context()
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)  # func, arith, ... (what jax's own context loads)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    sdy.register_dialect(ctx)
    return ctx


def serialize_portable(text: str) -> tuple[bytes, str]:
    """StableHLO text -> (VHLO portable artifact bytes, its StableHLO version): MLIR bytecode of the
    versioned dialect, readable by StableHLO consumers up to ~5 years newer / 2 years older
    (`chlo` ops and Shardy annotations are carried the way `jax.export` carries them). The
    target version is the pinned jaxlib's current one, so the bytes are deterministic."""
    _jax()
    from jaxlib import xla_client as xc
    from jaxlib.mlir.dialects import stablehlo

    version = stablehlo.get_current_version()
    try:
        return xc._xla.mlir.serialize_portable_artifact(text, version), version
    except Exception as exc:  # noqa: BLE001 - jaxlib raises several types
        raise ValueError(f"cannot serialize the module as a VHLO portable artifact: {exc}") from exc


def deserialize_portable(data: bytes) -> str:
    """A VHLO portable artifact back to StableHLO text (what :func:`run_stablehlo` takes)."""
    from jaxlib import xla_client as xc

    with _mlir_context():
        return str(xc._xla.mlir.deserialize_portable_artifact(data))


def donating(text: str, aliases: dict[int, int]) -> str:
    """StableHLO `text` with `@main`'s argument `a` donated to result `r` for each `a: r` in
    `aliases` (`tf.aliasing_output`, as jax marks donated arguments): XLA may write that result
    into the argument's buffer, and the argument's device array is deleted when the module runs."""
    from jaxlib.mlir import ir

    with _mlir_context():
        module = ir.Module.parse(text)
        main = next(op for op in module.body.operations
                    if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main")
        n = len(main.regions[0].blocks[0].arguments)
        old = list(main.attributes["arg_attrs"]) if "arg_attrs" in main.attributes else [ir.DictAttr.get({})] * n
        i32 = ir.IntegerType.get_signless(32)
        attrs = []
        for a, d in enumerate(old):
            d = ir.DictAttr(d)
            entries = {d[i].name: d[i].attr for i in range(len(d))}
            if a in aliases:
                entries["tf.aliasing_output"] = ir.IntegerAttr.get(i32, aliases[a])
            attrs.append(ir.DictAttr.get(entries))
        main.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
        return str(module)


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


def _np_dtype(name: str) -> np.dtype:
    if name not in dtypes.TABLE:
        raise XlaError(f"unknown dtype `{name}` in the manifest")
    np_name = dtypes.TABLE[name][0]
    if np_name not in dtypes.ML_DTYPES:
        return np.dtype(np_name)
    import ml_dtypes  # ships with jax

    return np.dtype(getattr(ml_dtypes, np_name))


def as_dtype(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    """`a` seen as `dt` when it holds `dt`'s bit patterns as a void of its size: how `np.savez`
    stores ml_dtypes arrays (bfloat16 as `<V2`), which `np.load` gives back."""
    if a.dtype.type is np.void and a.dtype.names is None and a.dtype.itemsize == dt.itemsize and dt.type is not np.void:
        return a.view(dt)
    return a


def _eval_dim(dim: str, env: dict[str, int]) -> int:
    """A manifest dim (`64`, `s0`, `16*s0`, `Max(s0, 2)`) at the given symbol values."""
    try:
        return int(eval(dim, {"__builtins__": {}, "Max": max, "Min": min}, dict(env)))  # noqa: S307 (Ember's own dim syntax)
    except Exception as exc:
        raise XlaError(f"cannot evaluate dim `{dim}` with {env}: {exc}") from None


def _shape(dims: Sequence[str], what: str) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in dims)
    except ValueError:
        raise XlaError(f"{what} has symbolic dims {list(dims)}; tpu artifacts have static shapes") from None


def _verify_files(directory: Path, manifest: dict[str, Any]) -> None:
    """Checks every file the manifest lists (`files`: size and SHA-256, written by the compiler;
    the same check as the Rust loader's, `ember_targets::checksum`) before any is read. 2.0
    artifacts predate the list."""
    files = manifest.get("files")
    if not files:
        if str(manifest.get("format_version", "")) != "2.0":
            raise XlaError(f"`{directory}`: manifest.json lists no file checksums (`files`); the artifact is damaged: recompile the model")
        return
    for name, want in sorted(files.items()):
        if name.startswith("/") or any(c in ("", "..") for c in name.split("/")):
            raise XlaError(f"`{directory}`: manifest.json lists a file outside the artifact: `{name}`")
        damaged = f"`{directory}`: `{name}` {{}}; the artifact is damaged: recompile the model"
        try:
            with open(directory / name, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size != int(want["bytes"]):
                    how = "is truncated" if size < int(want["bytes"]) else "is longer than compiled"
                    raise XlaError(damaged.format(f"{how}: {size} bytes, manifest.json says {want['bytes']}"))
                h = hashlib.sha256()
                while chunk := f.read(1 << 20):
                    h.update(chunk)
        except OSError as exc:
            raise XlaError(damaged.format(f"cannot be read ({exc.strerror})")) from exc
        if h.hexdigest() != want["sha256"]:
            raise XlaError(damaged.format("does not match its SHA-256 in manifest.json (it was edited after compile)"))


class Artifact:
    """A loaded tpu artifact: manifest, StableHLO text and weights (numpy views of weights.bin)."""

    def __init__(self, directory: str | os.PathLike[str], portable: bool = False) -> None:
        """`portable`: read every module from its VHLO portable artifact (`--portable` compiles)
        instead of the StableHLO text."""
        self.dir = Path(directory)
        path = self.dir / "manifest.json"
        try:
            self.manifest: dict[str, Any] = json.loads(path.read_text())
        except OSError as exc:
            raise XlaError(f"`{self.dir}` is not an Ember artifact: cannot read {path}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise XlaError(f"{path} is malformed: {exc}") from exc
        version = str(self.manifest.get("format_version", ""))
        if version.split(".")[0] != "2":
            raise XlaError(f"{path} has format_version {version!r}; this ember.xla reads major 2. Recompile the model.")
        target = self.manifest.get("target")
        if target not in ("tpu", "trainium"):
            raise XlaError(f"`{self.dir}` is a {target} artifact; ember.xla runs tpu and trainium artifacts (use `ember run` for cpu)")
        self.target = target
        self.portable = portable
        _verify_files(self.dir, self.manifest)
        if portable and not self.manifest.get("vhlo"):
            raise XlaError(f"`{self.dir}` has no VHLO portable artifact: compile it with `ember compile --target tpu --portable`")
        if "module" not in self.manifest and target == "trainium":
            raise XlaError(f"{path} names no `module`; recompile the model")
        self.text = self.module_text(self.manifest.get("module", "module.stablehlo.mlir"))
        # trainium: arguments/results whose dtype legalization changed (int64 -> i32, f64 -> f32).
        self.narrowed: dict[str, str] = dict(self.manifest.get("narrowed", {}))
        blob = np.fromfile(self.dir / "weights.bin", dtype=np.uint8) if self.manifest["weights"] else np.zeros(0, np.uint8)
        #: Padded buckets: the `@main` argument that gets each symbol's true size (for the masks
        #: that keep the padding out of reductions over its dim).
        self.sizes: dict[str, int] = dict(self.manifest.get("sizes", {}))
        n_args = len(self.manifest["inputs"]) + len(self.manifest["weights"]) + len(self.sizes)
        self.args: list[np.ndarray | None] = [None] * n_args
        for w in self.manifest["weights"]:
            dt = _np_dtype(w["dtype"])
            shape = _shape(w["dims"], f"weight `{w['name']}`")
            start, n = int(w["offset"]), int(w["bytes"])
            if start + n > blob.size:
                raise XlaError(f"weights.bin is shorter than the manifest says (weight `{w['name']}`)")
            self.args[w["arg"]] = self._narrow(blob[start : start + n].view(dt).reshape(shape), w["arg"], f"weight `{w['name']}`")
        self.mesh: list[dict[str, Any]] | None = self.manifest.get("mesh")
        self.buckets: list[dict[str, Any]] | None = self.manifest.get("buckets")
        self._compiled: dict[str, Any] = {}

    def module_text(self, name: str) -> str:
        """StableHLO text of module file `name`, from its VHLO artifact when `portable`; for a
        trainium artifact, converted from the portable HLO proto (the file neuronx-cc gets, not
        the StableHLO it came from)."""
        if self.target == "trainium":
            return _hlo_to_stablehlo_text((self.dir / name).read_bytes())
        if self.portable:
            return deserialize_portable((self.dir / self.manifest["vhlo"]["files"][name]).read_bytes())
        return (self.dir / name).read_text()

    def arg_specs(self) -> list[list[str | None]]:
        """Per `@main` argument, the mesh axis of each dim (sharded artifacts)."""
        specs: list[list[str | None]] = [[] for _ in self.args]
        for x in self.manifest["inputs"] + self.manifest["weights"]:
            specs[x["arg"]] = x.get("sharding") or [None] * len(x["dims"])
        return specs

    def out_specs(self) -> list[list[str | None]]:
        return [o.get("sharding") or [None] * len(o["dims"]) for o in self.manifest["outputs"]]

    def compile(self, platform: str | None = None) -> Any:
        """`call(args)`: the compiled module (SPMD-partitioned over the mesh when sharded)."""
        if self.mesh:
            return _compile_sharded(self.text, self.mesh, self.arg_specs(), self.out_specs(), platform)
        return _compile(self.text, platform)

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
        """`@main`'s arguments: the weights with `inputs` (user-input order) in their slots
        (static-shape artifacts; see :meth:`prepare` for bucketed ones)."""
        return self._bind(inputs, None)

    def _bind(self, inputs: Sequence[np.ndarray], env: dict[str, int] | None) -> list[np.ndarray]:
        specs = self.manifest["inputs"]
        if len(inputs) != len(specs):
            raise XlaError(f"the model takes {len(specs)} inputs, got {len(inputs)}")
        args = list(self.args)
        for i, a in enumerate(inputs):
            slot, args[slot] = self.bind_input(i, a, env)
        return args  # type: ignore[return-value]

    def input_type(self, i: int) -> tuple[int, tuple[int, ...], np.dtype]:
        """(`@main` argument, shape, dtype) user input `i` takes on the device (static shapes)."""
        spec = self.manifest["inputs"][i]
        dt = _np_dtype(self.narrowed.get(f"arg{spec['arg']}", spec["dtype"]))
        return spec["arg"], _shape(spec["dims"], f"input `{spec['name']}`"), dt

    def bind_input(self, i: int, a: np.ndarray, env: dict[str, int] | None = None) -> tuple[int, np.ndarray]:
        """(`@main` argument, array) for user input `i`: checked against its dtype and shape (padded
        to the bucket's with `env`), narrowed as the target legalized it."""
        spec = self.manifest["inputs"][i]
        dt = _np_dtype(spec["dtype"])
        a = as_dtype(np.asarray(a), dt)
        if a.dtype != dt:
            raise XlaError(f"input {i} (`{spec['name']}`) must be {dt}, got {a.dtype}")
        if env is None:
            shape = _shape(spec["dims"], f"input `{spec['name']}`")
            if a.shape != shape:
                raise XlaError(f"input {i} (`{spec['name']}`) must have shape {list(shape)}, got {list(a.shape)}")
        else:
            # Zeros at the end of every symbolic dim, up to the bucket's size.
            shape = tuple(_eval_dim(d, env) for d in spec["dims"])
            a = np.pad(a, [(0, t - n) for n, t in zip(a.shape, shape)])
        return spec["arg"], self._narrow(a, spec["arg"], f"input {i} (`{spec['name']}`)")

    def bind_device_input(self, i: int, a: Any, env: dict[str, int] | None = None) -> tuple[int, Any]:
        """`bind_input` for an array already on the device: padded and narrowed there."""
        spec = self.manifest["inputs"][i]
        dt = _np_dtype(spec["dtype"])
        if a.dtype != dt:
            raise XlaError(f"input {i} (`{spec['name']}`) must be {dt}, got {a.dtype}")
        jax = _jax()
        shape = _shape(spec["dims"], f"input `{spec['name']}`") if env is None else tuple(_eval_dim(d, env) for d in spec["dims"])
        if env is None and tuple(a.shape) != shape:
            raise XlaError(f"input {i} (`{spec['name']}`) must have shape {list(shape)}, got {list(a.shape)}")
        with jax.enable_x64(True):
            if env is not None:
                a = jax.numpy.pad(a, [(0, t - n) for n, t in zip(a.shape, shape)])
            return spec["arg"], self._narrow(a, spec["arg"], f"input {i} (`{spec['name']}`)")

    def symbols(self, inputs: Sequence[np.ndarray]) -> dict[str, int]:
        """Symbol values read from the inputs' shapes, checked against every input dim."""
        specs = self.manifest["inputs"]
        if len(inputs) != len(specs):
            raise XlaError(f"the model takes {len(specs)} inputs, got {len(inputs)}")
        names = set(self.buckets[-1]["symbols"]) if self.buckets else set()
        env: dict[str, int] = {}
        for spec, a in zip(specs, inputs):
            if np.ndim(a) != len(spec["dims"]):
                raise XlaError(f"input `{spec['name']}` must have {len(spec['dims'])} dims {spec['dims']}, got shape {list(np.shape(a))}")
            for d, n in zip(spec["dims"], np.shape(a)):
                if d in names:
                    env.setdefault(d, int(n))
        for spec, a in zip(specs, inputs):
            want = [_eval_dim(d, env) for d in spec["dims"]]
            if list(np.shape(a)) != want:
                raise XlaError(f"input `{spec['name']}` has shape {list(np.shape(a))}, but its dims {spec['dims']} with {env} are {want}")
        top = self.buckets[-1]["symbols"] if self.buckets else {}
        for k, v in env.items():
            if not 1 <= v <= top[k]:
                raise XlaError(f"symbol `{k}` = {v} is outside the compiled range [1, {top[k]}] (the export's bound)")
        return env

    def prepare(self, inputs: Sequence[np.ndarray], platform: str | None = None) -> tuple[Any, list[np.ndarray], Any]:
        """(call, args, finish): `finish(call(args))` are the outputs for `inputs`. Bucketed
        artifacts run the smallest bucket that fits (inputs padded, outputs sliced back)."""
        if not self.buckets:
            return self.compile(platform), self.bind(inputs), lambda outs: outs
        env = self.symbols(inputs)

        def padded_size(b: dict[str, Any]) -> int:
            return sum(int(np.prod([_eval_dim(d, b["symbols"]) for d in s["dims"]])) for s in self.manifest["inputs"])

        fits = [b for b in self.buckets if all(env[k] <= v for k, v in b["symbols"].items())]
        bucket = min(fits, key=padded_size)
        if bucket["module"] not in self._compiled:
            self._compiled[bucket["module"]] = _compile(self.module_text(bucket["module"]), platform)
        args = self._bind(inputs, bucket["symbols"])
        for arg, a in self.size_args(env):
            args[arg] = a
        return self._compiled[bucket["module"]], args, lambda outs: self.unpad(outs, env)

    def size_args(self, env: dict[str, int]) -> list[tuple[int, np.ndarray]]:
        """(`@main` argument, array) of each symbol's true size in a padded bucket."""
        return [(arg, self._narrow(np.asarray(env[sym], np.int64), arg, f"the size of `{sym}`")) for sym, arg in self.sizes.items()]

    def unpad(self, outs: Sequence[Any], env: dict[str, int]) -> list[Any]:
        """A padded bucket's outputs sliced back to their sizes at the symbol values `env`."""
        shapes = [[_eval_dim(d, env) for d in o["dims"]] for o in self.manifest["outputs"]]
        return [o[tuple(slice(0, n) for n in shape)] for o, shape in zip(outs, shapes)]


def load_artifact(directory: str | os.PathLike[str], portable: bool = False) -> Artifact:
    return Artifact(directory, portable)


def run_artifact(
    directory: str | os.PathLike[str], inputs: Sequence[np.ndarray], platform: str | None = None, portable: bool = False
) -> list[np.ndarray]:
    """Runs a tpu artifact on `inputs` (user-input order); returns the outputs in order."""
    art = Artifact(directory, portable)
    specs = art.manifest["inputs"]
    if len(inputs) != len(specs):
        raise XlaError(f"the model takes {len(specs)} inputs, got {len(inputs)}")
    call, args, finish = art.prepare([_real_view(i, s, a) for i, (s, a) in enumerate(zip(specs, inputs))], platform)
    return [_complex_view(s, o) for s, o in zip(art.manifest["outputs"], art.widen(finish(call(args))))]


def _real_view(i: int, spec: dict, a: np.ndarray) -> np.ndarray:
    """User input `i` as the artifact takes it: a complex one (manifest `complex`) as its real
    view, (real, imaginary) pairs in a trailing dim of 2 (the same bytes)."""
    a = np.asarray(a)
    if bool(spec.get("complex")) != np.iscomplexobj(a):
        want, got = ("complex", "real") if spec.get("complex") else ("real", "complex")
        raise XlaError(f"input {i} (`{spec['name']}`) is {want}, got a {got} array ({a.dtype})")
    if not spec.get("complex"):
        return a
    return np.ascontiguousarray(a).view(a.real.dtype).reshape(*a.shape, 2)


def _complex_view(spec: dict, o: np.ndarray) -> np.ndarray:
    """An output as the model returns it: a complex one from its real view."""
    if not spec.get("complex"):
        return o
    o = np.ascontiguousarray(o)
    return o.view(np.complex64 if o.dtype == np.float32 else np.complex128).reshape(o.shape[:-1])


# The seed of a graph's random ops when the inputs do not give it: torch's default CPU
# generator's, as `ember run` on the cpu target (compiler/src/artifact.rs, DEFAULT_SEED).
DEFAULT_SEED = 67280421310721


def _run_cli(ns: argparse.Namespace) -> None:
    art = Artifact(ns.artifact, ns.portable)
    try:
        npz = np.load(ns.inputs)
    except OSError as exc:
        raise XlaError(f"cannot read `{ns.inputs}`: {exc}") from exc
    inputs = []
    for i, spec in enumerate(art.manifest["inputs"]):
        key = f"arg{i}"
        if key not in npz.files and spec.get("rng_seed"):
            print(f"the random ops are seeded with torch's default seed {DEFAULT_SEED}: give `{key}` (int64) to choose", file=sys.stderr)
            inputs.append(np.array(DEFAULT_SEED, dtype=np.int64))
            continue
        if key not in npz.files:
            raise XlaError(f"`{ns.inputs}` has no array `{key}` for input {i} (`{spec['name']}`)")
        inputs.append(_real_view(i, spec, npz[key]))
    call, args, finish = art.prepare(inputs, ns.platform)
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
    outs = [_complex_view(s, o) for s, o in zip(art.manifest["outputs"], art.widen(finish(outs)))]
    write_npz(ns.outputs, dict(zip(output_array_names(art.manifest["outputs"]), outs)))


def output_array_names(outputs: list[dict]) -> list[str]:
    """The .npz name of each output, as `ember run` writes them: user outputs out0, out1, ...;
    a functionalized in-place update of an input or buffer `mutated_input.NAME` /
    `mutated_buffer.NAME` (manifest `mutates`: "input NAME" / "buffer NAME")."""
    names, k = [], 0
    for o in outputs:
        if o.get("mutates"):
            kind, name = o["mutates"].split(" ", 1)
            names.append(f"mutated_{kind}.{name}")
        else:
            names.append(f"out{k}")
            k += 1
    return names


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
    r.add_argument("--portable", action="store_true", help="run the VHLO portable artifacts instead of the StableHLO text")
    pa = sub.add_parser("portable", help="serialize a StableHLO file as a VHLO portable artifact; prints its version")
    pa.add_argument("file")
    pa.add_argument("output")
    v = sub.add_parser("verify", help="parse and verify a StableHLO file with jaxlib's MLIR bindings")
    v.add_argument("file")
    h = sub.add_parser("hlo", help="print the HLO XLA compiles for an artifact (after SPMD partitioning)")
    h.add_argument("artifact")
    h.add_argument("--platform", default=None, help="PJRT platform (default cpu, or $EMBER_XLA_PLATFORM)")
    h = sub.add_parser("to-hlo", help="convert X.stablehlo.mlir files to X.hlo_module.pb + X.hlo.txt (XLA's converter)")
    h.add_argument("files", nargs="+")
    ns = p.parse_args(argv)
    try:
        if ns.cmd == "run":
            _run_cli(ns)
        elif ns.cmd == "portable":
            data, version = serialize_portable(Path(ns.file).read_text())
            write_atomic(ns.output, data)
            print(version)
        elif ns.cmd == "hlo":
            print(compiled_hlo(ns.artifact, ns.platform))
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
