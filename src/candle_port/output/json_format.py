"""`--output-format json`: a list of finding objects, stable keys, for scripts and CI."""

from __future__ import annotations

import json

from candle_port.pipeline.findings import FileError, Finding


def render(findings: list[Finding], errors: list[FileError]) -> str:
    items = [f.to_dict() for f in findings]
    items += [
        {
            "code": "E902" if e.line is None else "E999",
            "path": e.path,
            "line": e.line or 1,
            "column": e.column or 1,
            "end_line": e.line or 1,
            "message": e.reason,
            "severity": "error",
            "why": "the file could not be checked",
            "fixes": [],
        }
        for e in errors
    ]
    return json.dumps(items, indent=2)
