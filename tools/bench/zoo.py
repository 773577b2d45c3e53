#!/usr/bin/env python3
"""Model zoo: many architectures, random weights, through every Ember target (issue 19).

Builds models from small configs with random weights (nothing is downloaded):
`transformers` model classes, one per model type (decoder, encoder, seq2seq, vision,
audio), and every `torchvision.models` builder (classification, detection, segmentation,
video, optical flow). Each model is exported with Ember's exporter (ember.export:
torch.export + run_decompositions, a .pt2 and an .npz of inputs and eager outputs), then
compiled and run on each target (`ember compile --target T`, `ember run`) and compared
with torch eager at the output dtype's tolerance (tools/bench/opinfo/compare.py).
Writes tools/bench/results/zoo.md and zoo.png.

    python tools/bench/zoo.py                       # everything (resumable)
    python tools/bench/zoo.py --subset ci           # the CI subset (test_zoo.py)
    python tools/bench/zoo.py --models 'tv/resnet' --targets cpu
    python tools/bench/zoo.py --only hf/gpt2        # run one model again; the report keeps the rest
    python tools/bench/zoo.py --rerun-failed        # redo every (model, target) that did not pass
    python tools/bench/zoo.py --report-only         # rewrite zoo.md/zoo.png from the cache

Results are cached per model in CACHE/results/NAME.json (default ~/.cache/ember/zoo), with
the .pt2/.npz and the artifacts of failures in CACHE/work/NAME/. An export is keyed by the
model's spec, how this script builds that source's models, the library versions and
ember.export; a target's result by the export and the ember binary (and ember.xla): a rerun
redoes only what changed. A model that cannot be built (the config or the inputs this
script makes do not suit it, or over MAX_PARAMS) is skipped and listed with the reason; it
is not counted.

Each export runs in a persistent worker process (torch and transformers imported once;
restarted after a crash or a timeout), each ember step in its own process, with timeouts
(export, compile and run 300 s each). The full set (399 model types and builders, 328 of
which built, in the first run) took 58 min on 2 shared cores with --jobs 2, most of it the
tpu and trainium runs (each `ember run` starts Python and jax). Set TMPDIR (Inductor's files)
and EMBER_PYTHON (the Python with jax for tpu/trainium runs; default: this one).

Per (model, target) the result is one of: pass; wrong (the numbers differ from eager:
max abs diff); compile error; run error; panic (a Rust panic or a signal); timeout; or
export error (torch.export failed, for every target). Errors keep their first useful line.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import hashlib
import json
import os
import platform
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PYPKG = ROOT / "tools" / "python" / "python"
sys.path[:0] = [str(HERE), str(PYPKG)]

from opinfo.classify import failure_reason  # noqa: E402
from opinfo.compare import compare_lists, read_outputs  # noqa: E402
from opinfo.stages import _ember_error, _signal_name  # noqa: E402

HARNESS_VERSION = 1  # bump to invalidate every cached result
TARGETS = ["cpu", "tpu", "trainium"]
DEFAULT_CACHE = Path(os.path.expanduser("~/.cache/ember/zoo"))
DEFAULT_OUT = HERE / "results"
EXPORT_TIMEOUT = 300.0
COMPILE_TIMEOUT = 300.0
RUN_TIMEOUT = 300.0
THREADS = 2  # per ember process (RAYON_NUM_THREADS) and torch in the export worker
# Random weights of a 150M-parameter model are 600 MB per copy (eager, export, weights.bin);
# bigger builders (vit_h_14, regnet_y_128gf) are skipped, not narrowed. 150M keeps the VGGs,
# whose classifier alone is 120M.
MAX_PARAMS = 150_000_000
# The CI subset: small models that pass on every target in a few seconds each.
SUBSETS = {"ci": ["hf/gpt2", "hf/llama", "hf/bert", "hf/t5", "hf/vit"]}

STATUSES = ["pass", "wrong", "compile error", "run error", "panic", "timeout", "export error"]
MARK = "@@zoo@@ "  # prefix of the worker's result lines (models may print to stdout)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# The models: specs are plain dicts (JSON-able), sent to the export worker and cached.

# Small values for the config fields of transformers models, applied only to fields the
# model type's default config has (names differ between model types: n_embd, d_model, ...).
HF_SMALL: dict[str, Any] = dict(
    vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
    intermediate_size=64, max_position_embeddings=128, head_dim=16,
    n_embd=32, n_layer=2, n_head=2, n_inner=64, n_positions=128, n_ctx=128,
    d_model=32, d_ff=64, d_kv=16, d_inner=64, num_layers=2, num_heads=2, num_decoder_layers=2,
    encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
    encoder_ffn_dim=64, decoder_ffn_dim=64, ffn_dim=64, embed_dim=32, embedding_size=32,
    hidden_dim=64, encoder_hidden_size=32, decoder_hidden_size=32,
    num_local_experts=4, num_experts=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
    shared_expert_intermediate_size=32, kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=8,
    qk_nope_head_dim=8, v_head_dim=16, first_k_dense_replace=1,
    image_size=32, patch_size=4, num_channels=3, window_size=4, num_labels=4,
    max_source_positions=32, max_target_positions=128, num_mel_bins=16, conv_dim=32,
    num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, classifier_proj_size=32,
    tdnn_dim=32, xvector_output_dim=32, codevector_dim=32, proj_codevector_dim=32,
    use_cache=False,
)
TEXT_LEN = 8
AUDIO_SAMPLES = 1600  # wav2vec2-style convolutional front ends reduce by 320: 5 frames

# transformers families, in priority order: a model type is in the first family whose
# mapping has it. (family, MODEL_FOR_..._MAPPING_NAMES)
HF_FAMILIES = [
    ("hf seq2seq", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES"),
    ("hf audio", "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES"),
    ("hf audio", "MODEL_FOR_CTC_MAPPING_NAMES"),
    ("hf audio", "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES"),
    # Before the decoders: bert, roberta, electra... also have a causal-LM head (is_decoder).
    ("hf encoder", "MODEL_FOR_MASKED_LM_MAPPING_NAMES"),
    ("hf decoder", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"),
    ("hf vision", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES"),
]
# Image-text models need nested text/vision configs and several inputs: not in the zoo.
HF_MULTIMODAL = ["MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES"]

TV_FAMILIES = [
    ("tv classification", "torchvision.models"),
    ("tv detection", "torchvision.models.detection"),
    ("tv segmentation", "torchvision.models.segmentation"),
    ("tv video", "torchvision.models.video"),
    ("tv optical flow", "torchvision.models.optical_flow"),
]
TV_IMAGE = 64
# Builders whose minimum input or fixed size is not TV_IMAGE.
TV_INPUT = {
    "inception_v3": [1, 3, 96, 96],  # its stem needs at least 75x75
    "maxvit_t": [1, 3, 224, 224],    # every stage's grid divisible by the 7x7 partition
    "mvit_v1_b": [1, 3, 16, 224, 224], "mvit_v2_s": [1, 3, 16, 224, 224],  # fixed size
    "s3d": [1, 3, 8, 64, 64],
    "raft_small": [1, 3, 128, 128], "raft_large": [1, 3, 128, 128],  # its correlation pyramid needs 128
}
# Builder keyword arguments that shrink a model (when the builder takes them).
TV_KWARGS = {
    "vit_b_16": dict(image_size=64), "vit_b_32": dict(image_size=64), "vit_l_16": dict(image_size=64),
    "vit_l_32": dict(image_size=64), "vit_h_14": dict(image_size=56),
}
RAFT_FLOW_UPDATES = 2  # RAFT's refinement iterations (12 by default, each the same ops)


def hf_specs() -> list[dict[str, Any]]:
    from transformers.models.auto import configuration_auto, modeling_auto

    multimodal = set()
    for m in HF_MULTIMODAL:
        multimodal |= set(getattr(modeling_auto, m, {}))
    specs, seen = [], set()
    for family, mapping in HF_FAMILIES:
        names = getattr(modeling_auto, mapping, {})
        for model_type in sorted(names):
            cls = names[model_type]
            if model_type in seen or model_type in multimodal or not isinstance(cls, str):
                continue
            if model_type not in configuration_auto.CONFIG_MAPPING_NAMES:
                continue
            seen.add(model_type)
            specs.append(dict(name=f"hf/{model_type}", source="transformers", family=family,
                              model_type=model_type, cls=cls))
    return specs


def tv_specs() -> list[dict[str, Any]]:
    import importlib

    from torchvision.models import list_models

    specs, seen = [], set()
    for family, module in TV_FAMILIES:
        for builder in sorted(list_models(module=importlib.import_module(module))):
            if builder in seen:
                continue
            seen.add(builder)
            specs.append(dict(name=f"tv/{builder}", source="torchvision", family=family, builder=builder,
                              module=module, kwargs=TV_KWARGS.get(builder, {}), input=TV_INPUT.get(builder)))
    return specs


def all_specs(prefixes: tuple[str, ...] = ("hf/", "tv/")) -> tuple[list[dict[str, Any]], list[str]]:
    """(specs, notes on the sources that could not be listed) of the sources whose name prefix
    is in `prefixes` (the CI subset does not need torchvision installed)."""
    specs, notes = [], []
    for prefix, source, fn in (("hf/", "transformers", hf_specs), ("tv/", "torchvision", tv_specs)):
        if prefix not in prefixes:
            continue
        try:
            specs += fn()
        except Exception as exc:  # noqa: BLE001 - one missing library must not stop the other
            notes.append(f"{source}: cannot list models: {type(exc).__name__}: {exc}")
    return specs, notes


# ---------------------------------------------------------------------------------------
# Building a model (in the export worker).

class BuildError(Exception):
    """This script cannot make the model or its inputs: the model is skipped, not counted."""


def _shrink_list(key: str, value: list[Any]) -> list[Any] | None:
    """Small values for a per-stage list field of a vision or audio config (None: leave it).
    Widths stay: they must agree with per-stage head counts and with each other."""
    n = len(value)
    if not n or not all(isinstance(v, int) for v in value):
        return None
    if key in ("depths", "num_layers"):
        return [1] * n
    if key == "conv_dim":
        return [32] * n
    return None


def hf_config(spec: dict[str, Any]) -> Any:
    from transformers import AutoConfig

    default = AutoConfig.for_model(spec["model_type"])
    fields = set(default.to_dict()) | set(getattr(default, "attribute_map", {}))
    kwargs: dict[str, Any] = {}
    for key, value in HF_SMALL.items():
        if key not in fields:
            continue
        old = getattr(default, key, None)
        if isinstance(old, (list, tuple)):
            small = _shrink_list(key, list(old))
            if small is not None:
                kwargs[key] = small
        elif not isinstance(old, dict):
            kwargs[key] = value
    if isinstance(getattr(default, "depths", None), list):
        kwargs["depths"] = _shrink_list("depths", default.depths)
    if isinstance(getattr(default, "num_heads", None), list):
        kwargs.pop("embed_dim", None)  # per-stage heads (swin-like) must divide the stage widths
    if "qk_rope_head_dim" in fields:
        kwargs.pop("head_dim", None)  # MLA (deepseek) derives it from the rope/nope split
    config = AutoConfig.for_model(spec["model_type"], **kwargs)
    # Special token ids beyond the small vocabulary would index past the embedding.
    vocab = getattr(config, "vocab_size", None)
    if isinstance(vocab, int):
        for key in ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "sep_token_id",
                    "cls_token_id", "mask_token_id", "unk_token_id"):
            v = getattr(config, key, None)
            if isinstance(v, int) and v >= vocab:
                setattr(config, key, vocab - 1)
            elif isinstance(v, list):
                setattr(config, key, [min(x, vocab - 1) for x in v])
    return config


def _params(module: Any) -> int:
    return sum(p.numel() for p in module.parameters())


def _wrap(model: Any, keys: list[str]) -> Any:
    """The model as positional-in, flat-tuple-out (torch.export and Ember's npz want positional
    inputs and tensor outputs; transformers models take keywords and return ModelOutput)."""
    import torch
    from torch.utils import _pytree as pytree

    class Wrapped(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *args):
            out = self.model(**dict(zip(keys, args)))
            if hasattr(out, "to_tuple"):
                out = out.to_tuple()
            return tuple(t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor))

    return Wrapped()


def build_hf(spec: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
    import torch
    import transformers

    config = hf_config(spec)
    cls = getattr(transformers, spec["cls"], None)
    if cls is None:
        raise BuildError(f"transformers has no class {spec['cls']}")
    # A config field this script does not shrink can leave a model at full size: count on
    # the meta device before allocating it.
    with torch.device("meta"):
        n = _params(cls(config))
    if n > MAX_PARAMS:
        raise BuildError(f"{n / 1e6:.0f}M parameters after shrinking the config (limit {MAX_PARAMS / 1e6:.0f}M)")
    model = cls(config).eval()
    vocab = getattr(config, "vocab_size", None) or 256
    ids = lambda: torch.randint(0, min(vocab, 256), (1, TEXT_LEN))  # noqa: E731
    main = getattr(model, "main_input_name", "input_ids")
    if main == "input_ids":
        inputs = {"input_ids": ids()}
    elif main == "pixel_values":
        size = getattr(config, "image_size", 32)
        size = size[0] if isinstance(size, (list, tuple)) else size
        inputs = {"pixel_values": torch.randn(1, getattr(config, "num_channels", 3), size, size)}
    elif main == "input_values":
        inputs = {"input_values": torch.randn(1, AUDIO_SAMPLES)}
    elif main == "input_features":
        if hasattr(config, "num_mel_bins") and hasattr(config, "max_source_positions"):
            # whisper-style: (batch, mel bins, frames), two frames per encoder position
            inputs = {"input_features": torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions)}
        elif hasattr(config, "input_feat_per_channel"):
            feats = config.input_feat_per_channel * getattr(config, "input_channels", 1)
            inputs = {"input_features": torch.randn(1, 64, feats)}
        else:
            raise BuildError("input_features of an unknown layout")
    else:
        raise BuildError(f"main input {main!r} is not one this script makes")
    if spec["family"] in ("hf seq2seq",) or (spec["family"] == "hf audio" and config.is_encoder_decoder):
        inputs["decoder_input_ids"] = ids()
    return _wrap(model, list(inputs)), tuple(inputs.values())


def FewFlowUpdates(raft: Any) -> Any:  # noqa: N802 - builds a module
    """RAFT with RAFT_FLOW_UPDATES refinement iterations (a forward argument, not a builder's)."""
    import torch

    class Few(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.raft = raft

        def forward(self, image1, image2):
            return tuple(self.raft(image1, image2, num_flow_updates=RAFT_FLOW_UPDATES))

    return Few()


def build_tv(spec: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
    import importlib
    import inspect

    import torch

    module = importlib.import_module(spec["module"])
    builder = getattr(module, spec["builder"])
    params = inspect.signature(builder).parameters
    kwargs = dict(spec["kwargs"])
    family = spec["family"]
    if family == "tv classification" or family == "tv video":
        kwargs.setdefault("num_classes", 10)
    elif family == "tv detection":
        # weights_backbone=None: the default would download ImageNet weights.
        kwargs.update(weights_backbone=None, num_classes=3, min_size=TV_IMAGE, max_size=TV_IMAGE)
    elif family == "tv segmentation":
        kwargs.update(weights_backbone=None, num_classes=3, aux_loss=False)
    if "weights" in params or any(p.kind == p.VAR_KEYWORD for p in params.values()):
        kwargs["weights"] = None
    try:
        with torch.device("meta"):
            model = builder(**kwargs)
    except NotImplementedError:  # some builders (regnet) copy tensors: count a real one
        model = builder(**kwargs)
    n = _params(model)
    if n > MAX_PARAMS:
        raise BuildError(f"{n / 1e6:.0f}M parameters (limit {MAX_PARAMS / 1e6:.0f}M)")
    model = builder(**kwargs).eval()
    if family == "tv detection":
        return model, ([torch.rand(3, TV_IMAGE, TV_IMAGE)],)
    if family == "tv optical flow":
        shape = spec["input"] or [1, 3, TV_IMAGE, TV_IMAGE]
        return FewFlowUpdates(model), (torch.rand(*shape), torch.rand(*shape))
    shape = spec["input"] or ([1, 3, 4, TV_IMAGE, TV_IMAGE] if family == "tv video" else [1, 3, TV_IMAGE, TV_IMAGE])
    return model, (torch.randn(*shape),)


def export_one(spec: dict[str, Any], pt2: Path, npz: Path) -> dict[str, Any]:
    """Build, check eager, export: the worker's answer for one model."""
    import torch

    from ember.export import export_model, seed_everything

    t0 = time.monotonic()
    seed_everything(0)
    try:
        module, inputs = (build_hf if spec["source"] == "transformers" else build_tv)(spec)
        with torch.no_grad():  # a failing eager call means the inputs do not suit the model
            module(*inputs)
    except BuildError as exc:
        return dict(status="build error", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - any failure to build is a skip with its reason
        return dict(status="build error", error=_exc_line(exc))
    params = _params(module)
    try:
        res = export_model(lambda: (module, inputs), pt2, npz, seed=0)
    except Exception as exc:  # noqa: BLE001
        return dict(status="export error", error=_exc_line(exc), params=params,
                    seconds=time.monotonic() - t0)
    ep = torch.export.load(str(pt2))
    ops = Counter(str(n.target) for n in ep.graph.nodes if n.op == "call_function")
    return dict(status="exported", params=params, n_ops=sum(ops.values()), op_kinds=len(ops),
                export_diff=res.max_abs_diff, inputs=res.num_inputs, outputs=res.num_outputs,
                seconds=time.monotonic() - t0)


def _exc_line(exc: BaseException) -> str:
    """`Type: first line`: the first line of a Python exception, where it usually says what (and
    the next one when the first only announces it, ending in a colon)."""
    lines = [l.strip() for l in str(exc).strip().splitlines() if l.strip()]
    first = " ".join(lines[:2]) if len(lines) > 1 and lines[0].endswith(":") else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {first}"[:300]


def eval_float64(spec: dict[str, Any], npz: Path, out: Path) -> dict[str, Any]:
    """The model in float64 on the .npz's inputs (floats widened), outputs written to OUT as
    out0..: a reference nearer the exact values than eager float32, to tell for a wrong
    result whether Ember or eager is farther from them."""
    import torch
    from torch.utils import _pytree as pytree

    from ember.export import seed_everything, write_npz

    from opinfo.compare import npz_arrays, to_torch

    seed_everything(0)
    module, _ = (build_hf if spec["source"] == "transformers" else build_tv)(spec)
    module = module.double()
    args = [to_torch(a) for a in npz_arrays(npz, "arg")]
    args = [a.double() if a.is_floating_point() else a for a in args]
    if spec["family"] == "tv detection":  # its inputs are a list of images (flattened in the .npz)
        args = [args]
    with torch.no_grad():
        got = module(*args)
    leaves = [t for t in pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    write_npz(out, {f"out{i}": t.detach().numpy() for i, t in enumerate(leaves)})
    return dict(status="ok", outputs=len(leaves))


def worker_main() -> int:
    """The export worker: one JSON request per stdin line, one MARK-prefixed answer per line.
    One process exports many models, so torch and transformers are imported once."""
    import torch

    torch.set_num_threads(THREADS)
    import warnings

    warnings.filterwarnings("ignore")
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever a model prints must not be taken for an answer
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req.get("op") == "float64":
                ans = eval_float64(req["spec"], Path(req["npz"]), Path(req["out"]))
            else:
                ans = export_one(req["spec"], Path(req["pt2"]), Path(req["npz"]))
        except Exception as exc:  # noqa: BLE001
            failed = "error" if req.get("op") == "float64" else "export error"
            ans = dict(status=failed, error=_exc_line(exc), detail=traceback.format_exc()[-2000:])
        out.write(MARK + json.dumps(ans) + "\n")
        out.flush()
        import gc

        gc.collect()
    return 0


class ExportWorker:
    """A persistent `zoo.py --_worker` process, restarted after a crash or a timeout."""

    def __init__(self, log_path: Path, env: dict[str, str]) -> None:
        self.log_path, self.env, self.proc = log_path, env, None

    def _start(self) -> None:
        self.log = open(self.log_path, "a")  # noqa: SIM115 - kept open with the process
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=self.env, start_new_session=True)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
            self.log.close()

    def export(self, spec: dict[str, Any], pt2: Path, npz: Path, timeout: float) -> dict[str, Any]:
        return self.request(dict(spec=spec, pt2=str(pt2), npz=str(npz)), timeout)

    def float64(self, spec: dict[str, Any], npz: Path, out: Path, timeout: float) -> dict[str, Any]:
        return self.request(dict(op="float64", spec=spec, npz=str(npz), out=str(out)), timeout)

    def request(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self._start()
        self.log.write(f"--- {req.get('op', 'export')} {req['spec']['name']}\n")
        self.log.flush()
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return dict(status="export error", kind="timeout", error=f"timeout: export ran over {timeout:.0f}s")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:  # the worker died (a segfault in torch, the OOM killer)
                rc = self.proc.wait()
                self.stop()
                why = _signal_name(rc) if rc < 0 else f"exit code {rc}"
                return dict(status="export error", kind="crash", error=f"the export worker died ({why})")
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])


# ---------------------------------------------------------------------------------------
# Compiling and running on the targets.

def run_ember(ember: str, argv: list[str], timeout: float, env: dict[str, str]) -> tuple[str | None, str | None, float]:
    """(None, None, seconds) on success, else (status, first useful error line, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([ember, *argv], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "timeout", f"timeout: ember {argv[0]} ran over {timeout:.0f}s", timeout
    dt = time.monotonic() - t0
    if p.returncode == 0:
        return None, None, dt
    text = p.stderr + ("\n" + p.stdout if p.stdout.strip() else "")
    head = error_line(text)
    if p.returncode < 0:
        return "panic", f"{_signal_name(p.returncode)}: {head}", dt
    if " panicked at " in text:
        return "panic", head if head.startswith("panic") else f"panic: {head}", dt
    return ("compile error" if argv[0] == "compile" else "run error"), head, dt


def error_line(text: str) -> str:
    """The useful line of a failure: Ember's `error:` line (its second line when the first only
    says which step failed), a panic's message, or a Python traceback's last line (tpu and
    trainium run through `python -m ember.xla`)."""
    lines = [l.rstrip() for l in text.strip().splitlines() if l.strip()]
    if not lines:
        return "(no message)"
    if any(l.startswith("Traceback (most recent call last)") for l in lines):
        exc = [l.strip() for l in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b", l.strip())]
        if exc:
            return exc[-1][:300]
    head, _ = _ember_error(text)
    i = next((i for i, l in enumerate(lines) if l.startswith("error")), None)
    if i is not None and head.rstrip().endswith(":") and i + 1 < len(lines):
        head = head.rstrip() + " " + lines[i + 1].strip()
    return head[:300]


def run_target(ember: str, target: str, pt2: Path, npz: Path, work: Path, env: dict[str, str]) -> dict[str, Any]:
    art, got = work / f"art-{target}", work / f"got-{target}.npz"
    shutil.rmtree(art, ignore_errors=True)
    got.unlink(missing_ok=True)
    status, err, t_compile = run_ember(ember, ["compile", str(pt2), "--target", target, "-o", str(art)],
                                       COMPILE_TIMEOUT, env)
    res: dict[str, Any] = dict(compile_s=round(t_compile, 2))
    if status:
        return dict(res, status=status, error=err, step="compile")
    status, err, t_run = run_ember(ember, ["run", str(art), "--inputs", str(npz), "--outputs", str(got)],
                                   RUN_TIMEOUT, env)
    res["run_s"] = round(t_run, 2)
    if status:
        return dict(res, status=status, error=err, step="run")
    try:
        why, info = compare_lists(read_outputs(got), read_outputs(npz))
    except Exception as exc:  # noqa: BLE001 - an unreadable or incomplete got.npz
        return dict(res, status="run error", error=f"cannot read the outputs: {_exc_line(exc)}", step="run")
    res["max_abs"] = info.get("max_abs")
    res["max_rel"] = info.get("max_rel")
    if why is not None:
        return dict(res, status="wrong", error=why, step="compare")
    # Artifacts of failures stay for a look; a pass's are only disk.
    shutil.rmtree(art, ignore_errors=True)
    got.unlink(missing_ok=True)
    return dict(res, status="pass")


# ---------------------------------------------------------------------------------------
# The cache and the run.

def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("torch", "transformers", "torchvision", "jax", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def build_recipe(source: str) -> str:
    """A fingerprint of how this script builds and exports a source's models (not of how it
    reports), so that an edit to the configs or the inputs redoes those exports and nothing
    else does."""
    import inspect

    if source == "transformers":
        fns = [_shrink_list, hf_config, _wrap, build_hf]
        consts = [HF_SMALL, TEXT_LEN, AUDIO_SAMPLES]
    else:
        fns = [FewFlowUpdates, build_tv]
        consts = [TV_IMAGE, TV_INPUT, TV_KWARGS, RAFT_FLOW_UPDATES]
    # MAX_PARAMS is left out: it decides which models are skipped, not how the others export.
    return key_of([inspect.getsource(f) for f in fns + [export_one]], repr(consts))


def git_rev(tree: Path | None) -> str:
    if tree is None:
        return ""
    p = subprocess.run(["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else ""


def key_of(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def safe_name(name: str) -> str:
    return name.replace("/", "__")


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cache = Path(args.cache).expanduser()
        (self.cache / "results").mkdir(parents=True, exist_ok=True)
        (self.cache / "work").mkdir(parents=True, exist_ok=True)
        self.versions = versions()
        self.ember = args.ember
        self.ember_sha = sha256_file(Path(shutil.which(self.ember) or self.ember))[:16]
        py_sources = {p.name: sha256_file(p)[:16] for p in sorted((PYPKG / "ember").glob("*.py"))}
        # The export depends on ember.export; tpu and trainium runs on ember.xla.
        self.export_salt = key_of(HARNESS_VERSION, self.versions, py_sources.get("export.py"),
                                  sha256_file(Path(__file__))[:16] if args.strict_cache else None)
        self.target_salt = key_of(self.ember_sha, py_sources.get("xla.py"), py_sources.get("dtypes.py"))
        tmp = Path(os.environ.get("TMPDIR") or self.cache / "tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        pythonpath = os.pathsep.join([str(PYPKG), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=pythonpath, RAYON_NUM_THREADS=str(THREADS),
                        OMP_NUM_THREADS=str(THREADS), EMBER_PYTHON=os.environ.get("EMBER_PYTHON", sys.executable),
                        TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        # Once, from the code this process runs (getsource would read an edited file later).
        self.recipes = {src: build_recipe(src) for src in ("transformers", "torchvision")}
        self.local = threading.local()
        self.workers: list[ExportWorker] = []
        self.lock = threading.Lock()

    def result_path(self, name: str) -> Path:
        return self.cache / "results" / f"{safe_name(name)}.json"

    def load(self, name: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.result_path(name).read_text())
        except (OSError, ValueError):
            return None

    def save(self, res: dict[str, Any]) -> None:
        path = self.result_path(res["name"])
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)

    def worker(self) -> ExportWorker:
        w = getattr(self.local, "worker", None)
        if w is None:
            w = ExportWorker(self.cache / f"worker-{threading.get_ident()}.log", self.env)
            self.local.worker = w
            with self.lock:
                self.workers.append(w)
        return w

    def run_model(self, spec: dict[str, Any], force: bool) -> dict[str, Any]:
        args = self.args
        name = spec["name"]
        work = self.cache / "work" / safe_name(name)
        work.mkdir(parents=True, exist_ok=True)
        pt2, npz = work / "model.pt2", work / "model.npz"
        export_key = key_of(self.export_salt, spec, self.recipes[spec["source"]])
        old = self.load(name) or {}
        if old.get("export_key") != export_key:
            old = {}
        redo_export = (force or not old or not pt2.exists() and old["export"]["status"] == "exported"
                       or args.rerun_failed and old["export"]["status"] != "exported")
        if redo_export:
            (work / "ref64.npz").unlink(missing_ok=True)
            log(f"[{name}] export")
            exp = self.worker().export(spec, pt2, npz, EXPORT_TIMEOUT)
            res = dict(name=name, family=spec["family"], spec=spec, export_key=export_key, export=exp, targets={})
        else:
            res = dict(old, spec=spec, family=spec["family"])
        exp = res["export"]
        if exp["status"] != "exported":
            log(f"[{name}] {exp['status']}: {exp.get('error')}")
            res["targets"] = {}
            self.save(res)
            return res
        target_key = key_of(self.target_salt, export_key)
        for target in args.targets:
            prev = res["targets"].get(target)
            if (prev and prev.get("key") == target_key and not force and not redo_export
                    and not (args.rerun_failed and prev["status"] != "pass")):
                continue
            log(f"[{name}] {target}")
            r = run_target(self.ember, target, pt2, npz, work, self.env)
            r["key"] = target_key
            res["targets"][target] = r
            log(f"[{name}] {target}: {r['status']}" + (f": {r['error']}" if r.get("error") else ""))
            self.save(res)
        wrong = [t for t, r in res["targets"].items() if r["status"] == "wrong" and "float64" not in r]
        if wrong:
            self.triage(spec, res, work, wrong)
        self.save(res)
        return res

    def triage(self, spec: dict[str, Any], res: dict[str, Any], work: Path, wrong: list[str]) -> None:
        """For each wrong target: the max abs error of Ember's outputs and of eager's from the
        model run in float64. Similar errors mean float32 rounding amplified by the model (deep
        random-weight nets do that), not a miscompile; Ember far worse than eager means a bug."""
        import numpy as np

        ref = work / "ref64.npz"
        if not ref.exists():
            log(f"[{spec['name']}] float64 reference")
            ans = self.worker().float64(spec, work / "model.npz", ref, EXPORT_TIMEOUT)
            if ans.get("status") != "ok":
                for t in wrong:
                    res["targets"][t]["float64"] = dict(error=ans.get("error"))
                return
        try:
            exact, eager = read_outputs(ref), read_outputs(work / "model.npz")
            for t in wrong:
                got = read_outputs(work / f"got-{t}.npz")
                errs = dict(ember=0.0, eager=0.0)
                for g, w, x in zip(got, eager, exact):
                    if w.dtype.kind != "f" or g.shape != x.shape or w.shape != x.shape:
                        continue
                    x = x.astype(np.float64)
                    with np.errstate(invalid="ignore"):
                        errs["ember"] = max(errs["ember"], float(np.nanmax(np.abs(g.astype(np.float64) - x))))
                        errs["eager"] = max(errs["eager"], float(np.nanmax(np.abs(w.astype(np.float64) - x))))
                res["targets"][t]["float64"] = errs
        except Exception as exc:  # noqa: BLE001 - triage is best effort
            for t in wrong:
                res["targets"][t]["float64"] = dict(error=_exc_line(exc))

    def close(self) -> None:
        for w in self.workers:
            w.stop()


# ---------------------------------------------------------------------------------------
# The report.

def md(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def cell(res: dict[str, Any], target: str, current: bool = True) -> tuple[str, str | None]:
    """(status, error line) of a model on a target; export failures count for every target."""
    exp = res["export"]
    if exp["status"] == "export error":
        return ("timeout" if exp.get("kind") == "timeout" else "export error"), exp.get("error")
    t = res.get("targets", {}).get(target)
    if t is None:
        return "not run", None
    if t["status"] == "wrong":
        return "wrong", t.get("error")
    return t["status"], t.get("error")


def cause(status: str, error: str | None) -> str:
    """The group key of a failure: the status and the error line without names and numbers."""
    if status == "wrong":
        return "wrong result"
    if status == "timeout":
        return "timeout: " + re.sub(r"\d+s", "Ns", error or "")
    key = failure_reason(error or "")
    if status == "export error":
        # Python exception lines: keep the type and the message's start, not its values.
        key = re.sub(r"'[^']*'", "'…'", key)
    key = re.sub(r"`[^`]*\.(pt2|npz)`", "`…`", key)
    return f"{status}: {key[:200]}"


def fmt_cell(status: str, error: str | None, t: dict[str, Any] | None) -> str:
    if status == "pass":
        return "pass"
    if status == "wrong":
        mad = t.get("max_abs") if t else None
        return f"**WRONG** (max abs diff {mad:.3g})" if mad is not None else "**WRONG**"
    if status == "not run":
        return "-"
    err = error or ""
    return f"{status}: {md(err if len(err) <= 200 else err[:199] + '…')}"


def render(specs: list[dict[str, Any]], results: dict[str, dict[str, Any]], run: Run, targets: list[str],
           notes: list[str], load: tuple[float, float], argv: list[str]) -> tuple[str, dict[str, Any]]:
    v = run.versions
    git = git_rev(ROOT)
    # The compiler's rev is that of the tree the binary was built in (ROOT/target/debug/ember:
    # this one), which a copied binary does not tell: --note can.
    binary = Path(run.ember).resolve()
    tree = binary.parents[2] if len(binary.parents) > 2 and binary.parent.parent.name == "target" else None
    ember_rev = f"built in {tree} at {git_rev(tree)}" if tree and git_rev(tree) else "built outside a git tree"
    ember_ver = subprocess.run([run.ember, "--version"], capture_output=True, text=True).stdout.strip()
    done = [s for s in specs if s["name"] in results]
    skipped = [s for s in done if results[s["name"]]["export"]["status"] == "build error"]
    tried = [s for s in done if s not in skipped]
    partial = len(done) < len(specs) or any(cell(results[s["name"]], t)[0] == "not run" for s in tried for t in targets)
    lines = [
        "# Model zoo: Ember vs torch eager", "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- torch {v['torch']}, transformers {v['transformers']}, torchvision {v['torchvision']}, jax {v['jax']}",
        f"- Ember: {ember_ver or 'ember'} `{run.ember}` (sha256 {run.ember_sha}), {ember_rev}; zoo.py from tree "
        f"{git or '?'}",
        f"- machine: {os.cpu_count()} logical CPUs, {platform.machine()}; 1-min load average "
        + (f"when the report was written: {load[1]:.2f} (--report-only: the run's load is not known)"
           if run.args.report_only else f"at start / end: {load[0]:.2f} / {load[1]:.2f}")
        + f"; {THREADS} threads per step",
        f"- command: `python tools/bench/zoo.py {' '.join(argv)}`".rstrip(),
        "- models: random weights (seed 0), small configs, batch 1, fp32, eval mode; exported with "
        "`ember.export` (torch.export + run_decompositions); outputs compared with eager at the "
        "dtype's tolerance (float32: rtol 1e-4, atol 1e-5; tools/bench/opinfo/compare.py)",
        f"- {len(tried)} architectures tried ({len(skipped)} more could not be built and are listed at the end, "
        "not counted)",
    ]
    if partial:
        n_complete = sum(all(cell(results[s["name"]], t)[0] != "not run" for t in targets) for s in tried)
        lines.append(f"- **PARTIAL RUN**: {len(done)} of {len(specs)} selected models reached, "
                     f"{n_complete} with every target done; `-` marks what has not run")
    stale = 0
    for s in done:
        res = results[s["name"]]
        if res.get("export_key") != key_of(run.export_salt, s, run.recipes[s["source"]]):
            stale += 1
        else:
            want = key_of(run.target_salt, res["export_key"])
            stale += any(r.get("key") != want for r in res.get("targets", {}).values())
    if stale:
        lines.append(f"- **{stale} model(s) have results from another ember binary, ember.export or zoo.py "
                     "recipe** than the current ones (a rerun without --report-only redoes them)")
    lines += [f"- note: {n}" for n in notes + run.args.note]

    # Pass rates.
    def counts(group: list[dict[str, Any]], target: str) -> Counter:
        return Counter(cell(results[s["name"]], target)[0] for s in group)

    lines += ["", "## Pass rate", "",
              "Of the architectures tried (an export error counts as a failure on every target).", "",
              "| target | pass | " + " | ".join(STATUSES[1:]) + " | pass rate |",
              "|---|" + "---|" * (len(STATUSES) + 1)]
    summary: dict[str, Any] = {}
    for t in targets:
        c = counts(tried, t)
        rate = c["pass"] / len(tried) if tried else 0.0
        summary[t] = rate
        lines.append(f"| {t} | " + " | ".join(str(c[s]) for s in STATUSES) + f" | {100 * rate:.0f}% |")
    exported = [s for s in tried if results[s["name"]]["export"]["status"] == "exported"]
    lines += ["", f"{len(exported)} of {len(tried)} exported; of those, pass: "
              + ", ".join(f"{t} {counts(exported, t)['pass']}/{len(exported)}" for t in targets) + "."]

    families = sorted({s["family"] for s in tried}, key=lambda f: (not f.startswith("hf"), f))
    lines += ["", "## Pass rate per family", "",
              "| family | tried | exported | " + " | ".join(targets) + " |", "|---|---|---|" + "---|" * len(targets)]
    fam_rates: dict[str, dict[str, float]] = {}
    for f in families:
        group = [s for s in tried if s["family"] == f]
        ex = sum(results[s["name"]]["export"]["status"] == "exported" for s in group)
        row = []
        fam_rates[f] = {}
        for t in targets:
            p = counts(group, t)["pass"]
            fam_rates[f][t] = p / len(group)
            row.append(f"{p}/{len(group)} ({100 * p / len(group):.0f}%)")
        lines.append(f"| {f} | {len(group)} | {ex} | " + " | ".join(row) + " |")

    # Failure causes.
    groups: dict[str, dict[str, Any]] = defaultdict(lambda: dict(n=0, targets=Counter(), models=[], example=""))
    for s in tried:
        res = results[s["name"]]
        if res["export"]["status"] != "exported":
            status, err = cell(res, targets[0])
            g = groups[cause(status, err)]
            g["n"] += 1
            g["targets"]["export"] += 1
            g["models"].append(s["name"])
            g["example"] = g["example"] or err
            continue
        for t in targets:
            status, err = cell(res, t)
            if status in ("pass", "not run"):
                continue
            g = groups[cause(status, err)]
            g["n"] += 1
            g["targets"][t] += 1
            if s["name"] not in g["models"]:
                g["models"].append(s["name"])
            g["example"] = g["example"] or err
    lines += ["", "## Failure causes", "",
              "(model, target) failures grouped by the normalized first error line; an export error counts "
              "once per model.", "",
              "| count | where | cause | example (first model's line) | models |", "|---|---|---|---|---|"]
    for key, g in sorted(groups.items(), key=lambda kv: (-kv[1]["n"], kv[0])):
        where = ", ".join(f"{t} {n}" for t, n in sorted(g["targets"].items()))
        models = ", ".join(g["models"][:6]) + (f", … ({len(g['models'])})" if len(g["models"]) > 6 else "")
        lines.append(f"| {g['n']} | {where} | {md(key)} | {md(g['example'] or '')[:200]} | {models} |")

    wrong = [(s["name"], t, results[s["name"]]["targets"][t]) for s in exported for t in targets
             if cell(results[s["name"]], t)[0] == "wrong"]
    if wrong:
        lines += ["", "## Wrong results", "",
                  "Max abs/rel diff over the first output that differs. `export diff`: torch running the exported "
                  "(decomposed) graph vs eager (often 0: it calls the same kernels).", "",
                  "`vs float64`: the max abs error from the model run in float64 (same weights and inputs) of "
                  "Ember's outputs and of eager's; Ember within 2x of eager is float32 rounding amplified by "
                  "the model, not a miscompile.", "",
                  "| model | target | max abs diff | max rel diff | export diff | Ember / eager vs float64 | verdict "
                  "| first mismatch |", "|---|---|---|---|---|---|---|---|"]
        for name, t, r in wrong:
            ed = results[name]["export"].get("export_diff")
            rel = r.get("max_rel")
            f64 = r.get("float64") or {}
            if "ember" in f64:
                vs = f"{f64['ember']:.3g} / {f64['eager']:.3g}"
                verdict = "rounding (as near as eager)" if f64["ember"] <= 2 * f64["eager"] else "**Ember farther**"
            else:
                vs, verdict = md(f64.get("error") or "-"), "?"
            lines.append(f"| {name} | {t} | {r.get('max_abs') or 0:.3g} | {'-' if rel is None else f'{rel:.3g}'} | "
                         f"{'-' if ed is None else f'{ed:.3g}'} | {vs} | {verdict} | {md(r.get('error') or '')[:240]} |")
    panics = [(s["name"], t, cell(results[s["name"]], t)[1]) for s in exported for t in targets
              if cell(results[s["name"]], t)[0] == "panic"]
    if panics:
        lines += ["", "## Panics and signals", "", "| model | target | message |", "|---|---|---|"]
        lines += [f"| {name} | {t} | {md(err or '')[:240]} |" for name, t, err in panics]

    lines += ["", "## Models", "",
              "| model | family | ops | params | " + " | ".join(targets) + " |", "|---|---|---|---|" + "---|" * len(targets)]
    for s in sorted(tried, key=lambda s: (s["family"], s["name"])):
        res = results[s["name"]]
        exp = res["export"]
        ops = exp.get("n_ops", "-")
        params = f"{exp['params'] / 1e6:.2f}M" if exp.get("params") else "-"
        cells = [fmt_cell(*cell(res, t), res.get("targets", {}).get(t)) for t in targets]
        # The same failure on several targets (an import error, a missing op) is written once.
        cells = [c if i == 0 or c == "pass" or c != cells[0] else f"(same as {targets[0]})"
                 for i, c in enumerate(cells)]
        if exp["status"] != "exported":
            cells = [fmt_cell(*cell(res, targets[0]), None)] + ["(export)"] * (len(targets) - 1)
        lines.append(f"| {s['name']} | {s['family']} | {ops} | {params} | " + " | ".join(cells) + " |")
    not_reached = [s for s in specs if s["name"] not in results]
    if skipped:
        lines += ["", "## Not built (skipped, not counted)", "",
                  "This script could not make the model or inputs that suit it (from its small config).", "",
                  "| model | family | reason |", "|---|---|---|"]
        for s in sorted(skipped, key=lambda s: s["name"]):
            lines.append(f"| {s['name']} | {s['family']} | {md(results[s['name']]['export'].get('error'))[:240]} |")
    if not_reached:
        lines += ["", f"## Not run yet ({len(not_reached)})", "", ", ".join(s["name"] for s in not_reached)]
    return "\n".join(lines) + "\n", dict(summary=summary, families=fam_rates, tried=len(tried))


def plot(stats: dict[str, Any], targets: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = ["all"] + list(stats["families"])
    vals = {t: [stats["summary"].get(t, 0)] + [stats["families"][f].get(t, 0) for f in fams[1:]] for t in targets}
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(fams) + 2), 4.5))
    w = 0.8 / max(1, len(targets))
    for i, t in enumerate(targets):
        xs = [x + (i - (len(targets) - 1) / 2) * w for x in range(len(fams))]
        bars = ax.bar(xs, [100 * v for v in vals[t]], w, label=t)
        for b, val in zip(bars, vals[t]):
            ax.annotate(f"{100 * val:.0f}", (b.get_x() + w / 2, 100 * val), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(fams)), fams, rotation=25, ha="right")
    ax.set_ylim(0, 105)
    ax.set_ylabel("pass rate (% of architectures tried)")
    ax.set_title(f"Ember model zoo: {stats['tried']} architectures, random weights, fp32")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------------------

def interleaved(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run order: one model of each family in turn, so that a run stopped early has
    covered every family (the report's order does not depend on it)."""
    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in specs:
        by_family[s["family"]].append(s)
    queues = [by_family[f] for f in sorted(by_family)]
    out = []
    for i in range(max(map(len, queues), default=0)):
        out += [q[i] for q in queues if i < len(q)]
    return out


def default_ember() -> str:
    built = ROOT / "target" / "debug" / "ember"
    if built.exists():
        return str(built)
    return shutil.which("ember") or str(built)


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python tools/bench/zoo.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subset", choices=sorted(SUBSETS), help="a fixed subset: " + "; ".join(
        f"{k}: {', '.join(v)}" for k, v in SUBSETS.items()))
    ap.add_argument("--models", metavar="REGEX", help="only the models whose name (hf/TYPE, tv/BUILDER) or "
                    "family matches REGEX (re.search)")
    ap.add_argument("--only", metavar="NAME[,NAME]", help="run just these models, from scratch (export and every "
                    "target) even when cached; the report takes the other selected models from the cache")
    ap.add_argument("--rerun-failed", action="store_true", help="redo every (model, target) that did not pass "
                    "(and every export that failed) instead of taking it from the cache")
    ap.add_argument("--targets", default=",".join(TARGETS), help="comma-separated targets (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="models in parallel (default 1: each step already uses "
                    f"{THREADS} threads)")
    ap.add_argument("--ember", default=default_ember(), help="the ember binary (default: target/debug/ember of "
                    "this repo, else `ember` on PATH; now %(default)s)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="directory of zoo.md and zoo.png (default: "
                    "tools/bench/results)")
    ap.add_argument("--cache", default=str(DEFAULT_CACHE), help="cache and work directory (default: %(default)s)")
    ap.add_argument("--report-only", action="store_true", help="run nothing: write the report from the cache")
    ap.add_argument("--note", action="append", default=[], metavar="TEXT", help="a line for the report's "
                    "header, e.g. where a copied --ember binary was built (repeatable)")
    ap.add_argument("--list", action="store_true", help="print the selected models and exit")
    ap.add_argument("--strict-cache", action="store_true", help="also invalidate cached exports when any of "
                    "zoo.py changes (by default: the model's spec, how zoo.py builds models, the library "
                    "versions and ember.export)")
    ap.add_argument("--_worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    bad = [t for t in args.targets if t not in TARGETS]
    if bad or not args.targets:
        ap.error(f"unknown target(s) {bad}; known: {', '.join(TARGETS)}")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.models:
        try:
            re.compile(args.models)
        except re.error as exc:
            ap.error(f"--models: bad regex: {exc}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args._worker:
        return worker_main()
    ember_path = shutil.which(args.ember) or args.ember
    if not args.list and not Path(ember_path).exists():
        log(f"zoo.py: error: no ember binary at {args.ember} (build it with `cargo build`, or pass --ember)")
        return 2
    args.ember = str(Path(ember_path).resolve()) if Path(ember_path).exists() else args.ember
    prefixes = tuple({n[:3] for n in SUBSETS[args.subset]}) if args.subset else ("hf/", "tv/")
    specs, notes = all_specs(prefixes)
    if args.subset:
        want = SUBSETS[args.subset]
        specs = [s for s in specs if s["name"] in want]
        missing = sorted(set(want) - {s["name"] for s in specs})
        if missing:
            log(f"zoo.py: error: subset {args.subset}: models not available: {', '.join(missing)}")
            return 2
    if args.models:
        rx = re.compile(args.models)
        specs = [s for s in specs if rx.search(s["name"]) or rx.search(s["family"])]
    only = {n for n in (args.only or "").split(",") if n}
    unknown = only - {s["name"] for s in specs}
    if unknown:
        log(f"zoo.py: error: --only: no such model among the selected: {', '.join(sorted(unknown))}")
        return 2
    if args.list:
        for s in specs:
            print(f"{s['name']}\t{s['family']}")
        return 0
    if not specs:
        log("zoo.py: error: no model selected")
        return 2
    run = Run(args)
    load0 = os.getloadavg()[0]
    results: dict[str, dict[str, Any]] = {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()

    def write_report() -> None:
        text, stats = render(specs, results, run, args.targets, notes, (load0, os.getloadavg()[0]), argv)
        tmp = out / ".zoo.md.tmp"
        tmp.write_text(text)
        os.replace(tmp, out / "zoo.md")
        plot(stats, args.targets, out / "zoo.png")

    try:
        # --only runs just those models; the report still covers the whole selection.
        to_run = [] if args.report_only else [s for s in specs if not only or s["name"] in only]
        for s in specs:
            r = None if s in to_run else run.load(s["name"])
            if r is not None:
                results[s["name"]] = r
        if to_run:
            with cf.ThreadPoolExecutor(args.jobs) as pool:
                futs = {pool.submit(run.run_model, s, s["name"] in only): s for s in interleaved(to_run)}
                for i, fut in enumerate(cf.as_completed(futs), 1):
                    s = futs[fut]
                    try:
                        results[s["name"]] = fut.result()
                    except Exception:  # noqa: BLE001 - a harness bug on one model must not stop the run
                        log(f"[{s['name']}] harness error:\n{traceback.format_exc()}")
                    if i % 10 == 0:  # a report to look at while a long run goes on
                        log(f"[zoo] {i}/{len(to_run)} models, {time.monotonic() - t0:.0f}s")
                        write_report()
    finally:
        run.close()
    write_report()
    log(f"wrote {out / 'zoo.md'} and {out / 'zoo.png'} ({len(results)} models, {time.monotonic() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
