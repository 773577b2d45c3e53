"""torch.compile(backend="ember") and the native bindings, against torch eager."""

from __future__ import annotations

import copy
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
from numerics import assert_close_torch

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
    assert_close_torch(got, want)
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


_CACHE_USER = (
    "import sys, torch\n"
    "from ember import backend\n"
    "torch.manual_seed(0)\n"
    "m = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()\n"
    "x = torch.randn(3, 8)\n"
    "{before}"
    "with torch.no_grad():\n"
    "    d = float((torch.compile(m, backend='ember')(x) - m(x)).abs().max())\n"
    "print(d, backend.stats['compiled'], backend.stats['cache_hits'])\n"
)


def _cache_user(cache: Path, before: str = "") -> subprocess.Popen[str]:
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache))
    code = _CACHE_USER.format(before=before)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _result(p: subprocess.Popen[str]) -> tuple[float, int, int]:
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    d, compiled, hits = out.split()[-3:]
    assert float(d) < 1e-5, err
    return float(d), int(compiled), int(hits)


def _entries(cache: Path) -> tuple[list[str], list[str]]:
    names = sorted(p.name for p in cache.iterdir())
    return [n for n in names if not n.startswith(".")], [n for n in names if n.startswith(".")]


def test_compile_cache_under_eight_concurrent_processes(tmp_path: Path) -> None:
    procs = [_cache_user(tmp_path) for _ in range(8)]
    results = [_result(p) for p in procs]
    assert sum(c for _, c, _ in results) >= 1
    entries, temps = _entries(tmp_path)
    assert len(entries) == 1 and not temps, (entries, temps)
    # Whoever won the race, the entry is complete: the next process loads it.
    assert _result(_cache_user(tmp_path))[1:] == (0, 1)


# Kills the writer at chosen points of a cache miss: after the export (mid-compile), and after
# the compile, before the entry is published by its rename.
_KILL_AFTER_EXPORT = (
    "import os, signal\n"
    "_export = backend._export\n"
    "backend._export = lambda *a: (_export(*a), os.kill(os.getpid(), signal.SIGKILL))\n"
)
_KILL_BEFORE_PUBLISH = (
    "import os, signal\n"
    "_rename = os.rename\n"
    "def rename(a, b):\n"
    "    if os.path.dirname(str(b)) == backend._cache_root():\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    _rename(a, b)\n"
    "os.rename = rename\n"
)


def test_compile_cache_after_a_killed_writer_and_a_damaged_entry(tmp_path: Path) -> None:
    for before in (_KILL_AFTER_EXPORT, _KILL_BEFORE_PUBLISH):
        p = _cache_user(tmp_path, before)
        p.communicate(timeout=300)
        assert p.returncode == -9, "the writer was to be killed"
    # The second writer removed the first one's leftovers as it started; its own remain.
    entries, temps = _entries(tmp_path)
    assert not entries and len(temps) == 1, (entries, temps)
    # Nothing half-written was published; the next process compiles and removes the leftovers.
    assert _result(_cache_user(tmp_path))[1:] == (1, 0)
    entries, temps = _entries(tmp_path)
    assert len(entries) == 1 and not temps, (entries, temps)
    # A file of the entry changed on disk: its checksum fails, and it is compiled again.
    kernels = tmp_path / entries[0] / "cpu" / "kernels.so"
    kernels.write_bytes(kernels.read_bytes()[:-4])
    assert _result(_cache_user(tmp_path))[1:] == (1, 0)
    assert _result(_cache_user(tmp_path))[1:] == (0, 1)
    assert _entries(tmp_path) == (entries, [])


def test_out_of_range_embedding_index_raises_index_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 2)).eval()
    compiled = torch.compile(m, backend="ember")
    ok = torch.tensor([[1, 9], [0, 3]])
    with torch.no_grad():
        torch.testing.assert_close(compiled(ok), m(ok))
        with pytest.raises(IndexError):
            m(torch.tensor([[1, 10], [0, 3]]))  # torch's own answer
        with pytest.raises(IndexError, match="node `.*embedding.*`.*an index is out of range"):
            compiled(torch.tensor([[1, 10], [0, 3]]))


