#!/usr/bin/env python3
"""Training zoo: first-step gradients of models this repository did not write, under
`torch.compile(backend="ember")` against torch eager.

Each model (a tiny config of a transformers architecture, or a torchvision model at 64x64,
batch 4, dropout off) takes one forward and backward step from the same weights compiled by
Ember and under torch eager. Reported per model: the loss of each, the worst gradient error
(per tensor, |ember - eager| over the gradient's norm, floored at 1e-3 of the largest
gradient's norm, as the training tests measure), the graphs Ember compiled (backward ones in
parentheses), its fallbacks and warnings, and the first step's wall time. A model over the 1e-3
tolerance is run again in float64 under both: where Ember's float64 gradients match eager's,
the float32 difference is rounding that the model amplifies (a batch norm over a few values),
and eager's own float32 error against float64 is shown next to Ember's.

    python tools/bench/train_zoo.py [--models llama,bert,...] [--out tools/bench/results]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tools" / "python" / "python"))

import torch  # noqa: E402

TOLERANCE = 1e-3
VOCAB = 320


def _hf(cls: str, cfg: str, kind: str, **kw: Any) -> Callable[[], tuple[torch.nn.Module, str]]:
    def make() -> tuple[torch.nn.Module, str]:
        import transformers as T

        return getattr(T, cls)(getattr(T, cfg)(**kw)), kind

    return make


def _decoder(cls: str, cfg: str, **kw: Any) -> Callable[[], tuple[torch.nn.Module, str]]:
    base = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=VOCAB, max_position_embeddings=128)
    return _hf(cls, cfg, "lm", **{**base, **kw})


def _encoder(cls: str, cfg: str, **kw: Any) -> Callable[[], tuple[torch.nn.Module, str]]:
    base = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=VOCAB,
                max_position_embeddings=128, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return _hf(cls, cfg, "lm", **{**base, **kw})


def _seq2seq(cls: str, cfg: str) -> Callable[[], tuple[torch.nn.Module, str]]:
    return _hf(cls, cfg, "s2s", d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
               encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=VOCAB, max_position_embeddings=128, dropout=0.0,
               attention_dropout=0.0, activation_dropout=0.0, decoder_start_token_id=0, pad_token_id=0)


def _t5(cls: str, cfg: str) -> Callable[[], tuple[torch.nn.Module, str]]:
    return _hf(cls, cfg, "s2s", d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16, vocab_size=VOCAB,
               decoder_start_token_id=0, pad_token_id=0, dropout_rate=0.0)


def _audio(cls: str, cfg: str) -> Callable[[], tuple[torch.nn.Module, str]]:
    return _hf(cls, cfg, "ctc", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, conv_dim=(32, 32),
               conv_stride=(5, 2), conv_kernel=(10, 3), num_feat_extract_layers=2, vocab_size=32, hidden_dropout=0.0,
               activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0,
               num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)


def _vision(cls: str, cfg: str, **kw: Any) -> Callable[[], tuple[torch.nn.Module, str]]:
    return _hf(cls, cfg, "image32", num_labels=10, **kw)


def _torchvision(name: str) -> Callable[[], tuple[torch.nn.Module, str]]:
    def make() -> tuple[torch.nn.Module, str]:
        import torchvision

        return getattr(torchvision.models, name)(num_classes=10), "image64"

    return make


def _checkpointed(make: Callable[[], tuple[torch.nn.Module, str]]) -> Callable[[], tuple[torch.nn.Module, str]]:
    def wrapped() -> tuple[torch.nn.Module, str]:
        model, kind = make()
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return model, kind

    return wrapped


MODELS: dict[str, Callable[[], tuple[torch.nn.Module, str]]] = {
    "llama": _decoder("LlamaForCausalLM", "LlamaConfig", num_key_value_heads=2),
    "llama_checkpointed": _checkpointed(_decoder("LlamaForCausalLM", "LlamaConfig", num_key_value_heads=2)),
    "mistral": _decoder("MistralForCausalLM", "MistralConfig", num_key_value_heads=2),
    "qwen2": _decoder("Qwen2ForCausalLM", "Qwen2Config", num_key_value_heads=2),
    "qwen3": _decoder("Qwen3ForCausalLM", "Qwen3Config", num_key_value_heads=2, head_dim=16),
    "gemma": _decoder("GemmaForCausalLM", "GemmaConfig", num_key_value_heads=2, head_dim=16),
    "phi": _decoder("PhiForCausalLM", "PhiConfig"),
    "gpt_neox": _decoder("GPTNeoXForCausalLM", "GPTNeoXConfig"),
    "mixtral": _decoder("MixtralForCausalLM", "MixtralConfig", num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": _decoder("Qwen2MoeForCausalLM", "Qwen2MoeConfig", num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                          moe_intermediate_size=32, shared_expert_intermediate_size=64),
    "gpt2": _hf("GPT2LMHeadModel", "GPT2Config", "lm", n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128,
                resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
    "gptj": _hf("GPTJForCausalLM", "GPTJConfig", "lm", n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128, rotary_dim=8,
                resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
    "gpt_bigcode": _hf("GPTBigCodeForCausalLM", "GPTBigCodeConfig", "lm", n_embd=64, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=128,
                       resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
    "falcon": _hf("FalconForCausalLM", "FalconConfig", "lm", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
                  hidden_dropout=0.0, attention_dropout=0.0),
    "opt": _hf("OPTForCausalLM", "OPTConfig", "lm", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, ffn_dim=128, vocab_size=VOCAB,
               max_position_embeddings=128, word_embed_proj_dim=64, dropout=0.0, attention_dropout=0.0, layerdrop=0.0),
    "bert": _encoder("BertForMaskedLM", "BertConfig"),
    "roberta": _encoder("RobertaForMaskedLM", "RobertaConfig", pad_token_id=1),
    "xlm_roberta": _encoder("XLMRobertaForMaskedLM", "XLMRobertaConfig", pad_token_id=1),
    "electra": _encoder("ElectraForMaskedLM", "ElectraConfig", embedding_size=32),
    "albert": _encoder("AlbertForMaskedLM", "AlbertConfig", embedding_size=32),
    "deberta_v2": _encoder("DebertaV2ForMaskedLM", "DebertaV2Config"),
    "distilbert": _hf("DistilBertForMaskedLM", "DistilBertConfig", "lm", dim=64, n_layers=2, n_heads=4, hidden_dim=128, vocab_size=VOCAB,
                      max_position_embeddings=128, dropout=0.0, attention_dropout=0.0),
    "funnel": _hf("FunnelForMaskedLM", "FunnelConfig", "lm", d_model=64, n_head=4, d_head=16, d_inner=128, block_sizes=[1, 1], vocab_size=VOCAB,
                  hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0),
    "t5": _t5("T5ForConditionalGeneration", "T5Config"),
    "mt5": _t5("MT5ForConditionalGeneration", "MT5Config"),
    "bart": _seq2seq("BartForConditionalGeneration", "BartConfig"),
    "pegasus": _seq2seq("PegasusForConditionalGeneration", "PegasusConfig"),
    "whisper": _hf("WhisperForConditionalGeneration", "WhisperConfig", "speech", d_model=64, encoder_layers=2, decoder_layers=2,
                   encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, vocab_size=VOCAB,
                   num_mel_bins=16, max_source_positions=32, max_target_positions=64, dropout=0.0, decoder_start_token_id=1, pad_token_id=0),
    "wav2vec2": _audio("Wav2Vec2ForCTC", "Wav2Vec2Config"),
    "hubert": _audio("HubertForCTC", "HubertConfig"),
    "vit": _vision("ViTForImageClassification", "ViTConfig", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                   image_size=32, patch_size=8),
    "dinov2": _vision("Dinov2ForImageClassification", "Dinov2Config", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, mlp_ratio=2,
                      image_size=32, patch_size=8),
    "beit": _vision("BeitForImageClassification", "BeitConfig", hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                    image_size=32, patch_size=8, use_relative_position_bias=True, drop_path_rate=0.0),
    "swin": _vision("SwinForImageClassification", "SwinConfig", image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4],
                    window_size=4, drop_path_rate=0.0),
    "convnext_hf": _vision("ConvNextForImageClassification", "ConvNextConfig", num_channels=3, hidden_sizes=[16, 32], depths=[1, 1],
                           num_stages=2, image_size=32, drop_path_rate=0.0),
    "segformer": _vision("SegformerForImageClassification", "SegformerConfig", num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                         hidden_sizes=[16, 32], patch_sizes=[7, 3], strides=[4, 2], num_attention_heads=[1, 2], mlp_ratios=[2, 2],
                         drop_path_rate=0.0, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0),
    "mobilevit": _vision("MobileViTForImageClassification", "MobileViTConfig", image_size=32, hidden_sizes=[32, 40, 48],
                         neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                         classifier_dropout_prob=0.0),
    **{f"tv_{n}": _torchvision(n) for n in ("resnet18", "resnext50_32x4d", "densenet121", "mobilenet_v3_small", "efficientnet_b0",
                                             "mnasnet0_5", "shufflenet_v2_x1_0", "squeezenet1_1", "convnext_tiny", "swin_t", "regnet_y_400mf")},
}


def _batch(kind: str) -> dict[str, torch.Tensor]:
    ids = lambda: torch.randint(0, VOCAB, (2, 24))  # noqa: E731
    if kind == "lm":
        x = ids()
        return dict(input_ids=x, labels=x)
    if kind == "s2s":
        return dict(input_ids=ids(), labels=ids())
    if kind == "speech":
        return dict(input_features=torch.randn(2, 16, 64), labels=ids())
    if kind == "ctc":
        return dict(input_values=torch.randn(2, 800), labels=torch.randint(1, 32, (2, 5)))
    size, batch = (32, 2) if kind == "image32" else (64, 4)
    return dict(pixel_values=torch.randn(batch, 3, size, size), labels=torch.randint(0, 10, (batch,)))


def _loss(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    if "pixel_values" in batch and not hasattr(model, "config"):  # torchvision
        return torch.nn.functional.cross_entropy(model(batch["pixel_values"]), batch["labels"])
    return model(**batch).loss


def _grads(model: torch.nn.Module, batch: dict[str, torch.Tensor], compiled: bool, dtype: torch.dtype) -> tuple[float, dict[str, torch.Tensor]]:
    model = copy.deepcopy(model).to(dtype)
    batch = {k: v.to(dtype) if v.is_floating_point() else v for k, v in batch.items()}
    loss = _loss(torch.compile(model, backend="ember") if compiled else model, batch)
    loss.backward()
    return float(loss), {n: p.grad.double() for n, p in model.named_parameters() if p.grad is not None}


def _worst(want: dict[str, torch.Tensor], got: dict[str, torch.Tensor]) -> tuple[float, str]:
    floor = TOLERANCE * max(float(g.norm()) for g in want.values())
    missing = [n for n in want if n not in got]
    if missing:
        return float("inf"), f"no gradient for {missing[0]}"
    return max((float((got[n] - g).norm()) / max(float(g.norm()), floor), n) for n, g in want.items())


def run(name: str) -> dict[str, Any]:
    from ember import backend

    torch._dynamo.reset()
    torch.manual_seed(0)
    model, kind = MODELS[name]()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    model.train()
    batch = _batch(kind)
    before = {k: v for k, v in backend.stats.items() if isinstance(v, (int, float))}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        loss, got = _grads(model, batch, True, torch.float32)
        first_s = time.perf_counter() - t0
    want_loss, want = _grads(model, batch, False, torch.float32)
    worst, where = _worst(want, got)
    row = dict(name=name, loss=loss, want_loss=want_loss, worst=worst, where=where, first_s=first_s,
               stats={k: backend.stats[k] - before[k] for k in ("compiled", "cache_hits", "backward", "fallbacks")},
               warnings=sorted({str(w.message).split("\n")[0][:160] for w in caught if str(w.message).startswith("ember")}))
    if worst > TOLERANCE:
        truth = _grads(model, batch, False, torch.float64)[1]
        row["f64"] = _worst(truth, _grads(model, batch, True, torch.float64)[1])[0]
        row["eager_f32_vs_f64"] = _worst(truth, want)[0]
        row["ember_f32_vs_f64"] = _worst(truth, got)[0]
    return row


def verdict(r: dict[str, Any]) -> str:
    if "error" in r:
        return "error"
    if r["worst"] <= TOLERANCE:
        return "match"
    if r.get("f64", float("inf")) <= 1e-9:
        return f"rounding: f64 match {r['f64']:.0e}; f32 vs f64: Ember {r['ember_f32_vs_f64']:.1e}, eager {r['eager_f32_vs_f64']:.1e}"
    return "**differs**"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated (default: all): {', '.join(MODELS)}")
    ap.add_argument("--out", default=str(HERE / "results"), help="results dir (train_zoo.md)")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; known: {list(MODELS)}")
    torch.set_num_threads(2)
    # Compiled from scratch: graphs cached by earlier runs would make the first step a load.
    cache = os.environ["EMBER_CACHE_DIR"] = tempfile.mkdtemp(prefix="train-zoo-")
    rows = []
    try:
        for name in names:
            try:
                row = run(name)
            except Exception as exc:  # noqa: BLE001 - one model's failure is a row of the table
                row = dict(name=name, error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
            print(name, row, file=sys.stderr, flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    git = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# Training zoo: first-step gradients under torch.compile(backend=\"ember\") against torch eager",
        "",
        f"- date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; tree {git or '?'}; torch {torch.__version__}; {platform.machine()}, 2 threads",
        "- tiny transformers configs (2 layers, width 64; sequences of 24, images 32x32, batch 2) and torchvision models (64x64, batch 4), dropout off; an empty Ember cache",
        f"- worst gradient: per tensor |ember - eager| / |eager|, floored at {TOLERANCE:g} of the largest gradient's norm; "
        f"over {TOLERANCE:g}, both run again in float64 (`python tools/bench/train_zoo.py`)",
        "",
        "| model | loss Ember / eager | worst gradient (tensor) | verdict | graphs (backward) | fallbacks | first step s | Ember warnings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | - | - | error: {r['error']} | - | - | - | - |")
            continue
        st = r["stats"]
        warn = "; ".join(w.replace("|", "/") for w in r["warnings"]) or "-"
        lines.append(f"| {r['name']} | {r['loss']:.5f} / {r['want_loss']:.5f} | {r['worst']:.1e} (`{r['where']}`) | {verdict(r)} | "
                     f"{st['compiled'] + st['cache_hits']} ({st['backward']}) | {st['fallbacks']} | {r['first_s']:.1f} | {warn} |")
    counts = {v: sum(1 for r in rows if verdict(r).split(":")[0] == v) for v in ("match", "rounding", "**differs**", "error")}
    lines += ["", f"{counts['match']} match, {counts['rounding']} differ by float32 rounding only, {counts['**differs**']} differ, {counts['error']} errors, of {len(rows)}."]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_zoo.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if counts["**differs**"] == 0 and counts["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
