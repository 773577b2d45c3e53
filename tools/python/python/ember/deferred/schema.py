"""Per-op facts the recorder routes by, computed once per OpOverload."""

from __future__ import annotations

import torch

from .. import decompositions
from .fast_decomps import _FAST
from .state import _native

aten = torch.ops.aten

#: Ops whose results depend on torch's RNG stream: always torch eager, so seeds reproduce.
_RANDOM = {
    "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::normal", "aten::normal_",
    "aten::uniform", "aten::uniform_", "aten::bernoulli", "aten::bernoulli_", "aten::native_dropout",
    "aten::multinomial", "aten::exponential_", "aten::random_", "aten::rand_like", "aten::randn_like",
    "aten::randint_like", "aten::cauchy_", "aten::geometric_", "aten::log_normal_",
}
#: Ops that only look at their inputs' metadata: run at once on placeholders.
_LIKE = {
    "aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::new_zeros", "aten::new_ones", "aten::new_full",
}


class _Schema:
    """Per-OpOverload facts, computed once."""

    __slots__ = ("func", "params", "target", "mutable", "writes", "view", "known", "functional", "decomp", "name", "returns_tensors", "returns_list", "route", "fast", "alpha", "same_value", "foreach", "meta_only")

    def __init__(self, func) -> None:
        self.func = func  # keeps the OpOverload alive: `_schemas` is keyed by its id
        s = func._schema
        self.name = s.name
        base = s.name.split("::", 1)[1]
        self.target = f"{func.namespace}.{base}.{func._overloadname}"
        self.params = []
        for a in s.arguments:
            t = str(a.type)
            kind = "tensor" if t in ("Tensor", "Optional[Tensor]") else "tensors" if t == "List[Tensor]" else "opt_tensors" if t == "List[Optional[Tensor]]" else "other"
            self.params.append((a.name, kind, a.kwarg_only))
        first = s.arguments[0] if s.arguments else None
        self.mutable = bool(first is not None and first.alias_info is not None and first.alias_info.is_write)
        #: (position, name) of every argument the op writes (in-place targets, `out=`).
        self.writes = tuple((i, a.name) for i, a in enumerate(s.arguments) if a.alias_info is not None and a.alias_info.is_write)
        self.view = bool(s.returns and s.returns[0].alias_info is not None and not self.mutable)
        self.returns_tensors = bool(s.returns) and all(str(r.type) in ("Tensor", "List[Tensor]") for r in s.returns)
        self.returns_list = len(s.returns) == 1 and str(s.returns[0].type) == "List[Tensor]"
        self.known = func.namespace == "aten" and _native().eager_op_known(self.target)
        #: In place on the tensor's metadata only (`t_`, `unsqueeze_`, `as_strided_`, `resize_`).
        self.meta_only = torch.Tag.inplace_view in func.tags
        self.functional = None
        if self.mutable and base.endswith("_") and not base.startswith("_"):
            pkt = getattr(aten, base[:-1], None)
            self.functional = getattr(pkt, func._overloadname, None) if pkt is not None else None
            if self.functional is None and pkt is not None:
                # Overload names differ (`transpose_.default`, `transpose.int`): match the types.
                types = [str(a.type) for a in s.arguments]
                for name in pkt.overloads():
                    f = getattr(pkt, name)
                    if [str(a.type) for a in f._schema.arguments] == types:
                        self.functional = f
                        break
        self.decomp = _decompositions().get(func)
        self.fast = _FAST.get(self.target)
        self.alpha = self.target in ("aten.add.Tensor", "aten.sub.Tensor")
        self.same_value = self.target in ("aten.detach.default", "aten.alias.default")
        self.foreach = decompositions.foreach_element(func) if func.namespace == "aten" and base.startswith("_foreach_") else None
        # How `__torch_dispatch__` starts on this op: 0 torch eager, 1 a `_LIKE` op, 2 the rest.
        self.route = 0 if func.namespace != "aten" or not self.returns_tensors or self.name in _RANDOM else 1 if self.name in _LIKE else 2


#: By id(OpOverload): its own `__hash__` is Python code (~1 µs a lookup); the schema holds the op.
_schemas: dict[int, _Schema] = {}
_decomp_table: dict | None = None


def _decompositions() -> dict:
    global _decomp_table
    if _decomp_table is None:
        _decomp_table = decompositions.core_aten()
    return _decomp_table


def _schema(func) -> _Schema:
    s = _schemas.get(id(func))
    if s is None:
        s = _schemas[id(func)] = _Schema(func)
    return s
