"""The user's source line that an Ember message points at: the innermost frame outside torch.

Two callers see two kinds of stack. ``ember.eager()`` walks the live one, in which torch's and
Ember's own frames are the machinery between the user's line and the recorder. The torch.compile
backend reads the stack trace Dynamo recorded for a graph node, which holds only the traced
program's frames (Ember's bundled models among them), so there only torch's are skipped, as
Rust's ``frontend::source_loc`` does with the same traces.
"""

from __future__ import annotations

import os
import re
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


def traced_line(stack_trace: str) -> str:
    """`file:line` of the innermost frame outside torch in a recorded stack trace (the innermost
    frame when all are torch's), or "unknown line"."""
    frames = re.findall(r'File "([^"]+)", line (\d+)', stack_trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    return f"{user[-1][0]}:{user[-1][1]}" if user else "unknown line"
