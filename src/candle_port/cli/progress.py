"""A rich progress bar on stderr, only on an interactive terminal and never in CI logs."""

from __future__ import annotations

import os
import sys

MIN_FILES = 200


def wants_progress(stream=None) -> bool:
    stream = stream or sys.stderr
    return stream.isatty() and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"


class _Bar:
    def __init__(self, total: int, description: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn(description),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._progress.add_task(description, total=total)
        self._progress.start()

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)

    def close(self) -> None:
        self._progress.stop()


def progress_factory(description: str):
    """A factory for engine.check_paths, or None when no bar should be shown."""
    if not wants_progress():
        return None

    def make(total: int):
        return _Bar(total, description) if total >= MIN_FILES else None

    def factory(total: int):
        bar = make(total)
        return bar if bar is not None else _NoBar()

    return factory


class _NoBar:
    def advance(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass
