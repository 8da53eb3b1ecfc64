"""The candle op table (``candle_ops.json``): aten op name -> what candle can do with it.

The table is data read from ../shared/candle-ops.md at one pinned candle commit, recorded in the
file. Names are ATen overload packets (``upsample_bilinear2d``, not ``upsample_bilinear2d.vec``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

BACKWARD = "backward"
FORWARD_ONLY = "forward-only"
CONDITIONAL = "conditional"
NO_OP = "no-op"
NOT_IN_TABLE = "not-in-table"
CLASSES = (BACKWARD, FORWARD_ONLY, CONDITIONAL, NO_OP, NOT_IN_TABLE)


@dataclass(frozen=True)
class OpEntry:
    name: str
    cls: str
    ref: str = ""
    note: str = ""
    condition: str | None = None
    no_grad: bool = False
    warning: str = ""
    # When candle's backward runs but silently gives a wrong gradient: "always" (on a gradient
    # path), "destination" (when the scattered-into tensor needs a gradient), "shared_input" (when
    # the input has another consumer whose gradient candle overwrites).
    wrong_gradient: str = ""


@lru_cache(maxsize=1)
def load_table() -> dict[str, Any]:
    text = resources.files("candle_port.verify").joinpath("candle_ops.json").read_text(encoding="utf-8")
    return json.loads(text)


def candle_pin() -> dict[str, str]:
    """The candle repository, commit and version the table was read from."""
    return dict(load_table()["candle"])


def normalize(name: str) -> str:
    """``aten::add_.Tensor`` / ``add_`` / ``aten.add.Tensor`` -> ``add`` (in-place ops as their functional form)."""
    if "::" in name:
        name = name.split("::", 1)[1]
    name = name.split(".", 1)[0] if not name.startswith("aten.") else name.split(".")[1]
    if name.endswith("_") and not name.endswith("__") and len(name) > 1:
        name = name[:-1]
    return name


def lookup(name: str) -> OpEntry:
    """The table entry for an aten op name (any spelling ``normalize`` accepts)."""
    key = normalize(name)
    entry = load_table()["ops"].get(key)
    if entry is None:
        return OpEntry(key, NOT_IN_TABLE)
    return OpEntry(
        key,
        entry["class"],
        entry.get("ref", ""),
        entry.get("note", ""),
        entry.get("condition"),
        bool(entry.get("no_grad", False)),
        entry.get("warning", ""),
        entry.get("wrong_gradient", ""),
    )