def test_unsupported_ops_are_partitioned_out_with_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()

    class ModeInTheMiddle(torch.nn.Module):
        # aten.mode has no lowering (Ember's torch dialect has no definition for it).
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.a(x))
            return torch.tanh(self.b(y)) * torch.mode(y + 1.0, 0).values.sum()

    torch.manual_seed(0)
    m, x = ModeInTheMiddle().eval(), torch.randn(4, 8)
    before = dict(backend.stats)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(m, backend="ember")(x)
        want = m(x)
    torch.testing.assert_close(got, want)
    msgs = [str(w.message) for w in caught if "ember" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert "aten.mode" in msgs[0] and "test_backend.py" in msgs[0], msgs[0]
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
    # A program without symbolic dims also runs from addresses alone (torch.compile's per-call path).
    assert prog.fixed
    out = np.empty_like(data["out0"])
    prog.run_ptrs([x.ctypes.data], [out.ctypes.data])
    np.testing.assert_array_equal(out, got)
    with pytest.raises(ValueError, match="takes 1 inputs and 1 outputs, got 2 and 1"):
        prog.run_ptrs([x.ctypes.data, x.ctypes.data], [out.ctypes.data])
    dyn = tmp_path / "dyn"
    ember.compile(str(REPO / "testdata/models/mlp_dynamic.pt2"), "cpu", str(dyn))
    assert not ember.Program(str(dyn)).fixed
    with pytest.raises(ValueError, match="symbolic dims; use run_into"):
        ember.Program(str(dyn)).run_ptrs([x.ctypes.data], [out.ctypes.data])
    assert ember.import_model(str(REPO / "testdata/models/mlp.pt2")).startswith("module")


def test_small_products_leave_the_callers_blas_threads_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph's small GEMMs run on the calling thread with torch's MKL at one thread; the
    thread's own setting (what the user's torch matmuls get) is restored after the call."""
    import ctypes

    lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"), mode=os.RTLD_NOLOAD)
    if not hasattr(lib, "MKL_Get_Max_Threads"):
        pytest.skip("this torch has no MKL")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Linear(64, 64).eval()
    x = torch.randn(8, 64)
    with torch.no_grad():
        got = torch.compile(m, backend="ember")(x)
    torch.testing.assert_close(got, m(x))
    # torch's setting, not one left behind by any earlier call in this process.
    assert lib.MKL_Get_Max_Threads() == torch.get_num_threads()


THREADS_SCRIPT = """
import ctypes, json, os, threading, torch, ember
torch.set_num_threads(int(os.environ["THREADS"]))
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU(), torch.nn.LayerNorm(1024)).eval()
x = torch.randn(256, 1024)
with torch.no_grad():
    want = m(x)  # torch's OpenMP team exists from here on
    torch.compile(torch.sin, backend="eager")(x)  # and Dynamo's own threads
    before = set(os.listdir("/proc/self/task"))
    got = torch.compile(m, backend="ember")(x)
    # Native threads (Python's own, e.g. tqdm's monitor, are not a pool)
    after = set(os.listdir("/proc/self/task")) - {str(t.native_id) for t in threading.enumerate()}
lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"), mode=os.RTLD_NOLOAD)
print(json.dumps(dict(openmp=ember._native().host_openmp(), new_threads=len(after - before),
                      mkl=lib.MKL_Get_Max_Threads(), err=float((got - want).abs().max()))))
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_kernels_split_over_torchs_openmp_team(tmp_path: Path, threads: int) -> None:
    """Inside a torch process Ember's kernels and GEMM splits run on torch's OpenMP team (no
    pool of Ember's own, `torch.set_num_threads` is Ember's thread count), and a split GEMM
    leaves the calling thread's MKL setting as torch set it."""
    import json

    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path), THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], capture_output=True, text=True, env=env, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["openmp"] and r["err"] < 1e-4, r
    assert r["new_threads"] == 0 and r["mkl"] == threads, r


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


