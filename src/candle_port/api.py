"""The Python API: the same functions the command-line tools call.

    >>> from candle_port import check_source
    >>> [f.code for f in check_source("import torch.nn.functional as F\\nF.interpolate(x, scale_factor=2, mode='bilinear')\\n")]
    ['CP101']
"""

from __future__ import annotations

from candle_port.config import Config
from candle_port.pipeline.engine import CheckReport, check_paths
from candle_port.pipeline.findings import Finding

__all__ = ["check_source", "check_paths", "fix_source", "fix_paths", "CheckReport"]


class SourceSyntaxError(ValueError):
    """Raised by check_source for text that does not parse."""


def check_source(source: str, path: str = "<string>", config: Config | None = None) -> list[Finding]:
    """Findings for one Python source text. Raises SourceSyntaxError if it does not parse."""
    from candle_port.pipeline.checker import check_text

    result = check_text(source, path, config)
    if result.error is not None:
        raise SourceSyntaxError(result.error.describe())
    return result.findings


def fix_source(source: str, strategy: str = "runtime", path: str = "<string>", config: Config | None = None, **options):
    """Rewrite every fixable site of one source text; see candle_port.rewriters.fixer.FixResult."""
    from candle_port.rewriters.fixer import fix_text

    return fix_text(source, strategy=strategy, path=path, config=config or Config(), **options)


def fix_paths(paths: list[str], strategy: str = "runtime", config: Config | None = None, **options):
    """Rewrite the files under `paths` in place; see candle_port.rewriters.files.fix_files."""
    from candle_port.rewriters.files import fix_files

    return fix_files(paths, strategy=strategy, config=config or Config(), **options)
