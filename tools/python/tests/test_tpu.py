"""The tpu target on real XLA: Ember's StableHLO through jaxlib's PJRT CPU client.

- Every bundled model (`testdata/models/*.pt2`, plus the CPU target's op archives in
  `testdata/cpu/`) that compiles for tpu runs on XLA and matches torch eager's outputs stored
  next to it (rtol 1e-4, atol 1e-5). Models the tpu target cannot compile yet are xfailed with
  the reason checked.
- Every emitted module (the models' and the StableHLO snapshots of `testdata/targets/tpu`,
  `<case>.stablehlo.snap` next to each case) parses and verifies with
  jaxlib's MLIR bindings and compiles on XLA.
- `ember run` on a tpu artifact goes through `python -m ember.xla`.

Needs the `ember` binary (`cargo build -p ember-tools`) and jax 0.10.2.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from ember import xla  # noqa: E402
from numerics import as_typed, assert_close  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
TESTDATA = REPO / "testdata"
EMBER = REPO / "target" / "debug" / "ember"

# Models the tpu target cannot compile yet, with the reason (checked against the error).
NOT_YET: dict[str, str] = {
    "igamma_ops": "its recurrence runs a number of steps that is data",
    "linalg_ops": "the tpu target does not run linalg factorizations",
    "polynomial_ops": "its recurrence runs a number of steps that is data",
}

MODELS = sorted(TESTDATA.glob("models/*.pt2")) + sorted(p for p in TESTDATA.glob("cpu/*.pt2") if p.with_suffix(".npz").exists())


def ember(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    if not EMBER.exists():
        pytest.fail(f"{EMBER} is missing: run `cargo build -p ember-tools` first")
    return subprocess.run([str(EMBER), *args], capture_output=True, text=True, cwd=REPO, env=env)


def compile_tpu(model: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return ember("compile", str(model), "--target", "tpu", "-o", str(out))


def snapshot_modules() -> list[tuple[str, str]]:
    """(case, StableHLO text) of every tpu snapshot case that emits a module."""
    out = []
    for p in sorted((TESTDATA / "targets" / "tpu").glob("*.stablehlo.snap")):
        lines = p.read_text().splitlines(keepends=True)
        seps = [i for i, line in enumerate(lines) if line.rstrip("\n") == "---"]
        body = "".join(lines[seps[1] + 1 :])
        case = p.name.removesuffix(".stablehlo.snap")
        if body.startswith("module"):
            out.append((case, body))
        elif body.startswith("// bucket "):
            for part in body.split("// bucket ")[1:]:
                label, text = part.split("\n", 1)
                out.append((f"{case}[{label}]", text))
    return out


def test_jax_is_the_pinned_version() -> None:
    assert jax.__version__ == xla.JAX_VERSION


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.stem)
def test_models_match_eager_on_xla(model: Path, tmp_path: Path) -> None:
    name = model.stem
    art = tmp_path / name
    r = compile_tpu(model, art)
    if name in NOT_YET:
        assert r.returncode == 2 and NOT_YET[name] in r.stderr, r.stderr
        pytest.xfail(f"{name}: {NOT_YET[name]}")
    assert r.returncode == 0, r.stderr
    text = (art / "module.stablehlo.mlir").read_text()
    xla.verify(text)
    ref = np.load(model.with_suffix(".npz"))
    n_in = len([k for k in ref.files if k.startswith("arg")])
    outs = xla.run_artifact(art, [ref[f"arg{i}"] for i in range(n_in)])
    # Functionalized in-place updates of inputs are extra results (extra_ops doubles `vals`);
    # the references are the user outputs.
    names = xla.output_array_names(json.loads((art / "manifest.json").read_text())["outputs"])
    for n, o in zip(names, outs):
        if n == "mutated_input.vals":
            np.testing.assert_array_equal(o, ref["arg3"] * 2)
    outs = [o for n, o in zip(names, outs) if n.startswith("out")]
    n_out = len([k for k in ref.files if k.startswith("out")])
    assert len(outs) == n_out
    worst = 0.0
    for i, got in enumerate(outs):
        want = as_typed(ref[f"out{i}"], got)
        assert_close(got, want, err_msg=f"{name} out{i}")
        if got.size and (got.dtype.kind in "fiub" or got.dtype.name == "bfloat16"):
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            worst = max(worst, float(np.nanmax(np.where(np.isnan(diff) & np.isnan(want), 0.0, diff))))
    print(f"{name}: {len(outs)} outputs, max |xla - eager| = {worst:.3g}")


@pytest.mark.parametrize("case,text", [pytest.param(c, t, id=c) for c, t in snapshot_modules()])
def test_snapshot_modules_verify_and_compile(case: str, text: str) -> None:
    xla.verify(text)
    xla._compile(text)  # XLA accepts it (chlo, gather, variadic reduce, reduce_window, ...)


def test_snapshot_cases_exist() -> None:
    cases = {c for c, _ in snapshot_modules()}
    assert {"elementwise", "compare_convert", "shape", "reduce", "matmul_gather", "windows", "fusion_groups"} <= cases


def test_verify_reports_mlir_errors() -> None:
    bad = "module {\n  func.func public @main(%a: tensor<2xf32>) -> tensor<3xf32> {\n    return %a : tensor<2xf32>\n  }\n}\n"
    with pytest.raises(ValueError, match="does not"):
        xla.verify(bad)


def test_elementwise_semantics_on_xla() -> None:
    """The elementwise snapshot on XLA against numpy: C-style rem/div, half-even round, trunc, sign."""
    text = dict(snapshot_modules())["elementwise"]
    x = np.array([-2.5, -1.5, -0.7, -0.0, 0.3, 0.5, 1.5, 2.5], np.float32)
    y = np.array([1.5, -2.0, 0.5, 3.0, -1.25, 2.0, 0.75, -3.0], np.float32)
    i = np.array([-7, -7, 7, 7, 0, 5, -1, 100], np.int32)
    j = np.array([2, -2, 2, -2, 3, 3, 4, -7], np.int32)
    u = np.array([0, 1, 2, 255, 0, 7, 0, 9], np.uint8)
    got = xla.run_stablehlo(text, [x, y, i, j, u])
    ax = np.abs(x)
    with np.errstate(divide="ignore"):
        want = [
            x + y, x - y, x * y, x / y, np.maximum(x, y), np.minimum(x, y), ax**y, np.fmod(x, y), -x,
            np.exp(x), np.log(ax), np.log1p(ax), np.sqrt(ax), 1 / np.sqrt(ax), np.tanh(x), np.sin(x),
            np.cos(x), np.tan(x), np.floor(x), np.ceil(x), np.round(x), np.trunc(x), np.sign(x),
            1 / (1 + np.exp(-x)), np.array([math.erf(v) for v in x], np.float32),
            (np.trunc(i / j)).astype(np.int32), np.fmod(i, j), i & j, i | j, i ^ j, ~i, np.abs(i),
            np.sign(i), i, u, (u != 0).astype(np.uint8), i,
        ]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert g.dtype == w.dtype, f"result {k}: {g.dtype} vs {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=1e-6, err_msg=f"result {k}")


def test_fusion_group_composites_on_xla() -> None:
    """The fusion-group snapshot on XLA against numpy: inlined loop/gemm groups and the
    `stablehlo.composite` groups (softmax, layer_norm, rms_norm, gemm+gelu, attention)."""
    text = dict(snapshot_modules())["fusion_groups"]
    for kind in ["softmax", "layer_norm", "rms_norm", "gemm", "attention"]:
        assert f'stablehlo.composite "ember.{kind}"' in text
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    x, w, b, a, m, bias, q, k, v, mask = f(2, 4, 8), f(8), f(8), f(4, 8), f(8, 6), f(6), f(2, 4, 8), f(2, 4, 8), f(2, 4, 8), f(4, 4)
    got = xla.run_stablehlo(text, [x, w, b, a, m, bias, q, k, v, mask])
    x64 = x.astype(np.float64)

    def softmax(t: np.ndarray) -> np.ndarray:
        e = np.exp(t - t.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    erf = np.vectorize(math.erf)
    h = a.astype(np.float64) @ m + bias
    mean, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    s = q.astype(np.float64) @ k.transpose(0, 2, 1) / math.sqrt(8) + mask
    want = [
        np.exp(x64 + w),
        softmax(x64 + w),
        (x64 - mean) / np.sqrt(var + 1e-5) * w + b,
        x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-6) * w,
        h,
        0.5 * h * (1 + erf(h / math.sqrt(2))),
        softmax(s) @ v,
        x64 + w,
    ]
    assert len(got) == len(want)
    for i, (g, wnt) in enumerate(zip(got, want)):
        assert g.dtype == np.float32 and g.shape == wnt.shape, f"result {i}"
        np.testing.assert_allclose(g, wnt, rtol=1e-5, atol=1e-5, err_msg=f"result {i}")


SHARDINGS = {
    # --shard values -> collectives XLA's SPMD partitioner must have inserted.
    "tp": {"all-reduce"},  # row-parallel projections sum their partial products
    "fsdp": {"all-gather"},  # parameters are gathered where they are used
    "dp,tp,fsdp": {"all-reduce", "all-gather"},
}


@pytest.mark.parametrize("shard", list(SHARDINGS))
def test_sharded_gpt2_block_on_8_devices(shard: str, tmp_path: Path) -> None:
    """GPT-2 block with `--mesh x=2,y=4 --shard ...` on 8 virtual CPU devices equals the unsharded
    artifact and torch eager; the compiled HLO has the expected collectives. Runs in subprocesses:
    the device count is fixed when a process starts the CPU backend."""
    model = TESTDATA / "models/gpt2_block.pt2"
    art, flat = tmp_path / "sharded", tmp_path / "flat"
    env = dict(os.environ, EMBER_PYTHON=sys.executable)
    env.pop("XLA_FLAGS", None)
    r = ember("compile", str(model), "--target", "tpu", "-o", str(art), "--mesh", "x=2,y=4", "--shard", shard, "--portable", env=env)
    assert r.returncode == 0, r.stderr
    assert compile_tpu(model, flat).returncode == 0
    xla.verify((art / "module.stablehlo.mlir").read_text())
    outs = {}
    for name, a in [("sharded", art), ("flat", flat)]:
        got = tmp_path / f"{name}.npz"
        r = ember("run", str(a), "--inputs", str(model.with_suffix(".npz")), "--outputs", str(got), env=env)
        assert r.returncode == 0, r.stderr
        outs[name] = np.load(got)["out0"]
    want = np.load(model.with_suffix(".npz"))["out0"]
    np.testing.assert_allclose(outs["sharded"], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outs["sharded"], outs["flat"], rtol=1e-5, atol=1e-5)
    # The VHLO portable artifact keeps the shardings (as jax.export carries them) and runs the same.
    got = tmp_path / "portable.npz"
    r = subprocess.run([sys.executable, "-m", "ember.xla", "run", str(art), "--portable", "--inputs", str(model.with_suffix(".npz")),
                        "--outputs", str(got)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(got)["out0"], outs["sharded"])
    hlo = subprocess.run([sys.executable, "-m", "ember.xla", "hlo", str(art)], capture_output=True, text=True, env=env)
    assert hlo.returncode == 0, hlo.stderr
    found = {c for c in ["all-reduce", "all-gather", "reduce-scatter", "all-to-all"] if f" {c}(" in hlo.stdout}
    assert SHARDINGS[shard] <= found, f"{shard}: collectives {found}"
    print(f"{shard}: max |sharded - eager| = {np.abs(outs['sharded'] - want).max():.3g}, collectives {sorted(found)}")


@pytest.mark.parametrize("name", ["mlp", "gpt2_block", "mlp_dynamic"])
def test_portable_vhlo_artifact(name: str, tmp_path: Path) -> None:
    """`--portable` writes a VHLO portable artifact next to every module (bucketed ones too):
    deterministic bytes, and running from it gives exactly the outputs of the StableHLO text."""
    model = TESTDATA / f"models/{name}.pt2"
    env = dict(os.environ, EMBER_PYTHON=sys.executable)
    arts = [tmp_path / f"a{k}" for k in range(2)]
    for a in arts:
        r = ember("compile", str(model), "--target", "tpu", "--portable", "-o", str(a), env=env)
        assert r.returncode == 0, r.stderr
    man = json.loads((arts[0] / "manifest.json").read_text())
    modules = [man["module"]] + [b["module"] for b in man.get("buckets") or []]
    assert set(man["vhlo"]["files"]) == set(modules) and man["vhlo"]["version"]
    for f in man["vhlo"]["files"].values():
        data = (arts[0] / f).read_bytes()
        assert data[:4] == b"ML\xefR" and data == (arts[1] / f).read_bytes(), f
    text = (arts[0] / man["module"]).read_text()
    back = xla.deserialize_portable((arts[0] / man["vhlo"]["files"][man["module"]]).read_bytes())
    xla.verify(back)
    ref = np.load(model.with_suffix(".npz"))
    inputs = [ref[f"arg{i}"] for i in range(sum(k.startswith("arg") for k in ref.files))]
    got = xla.run_artifact(arts[0], inputs, portable=True)
    want = xla.run_artifact(arts[0], inputs)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert "stablehlo." in text and "vhlo" not in text
    plain = tmp_path / "plain"
    assert compile_tpu(model, plain).returncode == 0
    assert "vhlo" not in json.loads((plain / "manifest.json").read_text())
    with pytest.raises(xla.XlaError, match="no VHLO portable artifact"):
        xla.Artifact(plain, portable=True)


DYNAMIC_SIZES = {"mlp_dynamic": [3, 17, 64], "gpt2_block_dynamic": [1, 5, 16]}


def run_at_sizes(a: xla.Artifact, name: str) -> set[str]:
    """Runs a compiled symbolic-batch bundled model at each of `DYNAMIC_SIZES[name]` (random
    inputs), checks it against torch eager on the exported program; returns the bucket modules run."""
    import torch

    model = TESTDATA / f"models/{name}.pt2"
    ep = torch.export.load(str(model))
    x0 = np.load(model.with_suffix(".npz"))["arg0"]
    used = set()
    for n in DYNAMIC_SIZES[name]:
        x = np.random.default_rng(n).standard_normal((n, *x0.shape[1:])).astype(np.float32)
        call, args, finish = a.prepare([x])
        used.add(next(b["module"] for b in a.buckets if b["symbols"] == {"s77": args[a.manifest["inputs"][0]["arg"]].shape[0]}))
        got = a.widen(finish(call(args)))[0]
        with torch.no_grad():
            want = ep.module()(torch.from_numpy(x)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} at batch {n}")
    return used


@pytest.mark.parametrize("name", list(DYNAMIC_SIZES))
def test_dynamic_models_at_three_sizes(name: str, tmp_path: Path) -> None:
    """One compile of a symbolic-batch model serves three batch sizes (each in a different padded
    bucket), matching torch eager on the exported program; a size above the bound is refused."""
    pytest.importorskip("torch")
    model = TESTDATA / f"models/{name}.pt2"
    art = tmp_path / name
    assert compile_tpu(model, art).returncode == 0
    a = xla.Artifact(art)
    assert len(run_at_sizes(a, name)) == 3
    x0 = np.load(model.with_suffix(".npz"))["arg0"]
    top = a.buckets[-1]["symbols"]["s77"]
    with pytest.raises(xla.XlaError, match=f"outside the compiled range \\[1, {top}\\]"):
        xla.run_artifact(art, [np.zeros((top + 1, *x0.shape[1:]), np.float32)])
    with pytest.raises(xla.XlaError, match="has shape"):
        xla.run_artifact(art, [np.zeros((2, *(d + 1 for d in x0.shape[1:])), np.float32)])


def test_cli_run_goes_through_ember_xla(tmp_path: Path) -> None:
    art = tmp_path / "mlp"
    r = compile_tpu(TESTDATA / "models/mlp.pt2", art)
    assert r.returncode == 0, r.stderr
    got = tmp_path / "got.npz"
    env = dict(os.environ, EMBER_PYTHON=sys.executable)
    r = ember("run", str(art), "--inputs", str(TESTDATA / "models/mlp.npz"), "--outputs", str(got), env=env)
    assert r.returncode == 0, r.stderr
    want = np.load(TESTDATA / "models/mlp.npz")["out0"]
    np.testing.assert_allclose(np.load(got)["out0"], want, rtol=1e-4, atol=1e-5)
    # Errors from the runner come back with its exit code and message.
    r = ember("run", str(art), "--inputs", str(got), "--outputs", str(got), env=env)
    assert r.returncode == 2 and "no array `arg0` for input 0 (`x`)" in r.stderr, r.stderr


def test_runner_checks_inputs(tmp_path: Path) -> None:
    art = tmp_path / "mlp"
    assert compile_tpu(TESTDATA / "models/mlp.pt2", art).returncode == 0
    with pytest.raises(xla.XlaError, match=r"input 0 \(`x`\) must be float32, got float64"):
        xla.run_artifact(art, [np.zeros((4, 32))])
    with pytest.raises(xla.XlaError, match=r"must have shape \[4, 32\], got \[2, 32\]"):
        xla.run_artifact(art, [np.zeros((2, 32), np.float32)])
    with pytest.raises(xla.XlaError, match="takes 1 inputs, got 0"):
        xla.run_artifact(art, [])
    with pytest.raises(xla.XlaError, match="not an Ember artifact"):
        xla.run_artifact(tmp_path / "missing", [])


def test_damaged_artifacts_are_refused(tmp_path: Path) -> None:
    art = tmp_path / "mlp"
    assert compile_tpu(TESTDATA / "models/mlp.pt2", art).returncode == 0
    xla.Artifact(art)
    module = art / "module.stablehlo.mlir"
    text = module.read_bytes()
    module.write_bytes(text[:10] + bytes([text[10] ^ 1]) + text[11:])  # same size, one bit changed
    with pytest.raises(xla.XlaError, match=r"`module.stablehlo.mlir` does not match its SHA-256 .* recompile the model"):
        xla.Artifact(art)
    module.write_bytes(text)
    weights = art / "weights.bin"
    weights.write_bytes(weights.read_bytes()[:-8])
    with pytest.raises(xla.XlaError, match=r"`weights.bin` is truncated: \d+ bytes, manifest.json says \d+"):
        xla.Artifact(art)


def test_version_pin_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jax, "__version__", "0.0.1")
    with pytest.raises(xla.XlaError, match=r"pinned to jax 0\.10\.2.*jax 0\.0\.1 is installed"):
        xla.run_stablehlo("module {}", [])


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_philox_generator_gives_the_same_bits_on_xla(target: str, tmp_path: Path) -> None:
    """The random ops' generator (`ember.rng`, integer ATen ops) compiled for the XLA targets
    gives torch's bits for the same seed: uniform exactly, normal to rounding."""
    import torch

    from ember import rng

    class Draw(torch.nn.Module):
        def forward(self, seed: torch.Tensor):
            return rng.uniform(seed, 3, [4096], torch.float32), rng.normal(seed, 4, [64, 64], torch.float32)

    seed = torch.tensor((1 << 61) + 12345)
    ep = torch.export.export(Draw(), (seed,)).run_decompositions()
    torch.export.save(ep, tmp_path / "draw.pt2")
    # Its 64-bit products need Neuron's int64 (narrowed to int32 they would be an error).
    flags = ["--native-int64"] if target == "trainium" else []
    r = ember("compile", str(tmp_path / "draw.pt2"), "--target", target, "-o", str(tmp_path / "art"), *flags)
    assert r.returncode == 0, r.stderr
    want = Draw()(seed)
    got = xla.run_artifact(tmp_path / "art", [seed.numpy()])
    np.testing.assert_array_equal(got[0], want[0].numpy())
    np.testing.assert_allclose(got[1], want[1].numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["cpu", "tpu", "trainium"])