@torch.library.custom_op("ember_test::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_twice.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


def test_a_custom_op_runs_eagerly_between_compiled_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's custom op, which Ember's torch dialect cannot define, runs with torch eager and
    the ops around it on Ember (it made the whole graph eager); the one warning names the op and
    the user's line, not the temporary file it was read from."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(_twice(x.exp())) + 1

    x = torch.randn(8, 4)
    before = dict(backend.stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(f, backend="ember")(x)
    torch.testing.assert_close(got, f(x))
    msgs = [str(w.message) for w in caught if "ember" in str(w.message)]
    assert len(msgs) == 1 and "ember_test.twice (" in msgs[0] and "test_backend.py" in msgs[0] and ".tmp-" not in msgs[0], msgs
    assert backend.stats["compiled"] - before["compiled"] == 2


class _ComplexRope(torch.nn.Module):
    """RoPE as TorchTitan writes it: a complex64 `freqs_cis` buffer times the activations read as
    complex pairs."""

    def __init__(self) -> None:
        super().__init__()
        f = torch.outer(torch.arange(6).float(), 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)))
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(f), f))
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xc = torch.view_as_complex(self.lin(x).reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(xc * self.freqs_cis[None, :, None, :]).flatten(3)


def test_complex_inputs_and_outputs_cross_as_real_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Complex graph inputs (a complex64 buffer, complex arguments) and outputs are passed to
    Ember as `view_as_real` pairs and come back complex: compiled, no fallback."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)

    def f(z: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.exp(z * w) + z.conj(), z.abs() * 2

    z, w = torch.randn(4, 3, dtype=torch.complex64), torch.randn(4, 3, dtype=torch.complex64)
    rope, x = _ComplexRope().eval(), torch.randn(2, 6, 3, 8)
    before = dict(backend.stats)
    with torch.no_grad():
        got = torch.compile(f, backend="ember")(z, w)
        got_rope = torch.compile(rope, backend="ember")(x)
        want, want_rope = f(z, w), rope(x)
    assert backend.stats["fallbacks"] == before["fallbacks"], "Ember fell back to eager (see the warning)"
    assert backend.stats["compiled"] - before["compiled"] == 2
    assert got[0].dtype == torch.complex64
    for g, e in zip((*got, got_rope), (*want, want_rope)):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def test_complex_rope_gradients_match_eager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Training through complex RoPE: forward and backward graphs compiled by Ember, gradients
    as torch eager's."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)
    rope, x = _ComplexRope(), torch.randn(2, 6, 3, 8, requires_grad=True)
    before = dict(backend.stats)
    torch.compile(rope, backend="ember")(x).square().sum().backward()
    got = [x.grad.clone(), rope.lin.weight.grad.clone(), rope.lin.bias.grad.clone()]
    x.grad = rope.lin.weight.grad = rope.lin.bias.grad = None
    rope(x).square().sum().backward()
    assert backend.stats["fallbacks"] == before["fallbacks"], "Ember fell back to eager (see the warning)"
    assert backend.stats["backward"] > before["backward"]
    for g, e in zip(got, [x.grad, rope.lin.weight.grad, rope.lin.bias.grad]):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def _ember_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "ember" in str(w.message)]


def test_varying_batch_compiles_once_with_symbolic_dims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamo marks the batch dynamic at its second size and hands over graphs with SymInt
    inputs: one compile (forward and backward) serves every later size, none falls back, and
    losses and gradients stay torch eager's."""
    import copy

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.LayerNorm(32), torch.nn.GELU(), torch.nn.Linear(32, 3))
    ref = copy.deepcopy(net)
    compiled = torch.compile(net, backend="ember")
    before = dict(backend.stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i, b in enumerate([2, 3, 4, 5, 6, 7, 9]):
            x, y = torch.randn(b, 8), torch.randint(0, 3, (b,))
            net.zero_grad()
            ref.zero_grad()
            loss = torch.nn.functional.cross_entropy(compiled(x), y)
            loss.backward()
            want = torch.nn.functional.cross_entropy(ref(x), y)
            want.backward()
            assert_close_torch(loss.detach(), want.detach())
            for p, q in zip(net.parameters(), ref.parameters()):
                assert_close_torch(p.grad, q.grad)
            if i == 1:
                after_second = backend.stats["compiled"]
    assert _ember_warnings(caught) == []
    assert backend.stats["fallbacks"] == before["fallbacks"]
    # The first size compiles a static pair, the second the symbolic pair; then nothing.
    assert after_second - before["compiled"] == 4
    assert backend.stats["compiled"] == after_second


def test_varying_sequence_length_of_a_transformers_gpt2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real model under dynamic shapes: the position ids' `arange` ends at the symbolic length."""
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_head=4, n_embd=64, vocab_size=300, n_positions=64)
    m = transformers.GPT2LMHeadModel(cfg).eval()
    compiled = torch.compile(m, backend="ember")
    before = dict(backend.stats)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for t in [8, 9, 13]:
            ids = torch.randint(0, 300, (2, t))
            assert_close_torch(compiled(input_ids=ids).logits, m(input_ids=ids).logits)
    assert _ember_warnings(caught) == []
    assert backend.stats["fallbacks"] == before["fallbacks"]
    assert backend.stats["compiled"] - before["compiled"] == 2  # static at 8, symbolic from 9


