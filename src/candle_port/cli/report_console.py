"""The console verify's report is printed on: the terminal's own width, or, when stdout is piped
(a CI log, a file, `| less`), lines that are never wrapped or padded: rich pads every line of a
table or an indented block to the console's width, which in a log is trailing spaces."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Iterator

PIPE_WIDTH = 160  # piped, without $COLUMNS: the widest table layout (kinds, absolute differences)


def pipe_width() -> int:
    try:
        return max(40, int(os.environ.get("COLUMNS", "")))
    except ValueError:
        return PIPE_WIDTH


def strip_trailing(text: str) -> str:
    return "".join(line.rstrip() + "\n" for line in text.splitlines())


@contextlib.contextmanager
def report_console(stream=None) -> Iterator["Console"]:  # noqa: F821 (rich is imported lazily)
    from rich.console import Console

    stream = stream or sys.stdout
    if stream.isatty():
        yield Console(file=stream, highlight=False, emoji=False)
        return
    buffer = io.StringIO()
    # Without $COLUMNS, soft_wrap: a sentence stays on one line (the reader's pager wraps it), never
    # broken at 160; with it, lines wrap at that width as on a terminal.
    soft_wrap = not os.environ.get("COLUMNS")
    yield Console(file=buffer, width=pipe_width(), highlight=False, emoji=False, soft_wrap=soft_wrap, color_system=None)
    stream.write(strip_trailing(buffer.getvalue()))
    stream.flush()
