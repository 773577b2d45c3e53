"""Three SGD steps of a small transformers GPT-2 LM under torch.compile on the tpu target, sharded
over a `dp=2,tp=4` mesh with `dp,tp,fsdp` (with host tensors, then with the model, the batches and
the compiled optimizer step on the ember device), then unsharded and in torch eager. Run by
test_training.py in a fresh process (the CPU client's device count is fixed when it starts),
alone or as each of the processes `torchrun` starts. Writes, from the first process, a .pt file:
losses and first-step gradients per run, and the collectives in the compiled modules."""

from __future__ import annotations

import copy
import os
import sys
import warnings

import torch

from ember import backend, xla


def train(model: torch.nn.Module, ids: list[torch.Tensor], options: dict | None, on_device: bool = False) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Losses and first-step gradients; `on_device`: the model and batches on the ember device,
    the optimizer step compiled with the same options."""
    if on_device:
        model.to("ember")
    run = torch.compile(model, backend="ember", options=options) if options is not None else model
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = torch.compile(opt.step, backend="ember", options=options) if on_device else opt.step
    losses, first = [], {}
    for i, x in enumerate(ids):
        opt.zero_grad()
        x = x.to("ember") if on_device else x
        loss = run(input_ids=x, labels=x).loss
        loss.backward()
        if i == 0:
            first = {n: p.grad.cpu().clone() for n, p in model.named_parameters()}
        step()
        losses.append(float(loss))
    torch._dynamo.reset()
    return losses, first


def main(out: str) -> None:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=256, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(cfg)
    ids = [torch.randint(0, 256, (4, 16)) for _ in range(3)]
    result: dict = {}
    mesh = {"target": "tpu", "mesh": {"dp": 2, "tp": 4}, "shard": "dp,tp,fsdp"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result["sharded"] = train(copy.deepcopy(model), ids, mesh)
        result["device"] = train(copy.deepcopy(model), ids, mesh, on_device=True)
    result["warnings"] = [str(w.message) for w in caught if "ember" in str(w.message)]
    result["stats"] = copy.deepcopy(backend.stats)
    cache = os.environ["EMBER_CACHE_DIR"]
    hlo = "".join(xla.compiled_hlo(os.path.join(cache, d, "tpu")) for d in sorted(os.listdir(cache)) if not d.startswith("."))
    result["collectives"] = sorted(c for c in ["all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"] if f" {c}(" in hlo)
    result["processes"] = xla._jax().process_count()
    if xla._jax().process_index() == 0:
        result["flat"] = train(copy.deepcopy(model), ids, {"target": "tpu"})
        result["eager"] = train(model, ids, None)
        torch.save(result, out)


if __name__ == "__main__":
    main(sys.argv[1])
