"""Exit codes, few and documented (README "Exit codes")."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0  # nothing found (warnings only do not fail)
    FINDINGS = 1  # findings at error severity (port-fix --check: something would change)
    USAGE = 2  # bad command line or configuration, or an internal error
    BAD_INPUT = 3  # some file could not be read or parsed; every other file was still processed
    NOT_WRITTEN = 4  # port-fix left a file untouched to protect it (edited meanwhile, read-only, linked)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM (port-fix first lists what it had already rewritten)


def worst(*codes: int) -> int:
    """When several apply, the highest code wins: 4 over 3 over 1 over 0."""
    return max(codes, default=ExitCode.OK)