def test_pt2_random_ops_draw_the_numbers_of_ember_rng(target: str, tmp_path: Path) -> None:
    """A `.pt2`'s random ops, lowered by Ember (`passes/src/lower/random.rs`) onto the seed input
    it appends, draw `ember.rng`'s numbers (the torch.compile path's) for the same seed and
    stream on every target: uniform exactly, normal to rounding."""
    import torch

    from ember import rng

    class Draw(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return torch.rand(4096), torch.randn_like(x)

    x = torch.zeros(64, 64)
    torch.export.save(torch.export.export(Draw(), (x,)).run_decompositions(), tmp_path / "draw.pt2")
    flags = ["--native-int64"] if target == "trainium" else []
    r = ember("compile", str(tmp_path / "draw.pt2"), "--target", target, "-o", str(tmp_path / "art"), *flags)
    assert r.returncode == 0, r.stderr
    inputs = json.loads((tmp_path / "art" / "manifest.json").read_text())["inputs"]
    assert [(i["name"], i.get("rng_seed", False)) for i in inputs][-1] == ("ember_seed", True)
    seed = np.array((1 << 61) + 12345, dtype=np.int64)
    np.savez(tmp_path / "in.npz", arg0=x.numpy(), arg1=seed)
    r = ember("run", str(tmp_path / "art"), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz"))
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out.npz")
    s = torch.tensor(seed)
    np.testing.assert_array_equal(got["out0"], rng.uniform(s, 0, [4096], torch.float32).numpy())
    np.testing.assert_allclose(got["out1"], rng.normal(s, 1, [64, 64], torch.float32).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_batch_reductions_at_several_sizes(target: str, tmp_path: Path) -> None:
    """Mean, var, max and a softmax over a dynamic batch: one compile into padded buckets serves
    five sizes (four of them padded), the padding masked out of every reduction against the true
    size the runner passes (`sizes` in the manifest)."""
    torch = pytest.importorskip("torch")
    model = TESTDATA / "cpu/batch_stats.pt2"
    art = tmp_path / target
    r = ember("compile", str(model), "--target", target, "-o", str(art))
    assert r.returncode == 0, r.stderr
    a = xla.Artifact(art)
    assert len(a.buckets) > 3 and list(a.sizes) == ["s77"]
    ep = torch.export.load(str(model))
    for n in [2, 3, 5, 9, 16]:
        x = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
        call, args, finish = a.prepare([x])
        got = a.widen(finish(call(args)))[0]
        with torch.no_grad():
            want = ep.module()(torch.from_numpy(x)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"{target} at batch {n}")
