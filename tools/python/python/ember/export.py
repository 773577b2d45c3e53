"""Export a PyTorch model to a ``.pt2`` archive plus reference inputs/outputs.

Usage::

    python -m ember.export MODEL -o OUT.pt2 [--npz OUT.npz] [--seed N] [--dynamic-batch]

``MODEL`` is either the name of a built-in model (see ``ember.models``) or
``module:factory`` / ``path/to/file.py:factory``, where ``factory()`` returns
``(nn.Module, example_inputs)`` or ``(nn.Module, example_inputs, dynamic_shapes)``.

The model is exported with ``torch.export.export(model.eval(), inputs,
dynamic_shapes=...)``, decomposed with ``.run_decompositions()`` (core ATen) and
saved with ``torch.export.save``.  The ``.npz`` file holds the flattened user
inputs as ``arg0, arg1, ...`` and the eager reference outputs (the original
module in eval mode under ``torch.no_grad()``) as ``out0, out1, ...``.
"""

from __future__ import annotations

import argparse
import os
import re
import importlib
import importlib.util
import io
import random
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from . import dtypes

PROG = "python -m ember.export"

EXIT_OK = 0
EXIT_EXPORT_FAILED = 1
EXIT_BAD_SPEC = 2

# Fixed timestamp for .npz members so the files are byte-reproducible.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

# Node metadata normalized before saving unless keep_debug_meta is set:
#  - "from_node" is dropped: provenance records with Python object ids ("graph_id")
#    that differ on every run and make the .pt2 non-reproducible;
#  - "stack_trace" is kept (Ember's errors point at the user's line with it) but its
#    paths are made machine-independent: relative to the working directory when
#    under it, relative to site-packages for installed libraries.
_DROPPED_META_KEYS = ("from_node",)


class ModelSpecError(Exception):
    """The MODEL argument could not be resolved to a (module, inputs) pair."""


@dataclass
class LoadedModel:
    module: Any  # torch.nn.Module
    inputs: tuple[Any, ...]
    dynamic_shapes: Any = None


@dataclass
class ExportResult:
    pt2: Path
    npz: Path
    num_inputs: int
    num_outputs: int
    max_abs_diff: float | None = None  # exported program vs. eager reference
    notes: list[str] = field(default_factory=list)


def _builtin_models() -> dict[str, Callable[[], tuple[Any, ...]]]:
    from .models import BUILTIN_MODELS

    return BUILTIN_MODELS


def builtin_names() -> list[str]:
    return list(_builtin_models())


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % (2**32))
    except ImportError:  # pragma: no cover
        pass


