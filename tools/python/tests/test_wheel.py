"""The wheel (`make wheel`) as a user installs it: into a fresh virtualenv that already has torch,
with no clone and no cargo. Marked `wheel` (`make test-wheel` builds the wheel, then runs this;
CI does): `make test` leaves it out, as the wheel is a release build of its own.

The venv is made by this interpreter with `--system-site-packages`, as the issue asks; here that
exposes only the base interpreter's packages (the Ember venv is itself a venv), so once the wheel
is installed a `.pth` adds this interpreter's site-packages after the new venv's own: torch comes
from there, never from a download, and `ember` from the wheel, as the test checks. (The `.pth`
comes after the install so pip never sees, or removes, the `ember` installed here.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parents[3]
WHEELS = Path(os.environ.get("EMBER_WHEEL_DIR", REPO / "target" / "wheels"))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheels = sorted(WHEELS.glob("ember-*-abi3-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.fail(f"no abi3 wheel in {WHEELS}: run `make wheel` first")
    root = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(root)], check=True)
    py = root / "bin" / "python"
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheels[-1])], check=True)
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True)
    # Every site-packages this interpreter sees (its own, and any a .pth of it adds), never a
    # source tree: torch and numpy come from there, `ember` from the wheel.
    dirs = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    (Path(site.stdout.strip()) / "_ember_test_torch.pth").write_text("".join(d + "\n" for d in dirs))
    return root


def _run(venv: Path, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if k not in ("EMBER_PYTHON", "VIRTUAL_ENV", "PYTHONPATH")}
    e.update(env, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=e, timeout=600)


def test_the_ember_command_compiles_and_runs_a_bundled_model(venv: Path, tmp_path: Path) -> None:
    exe = venv / "bin" / "ember"
    assert exe.exists(), "the wheel installs no `ember` command"
    r = _run(venv, [str(exe), "--help"], tmp_path)
    assert r.returncode == 0 and "graph compiler for PyTorch programs" in r.stdout, r.stderr
    assert _run(venv, [str(exe), "compile"], tmp_path).returncode == 2  # a usage error, as the binary's
    model = REPO / "testdata" / "models" / "mlp.pt2"
    r = _run(venv, [str(exe), "compile", str(model), "--target", "cpu", "-o", "art"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "art" / "kernels.so").exists()
    npz = REPO / "testdata" / "models" / "mlp.npz"
    r = _run(venv, [str(exe), "run", "art", "--inputs", str(npz), "--outputs", "got.npz"], tmp_path)
    assert r.returncode == 0, r.stderr
    got, want = np.load(tmp_path / "got.npz")["out0"], np.load(npz)["out0"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    r = _run(venv, [str(exe), "run", "missing", "--inputs", str(npz), "--outputs", "x.npz"], tmp_path)
    assert r.returncode == 2 and "error:" in r.stderr, r.stderr


def test_torch_compile_finds_the_backend_of_the_wheel(venv: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.metadata as md, torch, ember\n"
        "eps = [e.value for e in md.entry_points(group='torch_dynamo_backends') if e.name == 'ember']\n"
        "torch.manual_seed(0)\n"
        "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()\n"
        "x = torch.randn(3, 8)\n"
        "with torch.no_grad():\n"
        "    d = float((torch.compile(m, backend='ember')(x) - m(x)).abs().max())\n"
        "from ember import backend\n"
        "print(ember.__file__, eps[0], backend.stats['compiled'], d)\n"
    )
    r = _run(venv, [str(venv / "bin" / "python"), "-c", code], tmp_path, EMBER_CACHE_DIR=str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    path, ep, compiled, d = r.stdout.split()[-4:]
    assert Path(path).resolve().is_relative_to(venv.resolve()), f"ember was imported from {path}, not the wheel"
    assert ep == "ember.backend:ember_backend"
    assert int(compiled) >= 1 and float(d) < 1e-5, r.stderr


def test_eager_builds_the_native_recorder_from_the_wheel(venv: Path, tmp_path: Path) -> None:
    # The wheel ships native.cpp; the first `ember.eager()` builds it against the installed torch.
    code = (
        "import torch, ember\n"
        "from ember import deferred\n"
        "from ember.deferred import native\n"
        "x = torch.randn(64, 64)\n"
        "with ember.eager():\n"
        "    y = torch.relu(x @ x * 0.5 + 1.0)\n"
        "d = float((y - torch.relu(x @ x * 0.5 + 1.0)).abs().max())\n"
        "print(native.library(), deferred.stats()['ops_recorded'], d)\n"
    )
    r = _run(venv, [str(venv / "bin" / "python"), "-c", code], tmp_path, EMBER_CACHE_DIR=str(tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    lib, recorded, d = r.stdout.split()[-3:]
    assert Path(lib).is_relative_to(tmp_path / "cache"), lib
    assert int(recorded) >= 4 and float(d) < 1e-4, r.stderr
