"""The models: the specs of the transformers and torchvision models, and how the export
worker builds one (a small config, random weights, the inputs).

The source text of _shrink_list, hf_config, _wrap, build_hf, FewFlowUpdates and build_tv (and
worker.export_one) and the values of the constants they use are part of the export key
(run.build_recipe): an edit to them redoes those exports, and moving them must keep the text."""

from __future__ import annotations

from typing import Any

from .common import MAX_PARAMS

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
    # A matrix initialized to zeros (AfMoE's router) makes every routing score tie, and torch's
    # topk orders ties unspecified (CPU: experts [2, 3] of four equal scores), so no compiler
    # could be compared with it: such matrices get random values, as a trained model's are.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and p.is_floating_point() and not p.any():
                p.normal_(0.0, 0.02)
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