def _import_factory(spec: str) -> Callable[[], Any]:
    mod_name, _, attr = spec.rpartition(":")
    if not mod_name or not attr:
        raise ModelSpecError(
            f"bad model spec {spec!r}: expected MODULE:FACTORY or one of: "
            + ", ".join(builtin_names())
        )
    if mod_name.endswith(".py"):
        path = Path(mod_name)
        if not path.is_file():
            raise ModelSpecError(f"bad model spec {spec!r}: no such file {mod_name!r}")
        name = f"_ember_user_model_{path.stem}"
        loader_spec = importlib.util.spec_from_file_location(name, path)
        if loader_spec is None or loader_spec.loader is None:
            raise ModelSpecError(f"bad model spec {spec!r}: cannot load {mod_name!r}")
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:
            raise ModelSpecError(
                f"bad model spec {spec!r}: importing {mod_name!r} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    else:
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise ModelSpecError(
                f"bad model spec {spec!r}: cannot import module {mod_name!r} ({exc})"
            ) from exc
        except Exception as exc:
            raise ModelSpecError(
                f"bad model spec {spec!r}: importing {mod_name!r} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    try:
        factory = getattr(module, attr)
    except AttributeError:
        raise ModelSpecError(
            f"bad model spec {spec!r}: module {mod_name!r} has no attribute {attr!r}"
        ) from None
    if not callable(factory):
        raise ModelSpecError(f"bad model spec {spec!r}: {attr!r} is not callable")
    return factory


def resolve_factory(spec: str) -> Callable[[], Any]:
    """Map MODEL (built-in name or MODULE:FACTORY) to a factory callable."""
    builtins = _builtin_models()
    if spec in builtins:
        return builtins[spec]
    if ":" not in spec:
        raise ModelSpecError(
            f"unknown model {spec!r}: expected MODULE:FACTORY or one of: "
            + ", ".join(builtins)
        )
    return _import_factory(spec)


def load_model(spec: str | Callable[[], Any], seed: int = 0) -> LoadedModel:
    """Seed the RNGs, call the factory and validate what it returned."""
    import torch

    factory = resolve_factory(spec) if isinstance(spec, str) else spec
    name = spec if isinstance(spec, str) else getattr(spec, "__name__", repr(spec))
    seed_everything(seed)
    try:
        result = factory()
    except Exception as exc:
        raise ModelSpecError(
            f"model factory {name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(result, tuple) or len(result) not in (2, 3):
        raise ModelSpecError(
            f"model factory {name!r} must return (module, inputs) or "
            f"(module, inputs, dynamic_shapes), got {type(result).__name__}"
        )
    module, inputs, *rest = result
    if not isinstance(module, torch.nn.Module):
        raise ModelSpecError(
            f"model factory {name!r} returned a {type(module).__name__}, "
            "expected a torch.nn.Module"
        )
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    elif isinstance(inputs, list):
        inputs = tuple(inputs)
    if not isinstance(inputs, tuple):
        raise ModelSpecError(
            f"model factory {name!r}: example inputs must be a tuple, "
            f"got {type(inputs).__name__}"
        )
    return LoadedModel(module, inputs, rest[0] if rest else None)


def dynamic_batch_shapes(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """dynamic_shapes making dim 0 of every tensor input one shared ``batch`` Dim."""
    import torch
    from torch.utils import _pytree as pytree

    batch = torch.export.Dim("batch", min=1)

    def spec_for(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and x.dim() > 0:
            return {0: batch}
        return None

    return tuple(pytree.tree_map(spec_for, a) for a in inputs)


def tensor_to_numpy(t: Any) -> Any:
    """A CPU tensor as numpy without a copy; bfloat16 and float8, which numpy lacks, as their
    ml_dtypes types (the same bits)."""
    import torch

    name = str(t.dtype).removeprefix("torch.")
    if name not in dtypes.ML_DTYPES:
        return t.numpy()
    import ml_dtypes

    bits = torch.int16 if t.element_size() == 2 else torch.uint8
    return t.view(bits).numpy().view(getattr(ml_dtypes, name))


def savable(a: Any) -> Any:
    """`a` as `np.save` can write it and `np.load` read it back: an ml_dtypes array (bfloat16,
    float8) as a void of its size holding the bit patterns (`np.save` writes float8_e5m2 as
    `<f1`, which numpy cannot read)."""
    if a.dtype.type.__module__.startswith("ml_dtypes"):
        return a.view(f"V{a.dtype.itemsize}")
    return a


def _flatten_tensors(tree: Any, what: str) -> list[Any]:
    import numpy as np
    import torch
    from torch.utils import _pytree as pytree

    leaves, _ = pytree.tree_flatten(tree)
    arrays = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            arrays.append(tensor_to_numpy(leaf.detach().cpu()))
        elif isinstance(leaf, (bool, int, float)):
            arrays.append(np.asarray(leaf))
        else:
            raise TypeError(f"{what} leaf {i} has unsupported type {type(leaf).__name__}")
    return arrays


def write_npz(path: Path, arrays: dict[str, Any]) -> None:
    """Like ``numpy.savez`` but byte-reproducible (fixed member timestamps), and written through
    a temporary file and a rename, so a reader never sees half a file."""
    import numpy as np

    buf_zip = io.BytesIO()
    with zipfile.ZipFile(buf_zip, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            # C order always: eager returns some results column-major (LAPACK's factors, FFTs),
            # which `write_array` would record as Fortran-ordered and Ember's reader refuses
            # (not np.ascontiguousarray, which makes a 0-d array 1-d).
            np.lib.format.write_array(buf, savable(np.asarray(arr, order="C")), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())
    write_atomic(path, buf_zip.getvalue())


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Writes through a temporary file and a rename, so a reader never sees half a file. A
    symlink is written through to its target; a device or FIFO (``/dev/null``) is written
    directly, since a rename would replace it with a regular file."""
    import stat

    path = Path(os.path.realpath(path))
    try:
        special = not (stat.S_ISREG(path.stat().st_mode) or stat.S_ISDIR(path.stat().st_mode))
    except FileNotFoundError:
        special = False
    if special:
        path.write_bytes(data)
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _max_abs_diff(a: list[Any], b: list[Any]) -> float | None:
    import numpy as np

    if len(a) != len(b):
        return None
    diff = 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return None
        if x.size:
            wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(y) else np.float64
            diff = max(diff, float(np.max(np.abs(x.astype(wide) - y.astype(wide)))))
    return diff


def _portable_path(path: str) -> str:
    cwd = os.getcwd() + os.sep
    if path.startswith(cwd):
        return path[len(cwd):]
    marker = os.sep + "site-packages" + os.sep
    if marker in path:
        return path.split(marker, 1)[1]
    return path


def strip_debug_meta(ep: Any) -> None:
    """Drop run-dependent metadata and make stack-trace paths portable."""
    frame = re.compile(r'File "([^"]+)"')
    for node in ep.graph.nodes:
        for key in _DROPPED_META_KEYS:
            node.meta.pop(key, None)
        trace = node.meta.get("stack_trace")
        if isinstance(trace, str):
            node.meta["stack_trace"] = frame.sub(
                lambda m: 'File "%s"' % _portable_path(m.group(1)), trace
            )


def export_model(
    model: str | Callable[[], Any],
    out: str | Path,
    npz: str | Path | None = None,
    seed: int = 0,
    dynamic_batch: bool = False,
    check: bool = True,
    keep_debug_meta: bool = False,
) -> ExportResult:
    """Export MODEL to OUT (.pt2) and write reference inputs/outputs to NPZ.

    Unless keep_debug_meta is true, the nodes' "from_node" metadata is dropped and
    stack-trace paths are made portable, so that the .pt2 is byte-reproducible.

    Raises ModelSpecError when MODEL cannot be resolved; anything torch.export
    raises propagates unchanged.
    """
    import torch

    out = Path(out)
    npz_path = Path(npz) if npz is not None else out.with_suffix(".npz")
    loaded = load_model(model, seed=seed)
    module = loaded.module.eval()
    inputs = loaded.inputs
    dynamic_shapes = loaded.dynamic_shapes
    notes: list[str] = []
    if dynamic_batch:
        if dynamic_shapes is not None:
            notes.append("--dynamic-batch overrides the factory's dynamic_shapes")
        dynamic_shapes = dynamic_batch_shapes(inputs)

    # A model may update its inputs in place: the stored inputs are the values before the call,
    # and every run (eager, export, check) gets its own copies.
    from torch.utils._pytree import tree_map

    def fresh() -> Any:
        return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, inputs)

    arg_arrays = _flatten_tensors(fresh(), "input")
    with torch.no_grad():
        reference = module(*fresh())
    ref_arrays = _flatten_tensors(reference, "output")

    ep = torch.export.export(module, fresh(), dynamic_shapes=dynamic_shapes)
    from .decompositions import export_table

    ep = ep.run_decompositions(export_table())

    max_diff = None
    if check:
        with torch.no_grad():
            got = _flatten_tensors(ep.module()(*fresh()), "exported output")
        max_diff = _max_abs_diff(ref_arrays, got)

    out.parent.mkdir(parents=True, exist_ok=True)
    npz_path.parent.mkdir(parents=True, exist_ok=True)
    if not keep_debug_meta:
        strip_debug_meta(ep)
    torch.export.save(ep, out)
    arrays: dict[str, Any] = {}
    arrays.update({f"arg{i}": a for i, a in enumerate(arg_arrays)})
    arrays.update({f"out{i}": a for i, a in enumerate(ref_arrays)})
    write_npz(npz_path, arrays)
    return ExportResult(out, npz_path, len(arg_arrays), len(ref_arrays), max_diff, notes)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Export a PyTorch model with torch.export (decomposed to core ATen) to a "
            ".pt2 archive, and write its example inputs (arg0, arg1, ...) and eager "
            "reference outputs (out0, out1, ...) to an .npz file."
        ),
        epilog=(
            "built-in models: mlp, gpt2_block, tiny_llama, resnet, mlp_dynamic, gpt2_block_dynamic, mlp_f16, tiny_llama_bf16\n\n"
            "examples:\n"
            f"  {PROG} mlp -o out/mlp.pt2\n"
            f"  {PROG} my_models:make_net -o net.pt2 --npz net_ref.npz --seed 1\n\n"
            "A factory takes no arguments and returns (module, inputs) or\n"
            "(module, inputs, dynamic_shapes), e.g.\n"
            "  def make_net():\n"
            "      return MyNet(), (torch.randn(4, 32),)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "model",
        metavar="MODEL",
        help="built-in model name, or MODULE:FACTORY (MODULE may be a path/to/file.py)",
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT.pt2", help="output .pt2 path")
    p.add_argument(
        "--npz",
        metavar="OUT.npz",
        help="reference inputs/outputs path (default: OUT with an .npz suffix)",
    )
    p.add_argument("--seed", type=int, default=0, help="RNG seed (default: 0)")
    p.add_argument(
        "--dynamic-batch",
        action="store_true",
        help="make dim 0 of every tensor input a shared dynamic 'batch' dimension",
    )
    p.add_argument(
        "--no-check",
        action="store_true",
        help="skip comparing the exported program against the eager outputs",
    )
    p.add_argument(
        "--keep-debug-meta",
        action="store_true",
        help="keep the nodes' from_node metadata and absolute stack-trace paths "
        "(makes the .pt2 not byte-reproducible)",
    )
    p.add_argument(
        "--traceback", action="store_true", help="show full tracebacks on errors"
    )
    return p


def _fail(msg: str, code: int) -> int:
    msg = " ".join(str(msg).split())  # one line
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = export_model(
            args.model,
            args.output,
            npz=args.npz,
            seed=args.seed,
            dynamic_batch=args.dynamic_batch,
            check=not args.no_check,
            keep_debug_meta=args.keep_debug_meta,
        )
    except ModelSpecError as exc:
        if args.traceback:
            raise
        return _fail(str(exc), EXIT_BAD_SPEC)
    except ImportError as exc:
        if args.traceback:
            raise
        return _fail(f"missing dependency: {exc}", EXIT_EXPORT_FAILED)
    except Exception as exc:
        if args.traceback:
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return _fail(
            f"exporting {args.model!r} failed: {type(exc).__name__}: {first} "
            "(rerun with --traceback for details)",
            EXIT_EXPORT_FAILED,
        )
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    diff = "" if result.max_abs_diff is None else f", max |exported - eager| = {result.max_abs_diff:.3g}"
    print(
        f"wrote {result.pt2} and {result.npz} "
        f"({result.num_inputs} input(s), {result.num_outputs} output(s){diff})"
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
