"""`--output-format github`: workflow commands that GitHub Actions shows as annotations."""

from __future__ import annotations

from candle_port.pipeline.findings import FileError, Finding, Severity


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: list[Finding], errors: list[FileError]) -> str:
    lines = []
    for f in findings:
        level = "error" if f.severity is Severity.ERROR else "warning"
        lines.append(
            f"::{level} title={_escape_property(f'candle-port ({f.code})')},file={_escape_property(f.path)},"
            f"line={f.line},col={f.column},endLine={f.end_line or f.line}::{_escape_data(f'{f.code} {f.message}' + (f' (hint: {f.hint})' if f.hint else ''))}"
        )
    for e in errors:
        where = f",line={e.line},col={e.column or 1}" if e.line else ""
        lines.append(f"::error title=candle-port,file={_escape_property(e.path)}{where}::{_escape_data(e.reason)}")
    return "\n".join(lines)