def test_an_output_reuses_the_memory_of_the_previous_one_once_it_died(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled graph's outputs are handed out over memory it keeps for the next call
    (`buffers.rs`): reused only after torch freed the previous output, never under a live one."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    f = torch.compile(lambda x: (x * 2).relu() + 1, backend="ember")
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    first, second = f(a), f(b)
    assert first.data_ptr() != second.data_ptr()
    torch.testing.assert_close(first, (a * 2).relu() + 1)
    where = first.data_ptr()
    del first
    taker = torch.empty(64, 64)  # where malloc would put a freed output's memory
    third = f(-b)
    assert third.data_ptr() == where != taker.data_ptr()
    torch.testing.assert_close(third, (-b * 2).relu() + 1)
    torch.testing.assert_close(second, (b * 2).relu() + 1)


def test_a_graph_reads_and_returns_channels_last_tensors_as_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A static graph whose outputs are its computed values runs straight from its arguments to
    its outputs (`_Split.direct`): a channels-last input is read in place, a channels-last
    output is handed out in the layout AOT declared (the same memory as the computed value),
    and an input in another layout than the compiled one takes the slow path, still right."""
    from torch.fx.experimental.proxy_tensor import make_fx

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))

    def f(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = (x * w).relu()
        return y, y.sum(dim=(2, 3), keepdim=True), y

    x, w = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last), torch.randn(1, 3, 1, 1)
    compiled = backend._Compiled(make_fx(f, tracing_mode="fake")(x, w), [x, w])
    assert compiled._direct and compiled.split.input_perms[0] == [0, 2, 3, 1]
    for arg in (x, x.contiguous()):
        got, want = compiled._run_fixed([arg, w]), f(x, w)
        assert got[0] is got[2]  # one value, returned twice, as the graph does
        for g, e in zip(got, want):
            assert g.stride() == e.stride()
            torch.testing.assert_close(g, e)


def test_held_constants_follow_every_input_when_an_input_is_permuted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph reading a transposed input (read as its dense permutation, which `_Split` permutes
    back right after its placeholder) and a tensor it holds (made an input): the held tensor is
    the last input. Regression: it was placed before the next input, which then got its value
    (same shape and dtype here, so the result was silently wrong; transformers Falcon's backward
    failed with a dtype error)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    held = torch.randn(4, 3)

    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + 2 * b + 3 * held

    a, b = torch.randn(3, 4).t(), torch.randn(4, 3)
    gm = make_fx(f)(a, b)
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    compiled = backend._Compiled(gm, [a, b])
    assert compiled.split.input_perms[0] == [1, 0]
    torch.testing.assert_close(compiled(a, b), f(a, b))


def test_a_statistic_saved_unsqueezed_is_computed_in_its_saved_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch norm's forward saves its per-channel mean for the backward as `unsqueeze`s to
    [1, C, 1, 1]: the value is computed in that shape (a view chain read by nothing else), so
    the graph stays direct (no epilogue per call) and returns the view's shape and strides."""
    from torch.fx.experimental.proxy_tensor import make_fx

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))

    def f(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mean, top = x.mean(dim=(0, 2, 3)), x.amax(dim=(0, 2, 3))
        return x.relu() * 2, mean.unsqueeze(0).unsqueeze(2).unsqueeze(3), top.view(1, -1).squeeze(0)

    x = torch.randn(2, 3, 4, 5)
    compiled = backend._Compiled(make_fx(f, tracing_mode="fake")(x), [x])
    assert compiled._direct, compiled.split.epilogue.code
    for g, e in zip(compiled._run_fixed([x]), f(x)):
        assert g.shape == e.shape and g.stride() == e.stride()
        torch.testing.assert_close(g, e)


def test_partitioned_graph_pieces_run_in_stages_between_eager_ops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_stages`: the supported ops between eager ones (here `sin`) form one piece per stage,
    a value is computed in the last stage its readers allow (`exp`, read only after the first
    `sin`), and the pieces and eager ops run in an order that respects every dependency."""
    from torch.fx.experimental.proxy_tensor import make_fx

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))

    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = x * 2
        c = a.exp()
        d = (a.sin() + 1) * c
        return d.sin() + a, c

    x = torch.randn(8, 8)
    fused = backend._partition(make_fx(f, tracing_mode="fake")(x), {"aten.sin"}, False, backend._Target())
    pieces = {name: [str(n.target) for n in child.gm.graph.nodes if n.op == "call_function"] for name, child in fused.named_children()}
    assert [sorted(ops) for ops in pieces.values()] == [["aten.mul.Tensor"], ["aten.add.Tensor", "aten.exp.default", "aten.mul.Tensor"], ["aten.add.Tensor"]], pieces
    for got, want in zip(fused(x), f(x)):
        torch.testing.assert_close(got, want)


def test_partitioned_graph_pieces_compile_ahead_for_the_layouts_they_get(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_compile_ahead`: at a partitioned graph's first call every piece starts compiling on a
    worker thread for the layouts its inputs will have (a transposed input here); a piece whose
    inputs then come laid out otherwise is compiled again for them, with the right values."""
    from torch.fx.experimental.proxy_tensor import make_fx

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))

    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = x * 2
        return (a.sin() + 1) * a.exp(), a

    x = torch.randn(6, 8).t()
    graph = make_fx(f, tracing_mode="fake")(x)
    for guessed, missed in ((x, 0), (x.contiguous(), 1)):
        fused = backend._partition(copy.deepcopy(graph), {"aten.sin"}, False, backend._Target())
        before = dict(backend.stats)
        backend._compile_ahead(fused, [guessed])
        assert all(child.pending is not None for child in fused.children())
        for got, want in zip(fused(x), f(x)):
            torch.testing.assert_close(got, want)
            assert got.stride() == want.stride()
        assert backend.stats["ahead_missed"] - before["ahead_missed"] == missed
        assert backend.stats["ahead"] - before["ahead"] == 2 - missed


def test_partitioned_pieces_compile_under_another_default_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `torch.set_default_device` set elsewhere, a conv net of CPU tensors still compiles
    its pieces (their example inputs, and the tensors Ember allocates for CPU graphs, are made on
    the CPU, not the default device)."""
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3)).eval()
    x = torch.randn(2, 3, 16, 16)
    before = dict(backend.stats)
    torch.set_default_device("meta")
    try:
        got = torch.compile(m, backend="ember")(x)
    finally:
        torch.set_default_device(None)
    torch.testing.assert_close(got, m(x))
    assert backend.stats["fallbacks"] == before["fallbacks"] and backend.stats["ahead"] > before["ahead"]


