"""The user's source line that an Ember message points at: the innermost frame outside torch and
Ember (whose frames are the machinery between the user's line and ``ember.eager()``'s recorder)."""

from __future__ import annotations

import os
import sys

import torch

_TORCH_DIR = os.path.dirname(torch.__file__)
_EMBER_DIR = os.path.dirname(os.path.abspath(__file__))

#: Whether a code object is torch's or ember's (skipped when looking for the user's line), by code.
_internal_code: dict = {}


def user_frame() -> tuple[str, int]:
    """The innermost live frame outside torch and ember, above the caller's caller: the user's
    line that issued an op."""
    f = sys._getframe(2)
    while f is not None:
        c = f.f_code
        internal = _internal_code.get(c)
        if internal is None:
            fn = c.co_filename
            internal = _internal_code[c] = fn.startswith(_TORCH_DIR) or fn.startswith(_EMBER_DIR) or fn.startswith("<frozen")
        if not internal:
            return c.co_filename, f.f_lineno
        f = f.f_back
    return "<unknown>", 0

