"""Check one Rust file: decode, parse, find the candle sites, run the CP2xx rules, apply the
suppressions, and say in each finding which candle version was judged."""

from __future__ import annotations

import codecs

from candle_port.config import Config
from candle_port.pipeline.findings import FileError, FileResult, Finding
from candle_port.pipeline.suppressions import is_suppressed
from candle_port.rust.cargo import CrateContext


class RustSourceError(Exception):
    """Bytes that are not Rust source text (Rust source is UTF-8)."""


def decode_rust(data: bytes) -> bytes:
    """`data` without a UTF-8 BOM, checked to be UTF-8; RustSourceError with the one-line reason."""
    if b"\x00" in data:
        raise RustSourceError("binary file (contains NUL bytes), not Rust source")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RustSourceError(f"not valid utf-8 (Rust source must be): byte 0x{data[exc.start]:02x} at offset {exc.start}") from None
    return data


def version_note(context: CrateContext) -> str:
    """What each finding says about the version judged: `[candle 0.11.0 (Cargo.lock)]`, with
    the measured table used where that version has none."""
    from candle_port.rust.versions import nearest_measured

    measured = nearest_measured(context.version)
    if not context.version:
        return f"[candle version unknown (no Cargo.lock or Cargo.toml names candle-core): judged by candle {measured}'s measurements]"
    if measured != context.version:
        return f"[candle {context.version} ({context.version_source}): not measured, judged by candle {measured}'s measurements, the nearest]"
    return f"[candle {context.version} ({context.version_source})]"


def check_rust_bytes(data: bytes, path: str, config: Config, context: CrateContext) -> FileResult:
    """Findings of one Rust file's bytes; a decode or parse failure becomes the result's error."""
    from candle_port.rust.sites import may_hold_sites

    result = FileResult(path)
    try:
        data = decode_rust(data)
    except RustSourceError as exc:
        result.error = FileError(path, str(exc))
        return result
    text = data.decode("utf-8")
    if not may_hold_sites(text):
        return result
    from candle_port.rust_rules import all_rust_rules

    rules = [rule for rule in all_rust_rules() if config.enabled(rule.code, path)]
    if not rules:
        return result
    from candle_port.rust.parser import parse_rust
    from candle_port.rust.sites import scan
    from candle_port.rust.suppressions import rust_suppressions
    from candle_port.rust.versions import nearest_measured

    tree = parse_rust(data, path)
    if isinstance(tree, FileError):
        result.error = tree
        return result
    result.parsed = True
    sites = scan(tree, data, dict(context.renames))
    if not sites:
        return result
    suppressed = rust_suppressions(tree, text)
    judged = context.version or nearest_measured("")
    note = version_note(context)
    for site in sites:
        line, column, end_line = site.position()
        for rule in rules:
            for hit in rule.check(site, judged):
                if is_suppressed(rule.code, (line, end_line), suppressed):
                    continue
                result.findings.append(
                    Finding(
                        code=rule.code,
                        path=path,
                        line=line,
                        column=column,
                        message=f"{hit.message} {note}",
                        severity=config.severity_of(rule.code, hit.severity or rule.default_severity),
                        why=rule.why,
                        end_line=end_line,
                        hint=rule.fix_hint,
                    )
                )
    result.findings.sort(key=lambda f: (f.line, f.column, f.code))
    return result


def check_rust_source(text: str, path: str = "<string>.rs", config: Config | None = None, candle_version: str | None = None) -> FileResult:
    """check_rust_bytes for a text and no crate around it (the Python API, the rules' examples)."""
    context = CrateContext(candle_version or "", "--candle-version" if candle_version else "")
    return check_rust_bytes(text.encode("utf-8"), path, config or Config(), context)
