"""Say what a long command is doing, stage by stage, on stderr: a rich spinner with the elapsed
time on a terminal; when piped (CI logs), one line when a stage starts and a "still ..." line
every few seconds while it runs, so that no step is silent long enough to look like a hang."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Iterator

from .progress import wants_progress

HEARTBEAT_S = 5.0  # piped: the longest silence inside a stage


class Stages:
    """``with stages.stage("tracing the models"):`` around each long step of one command."""

    def __init__(self, prefix: str, stream=None, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.prefix = prefix
        self.stream = stream or sys.stderr
        self.heartbeat_s = heartbeat_s
        self.terminal = stream is None and wants_progress(self.stream)

    def say(self, text: str) -> None:
        print(f"{self.prefix}: {text}", file=self.stream, flush=True)

    @contextlib.contextmanager
    def stage(self, text: str) -> Iterator[None]:
        if self.terminal:
            with self._spinner(text):
                yield
            return
        self.say(f"{text} ...")
        started = time.monotonic()
        done = threading.Event()

        def beat() -> None:
            while not done.wait(self.heartbeat_s):
                self.say(f"still {text} ({time.monotonic() - started:.0f} s)")

        thread = threading.Thread(target=beat, name="candle-port-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    @contextlib.contextmanager
    def _spinner(self, text: str) -> Iterator[None]:
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn(escape(f"{self.prefix}: {text}")), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True):
            yield

