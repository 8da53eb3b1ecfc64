"""`--output-format sarif`: SARIF 2.1.0 for GitHub code scanning (upload-sarif)."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from candle_port import __version__
from candle_port.pipeline.findings import FileError, Finding, Severity
from candle_port.rules import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path: str) -> str:
    posix = PurePosixPath(path.replace("\\", "/"))
    return str(posix)[2:] if str(posix).startswith("./") else str(posix)


def render(findings: list[Finding], errors: list[FileError]) -> str:
    rules = all_rules()
    if any(f.code.startswith("CP2") for f in findings):
        from candle_port.rust_rules import all_rust_rules

        rules = rules + all_rust_rules()
    index = {rule.code: i for i, rule in enumerate(rules)}
    results = []
    for f in findings:
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": "error" if f.severity is Severity.ERROR else "warning",
                "message": {"text": f"{f.message}. Why: {f.why}." + (f" Fix by hand: {f.hint}." if f.hint else "")},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": _uri(f.path)},
                            "region": {
                                "startLine": f.line,
                                "startColumn": f.column,
                                "endLine": f.end_line or f.line,
                            },
                        }
                    }
                ],
            }
        )
    notifications = [
        {
            "level": "error",
            "message": {"text": e.describe()},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(e.path)}}}],
        }
        for e in errors
    ]
    run = {
        "tool": {
            "driver": {
                "name": "candle-port",
                "version": __version__,
                "informationUri": "https://github.com/candle-port/candle-port",
                "rules": [
                    {
                        "id": rule.code,
                        "name": rule.name,
                        "shortDescription": {"text": rule.summary},
                        "fullDescription": {"text": f"{rule.why}. Source: {rule.source}."},
                        "help": {"text": rule.fix_hint or rule.summary},
                        "defaultConfiguration": {"level": rule.default_severity.value},
                    }
                    for rule in rules
                ],
            }
        },
        "results": results,
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notifications}],
    }
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)
