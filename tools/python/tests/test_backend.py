"""torch.compile(backend="ember") and the native bindings, against torch eager."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember import backend, models
from numerics import NARROW_RTOL

REPO = Path(__file__).resolve().parents[3]


def test_backend_is_registered_in_a_fresh_process(tmp_path: Path) -> None:
    code = (
        "import torch\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()\n"
        "x = torch.randn(3, 8)\n"
        "with torch.no_grad():\n"
        "    print(float((torch.compile(m, backend='ember')(x) - m(x)).abs().max()))\n"
    )
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert float(out.stdout.strip().splitlines()[-1]) < 1e-5, out.stderr


@pytest.mark.parametrize("name", sorted(models.BUILTIN_MODELS))
def test_models_match_eager(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()  # each model compiles afresh, whatever ran before in this process
    torch.manual_seed(0)
    model, inputs = getattr(models, name)()[:2]
    model.eval()
    before = dict(backend.stats)
    with torch.no_grad():
        want = model(*inputs)
        compiled = torch.compile(model, backend="ember")
        got = compiled(*inputs)
        again = compiled(*inputs)
    assert backend.stats["fallbacks"] == before["fallbacks"], f"{name}: Ember fell back to eager (see the warning)"
    assert backend.stats["compiled"] > before["compiled"]
    if want.dtype in (torch.float16, torch.bfloat16):
        # numerics.py's rule for narrow dtypes: the dtype's rtol times the output's scale.
        atol = 1e-5 + NARROW_RTOL[str(want.dtype).removeprefix("torch.")] * float(want.abs().max())
        torch.testing.assert_close(got.double(), want.double(), rtol=0, atol=atol)
    else:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    assert torch.equal(got, again), "replays of one compiled graph are bit-identical"


def test_second_process_hits_the_compile_cache(tmp_path: Path) -> None:
    code = (
        "import torch\n"
        "from ember import backend\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh()).eval()\n"
        "with torch.no_grad():\n"
        "    torch.compile(m, backend='ember')(torch.randn(3, 8))\n"
        "print(backend.stats['compiled'], backend.stats['cache_hits'])\n"
    )
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True) for _ in range(2)]
    assert runs[0].stdout.split()[-2:] == ["1", "0"], runs[0].stderr
    assert runs[1].stdout.split()[-2:] == ["0", "1"], runs[1].stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_unsupported_ops_are_partitioned_out_with_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()

    class DistancesInTheMiddle(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.a(x))
            return torch.tanh(self.b(y)) * torch.nn.functional.pdist(y).sum()

    torch.manual_seed(0)
    m, x = DistancesInTheMiddle().eval(), torch.randn(4, 8)
    before = dict(backend.stats)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(m, backend="ember")(x)
        want = m(x)
    torch.testing.assert_close(got, want)
    msgs = [str(w.message) for w in caught if "ember" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert "aten._pdist_forward" in msgs[0] and "test_backend.py" in msgs[0], msgs[0]
    # The linear layers around the eager ops still ran on Ember.
    assert backend.stats["compiled"] + backend.stats["cache_hits"] > before["compiled"] + before["cache_hits"]


def test_native_compile_and_run(tmp_path: Path) -> None:
    art = tmp_path / "art"
    ember.compile(str(REPO / "testdata/models/mlp.pt2"), "cpu", str(art))
    prog = ember.Program(str(art))
    assert [i[0] for i in prog.inputs()] == ["x"]
    data = np.load(REPO / "testdata/models/mlp.npz")
    x = np.ascontiguousarray(data["arg0"])
    (out_bytes, shape, dtype), = prog.run_raw([(x.ctypes.data, x.nbytes, list(x.shape), "f32")])
    got = np.frombuffer(out_bytes, dtype=np.float32).reshape(shape)
    np.testing.assert_allclose(got, data["out0"], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="must have rank 2"):
        prog.run_raw([(x.ctypes.data, x.nbytes // 2, [2, 32, 1], "f32")])
    assert ember.import_model(str(REPO / "testdata/models/mlp.pt2")).startswith("module")


def test_ops_outside_embers_dialect_are_partitioned_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`randperm` is not in Ember's torch dialect: it runs with torch eager (the same draw as
    torch's), the ops around it on Ember; one warning names it and the user's line."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()

    def shuffle(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x[torch.randperm(x.shape[0])] * 2) + 1

    x = torch.randn(8, 4)
    before = dict(backend.stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(0)
        got = torch.compile(shuffle, backend="ember")(x)
    torch.manual_seed(0)
    torch.testing.assert_close(got, shuffle(x))
    msgs = [str(w.message) for w in caught if "ember" in str(w.message)]
    assert len(msgs) == 1 and "aten.randperm (" in msgs[0] and "test_backend.py" in msgs[0], msgs
    assert backend.stats["compiled"] > before["compiled"]