def test_a_forked_child_compiles_its_own_pieces(tmp_path: Path) -> None:
    """The compile worker threads are the parent's: a forked child (a DataLoader worker) that
    compiles a partitioned graph starts a pool of its own (it waited forever on the parent's)."""
    script = tmp_path / "fork.py"
    script.write_text(
        "import os, torch\n"
        "from ember import backend\n"
        "m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3)).requires_grad_(False)\n"
        "run = torch.compile(m, backend='ember', dynamic=False)\n"
        "x = torch.randn(2, 3, 16, 16)\n"
        "torch.testing.assert_close(run(x), m(x))\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    torch.set_num_threads(1)  # as a DataLoader worker: OpenMP's team is the parent's too\n"
        "    y = torch.randn(3, 3, 12, 12)\n"
        "    torch.testing.assert_close(run(y), m(y))\n"
        "    os._exit(0 if backend.stats['ahead'] >= 2 else 3)\n"
        "print('child', os.waitpid(pid, 0)[1])\n"
    )
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "child 0" in r.stdout, r.stdout + r.stderr[-2000:]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "channels_last"])
def test_as_strided_scatter_into_a_computed_tensor_uses_its_storage_layout(layout: str) -> None:
    """`as_strided_scatter` addresses its `self`'s storage: for a computed `self` that is a dense
    permutation (a transpose, channels-last), the positions are in that storage order, and the
    result keeps `self`'s layout. Compiled (no fallback), values as eager's."""

    def f(x: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        base = x * 2
        if layout == "transposed":
            base = base.transpose(1, 2)
        elif layout == "channels_last":
            base = base.contiguous(memory_format=torch.channels_last)
        return torch.as_strided_scatter(base, src, (2, 3, 2), (12, 1, 4), 1) + 1

    torch.manual_seed(0)
    x, src = torch.randn(2, 3, 2, 2) if layout == "channels_last" else torch.randn(2, 4, 3), torch.randn(2, 3, 2)
    if layout == "channels_last":
        x = x.reshape(2, 3, 2, 2)
    before = dict(backend.stats)
    got = torch.compile(f, backend="ember", dynamic=False)(x, src)
    assert backend.stats["fallbacks"] == before["fallbacks"]
    torch.testing.assert_close(got, f(x, src))
