"""candle-port: find and fix the PyTorch constructs that candle cannot train.

The public API (`check_source`, `check_paths`, `fix_source`) is loaded lazily so that importing
`candle_port.runtime` in a ported model pulls in nothing but torch.
"""

from __future__ import annotations

__version__ = "0.2.0"

_LAZY = {
    "check_source": "candle_port.api",
    "check_paths": "candle_port.api",
    "fix_source": "candle_port.api",
    "fix_paths": "candle_port.api",
    "Finding": "candle_port.pipeline.findings",
    "Severity": "candle_port.pipeline.findings",
    "FileError": "candle_port.pipeline.findings",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'candle_port' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
