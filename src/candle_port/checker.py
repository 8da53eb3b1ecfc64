"""Check source text for constructs candle cannot train: parse, find sites, run every rule."""

from __future__ import annotations

import ast

import libcst as cst

from candle_port.analysis.positions import call_positions
from candle_port.analysis.sites import Scan, Site, scan_module
from candle_port.config import Config
from candle_port.findings import FileError, FileResult, Finding, Severity
from candle_port.prefilter import may_hold_sites
from candle_port.rules import all_rules
from candle_port.suppressions import is_suppressed, suppressions


NO_GRAD_REASON = "not on a gradient path, so only candle's forward runs"


def parse(text: str, path: str) -> cst.Module | FileError:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return _syntax_error(text, path, exc)
    except (RecursionError, MemoryError):
        return FileError(path, "syntax error: source too deeply nested to parse")


def _syntax_error(text: str, path: str, exc: cst.ParserSyntaxError) -> FileError:
    """One short line, as Python says it: libcst lists every token it expected and can point past the error.

    CPython's own parser names the problem (`invalid syntax`, `'(' was never closed`) and its place; libcst's
    position is the fallback when CPython accepts what libcst does not (a newer grammar).
    """
    try:
        ast.parse(text)
    except SyntaxError as error:
        if error.lineno:
            return FileError(path, f"syntax error: {error.msg}", error.lineno, max(error.offset or 1, 1))
    except (ValueError, RecursionError, MemoryError):
        pass
    message = str(exc.message).splitlines()[0] if exc.message else "invalid syntax"
    if len(message) > 80:
        message = message.split(":")[0] if ":" in message else message[:77] + "..."
    return FileError(path, f"syntax error: {message}", exc.raw_line, exc.raw_column + 1)


def harmless_without_gradients(site: Site, codes) -> bool:
    """Whether the site runs with gradients off and every finding of `codes` there is about the
    backward only (candle runs its forward): port-fix leaves such a site alone unless asked."""
    if not site.no_grad:
        return False
    hits = [hit for rule in all_rules() if rule.code in codes for hit in rule.check(site)]
    return bool(hits) and all(hit.backward_only for hit in hits)


def check_module(module: cst.Module, text: str, path: str, config: Config) -> list[Finding]:
    """Findings for an already parsed module (used by port-fix to re-check its output)."""
    scan = scan_module(module)
    if not scan.sites:
        return []
    return findings_for_scan(module, scan, text, path, config)


def findings_for_scan(module: cst.Module, scan: Scan, text: str, path: str, config: Config) -> list[Finding]:
    rules = [rule for rule in all_rules() if config.enabled(rule.code, path)]
    if not rules:
        return []
    positions = call_positions(module, text, scan.calls, [site.call for site in scan.sites])
    suppressed = suppressions(text)
    findings: list[Finding] = []
    for site in scan.sites:
        line, column, end_line = positions[site.call]
        lines = (line, end_line)
        for rule in rules:
            for hit in rule.check(site):
                if is_suppressed(rule.code, lines, suppressed):
                    continue
                severity, message = hit.severity or rule.default_severity, hit.message
                if site.kind == "chosen":
                    severity = Severity.WARNING  # only one of the layers runs
                if site.no_grad and hit.backward_only:
                    severity = Severity.WARNING
                    message += f" (under `{site.no_grad}`: {NO_GRAD_REASON})"
                findings.append(
                    Finding(
                        code=rule.code,
                        path=path,
                        line=line,
                        column=column,
                        message=message,
                        severity=config.severity_of(rule.code, severity),
                        why=rule.why,
                        fixes=hit.fixes,
                        end_line=end_line,
                        hint=hit.hint,
                    )
                )
    findings.sort(key=lambda f: (f.line, f.column, f.code))
    return findings


def check_text(text: str, path: str = "<stdin>", config: Config | None = None) -> FileResult:
    """Check one source text; a syntax error becomes the result's `error`."""
    config = config or Config()
    result = FileResult(path)
    if not may_hold_sites(text):
        return result
    module = parse(text, path)
    if isinstance(module, FileError):
        result.error = module
        return result
    result.parsed = True
    result.findings = check_module(module, text, path, config)
    return result
