#!/usr/bin/env python3
"""Training transformers architectures with their state on the `ember` device: for each model
and target, three AdamW steps with the model (and its loss) and the optimizer step compiled by
`torch.compile(..., backend="ember", options={"target": ...})`, against torch eager on the CPU:
the first step's worst per-tensor gradient error (relative to the gradient's norm), the losses,
the bytes moved between host and device in the last step, and Ember's fallbacks. Writes
tools/bench/results/device_train.md.

    python tools/bench/device_train.py [--targets tpu,trainium] [--models llama,bert,vit,t5,gpt2]
"""

from __future__ import annotations

import argparse
import copy
import datetime
import subprocess
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python" / "python"))

import torch  # noqa: E402
import transformers as T  # noqa: E402

import ember  # noqa: E402,F401  (registers the device)
from ember import backend, device  # noqa: E402


def _ids(vocab: int, *shape: int):
    return lambda: [torch.randint(0, vocab, shape)]


def _lm(m, ids):
    return m(input_ids=ids, labels=ids).loss


MODELS = {
    "gpt2": lambda: (T.GPT2LMHeadModel(T.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=300, n_positions=64, attn_pdrop=0.0, resid_pdrop=0.0,
                                                    embd_pdrop=0.0, use_cache=False)), _ids(300, 2, 16), _lm),
    "llama": lambda: (T.LlamaForCausalLM(T.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                                       num_key_value_heads=2, vocab_size=300, use_cache=False)), _ids(300, 2, 16), _lm),
    "bert": lambda: (T.BertForMaskedLM(T.BertConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=300,
                                                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)), _ids(300, 2, 16), _lm),
    "vit": lambda: (T.ViTForImageClassification(T.ViTConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, image_size=32,
                                                            patch_size=8, num_labels=10, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)),
                    lambda: [torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,))], lambda m, x, y: m(pixel_values=x, labels=y).loss),
    "t5": lambda: (T.T5ForConditionalGeneration(T.T5Config(d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16, vocab_size=300, dropout_rate=0.0,
                                                           decoder_start_token_id=0, pad_token_id=0)),
                   lambda: [torch.randint(0, 300, (2, 16)), torch.randint(0, 300, (2, 8))], lambda m, i, labels: m(input_ids=i, labels=labels).loss),
}


def train(name: str, target: str) -> dict:
    torch.manual_seed(0)
    ref, batch, loss_of = MODELS[name]()
    model = copy.deepcopy(ref).to("ember")
    opt, opt_ref = torch.optim.AdamW(model.parameters(), lr=1e-3), torch.optim.AdamW(ref.parameters(), lr=1e-3)
    run = torch.compile(loss_of, backend="ember", options={"target": target})
    step = torch.compile(opt.step, backend="ember", options={"target": target})
    fallbacks = backend.stats["fallbacks"]
    losses, worst, moved = [], 0.0, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(3):
            b = batch()
            before = dict(device.stats)
            loss = run(model, *[t.to("ember") for t in b])
            loss.backward()
            want = loss_of(ref, *b)
            want.backward()
            if i == 0:
                worst = max(float((p.grad.cpu() - q.grad).norm() / q.grad.norm())
                            for p, q in zip(model.parameters(), ref.parameters()) if q.grad is not None and q.grad.norm() > 1e-6)
            step()
            opt.zero_grad()
            opt_ref.step()
            opt_ref.zero_grad()
            losses.append((loss.item(), want.item()))
            moved = {k: device.stats[k] - before[k] for k in before}
    torch._dynamo.reset()
    return {"model": name, "target": target, "worst": worst, "losses": losses, "moved": moved,
            "batch": sum(t.nbytes for t in b), "fallbacks": backend.stats["fallbacks"] - fallbacks}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="tpu,trainium", help="comma-separated: tpu, trainium (default both)")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated (default all): {', '.join(MODELS)}")
    ap.add_argument("--out", default=str(HERE / "results" / "device_train.md"), help="the report")
    a = ap.parse_args()
    models, targets = a.models.split(","), a.targets.split(",")
    bad = [m for m in models if m not in MODELS] + [t for t in targets if t not in ("tpu", "trainium")]
    if bad:
        ap.error(f"unknown model(s) or target(s): {', '.join(bad)}")
    rows = ["| model | target | worst first-step gradient error | losses, Ember / eager | last step: batch up, to device, from device, eager ops | fallbacks |",
            "|---|---|---|---|---|---|"]
    for t in targets:
        for m in models:
            r = train(m, t)
            losses = ", ".join(f"{g:.5f} / {w:.5f}" for g, w in r["losses"])
            mv = r["moved"]
            rows.append(f"| {m} | {t} | {r['worst']:.1e} | {losses} | {r['batch']} B, {mv['to_device_bytes']} B, {mv['from_device_bytes']} B, "
                        f"{mv['eager_ops']} | {r['fallbacks']} |")
            print(rows[-1], file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    text = "\n".join([
        "# Training with the state on the ember device",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; commit {commit}; torch {torch.__version__}, transformers {T.__version__}",
        f"- command: `python tools/bench/device_train.py --targets {a.targets} --models {a.models}`",
        "- each model: `model.to(\"ember\")`, the loss and AdamW's step compiled for the target, three steps against torch eager on the CPU",
        "- PJRT: jax's CPU client (a trainium artifact runs its portable HLO there); no TPU or Neuron device was used",
        "",
        *rows,
        "",
        "Per step the batch goes up and the loss comes down (`loss.item()`, the one eager op); weights, AdamW's",
        "moments, saved activations and gradients stay device arrays.",
        "",
    ])
    Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
