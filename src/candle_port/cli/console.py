"""Console output without importing rich where it would style nothing.

Importing rich costs about 30 ms of CPU, a sixth of port-check's whole run on a small file. Output
that goes to a pipe or a file (pre-commit, CI logs, editors) has no colours anyway, so there a
`PlainConsole` strips the console markup and writes the text as rich would have. On a terminal,
or with FORCE_COLOR set, the commands get rich's Console as before.
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of port-check's start)
if TYPE_CHECKING:
    from typing import TextIO

# rich.markup's tag pattern: the backslashes before a tag, and the tag's text between brackets.
_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")


def escape(text: str) -> str:
    """Protect `text` from being read as markup; the same result as rich.markup.escape."""
    text = _TAG.sub(lambda m: f"{m.group(1)}{m.group(1)}\\[{m.group(2)}]", text)
    if text.endswith("\\") and not text.endswith("\\\\"):
        return text + "\\"
    return text


def strip_markup(markup: str) -> str:
    """The text rich prints for `markup` without styles (tags dropped, escapes undone)."""
    out: list[str] = []
    position = 0
    for match in _TAG.finditer(markup):
        start, end = match.span()
        out.append(markup[position:start].replace("\\[", "["))
        backslashes, escaped = divmod(len(match.group(1)), 2)
        out.append("\\" * backslashes)
        if escaped:
            out.append(f"[{match.group(2)}]")
        position = end
    out.append(markup[position:].replace("\\[", "["))
    return "".join(out)


class PlainConsole:
    """The part of rich's Console the check command uses, writing unstyled text."""

    color_system = None
    record = False

    def __init__(self, file: TextIO) -> None:
        self.file = file

    def print(self, text: str = "", *, markup: bool = True, **_ignored) -> None:
        self.file.write((strip_markup(text) if markup else text) + "\n")
        self.file.flush()


def _styled(stream: TextIO) -> bool:
    """Whether rich would style output to `stream` (a terminal, or colour forced)."""
    if os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE") == "1":
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def console_for(stderr: bool):
    """rich's Console on a terminal, else a PlainConsole (no rich import)."""
    stream = sys.stderr if stderr else sys.stdout
    if not _styled(stream):
        return PlainConsole(stream)
    from rich.console import Console

    if stderr:
        return Console(stderr=True, highlight=False, emoji=False)
    return Console(highlight=False, soft_wrap=True, emoji=False)
