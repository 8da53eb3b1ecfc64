"""Check source text for constructs candle cannot train: parse, find sites, run every rule."""

from __future__ import annotations

import ast
import itertools
import re

import libcst as cst

from candle_port.analysis.positions import call_positions
from candle_port.analysis.sites import Scan, Site, scan_module
from candle_port.config import Config
from candle_port.findings import FileError, FileResult, Finding, Severity
from candle_port.prefilter import may_hold_sites
from candle_port.rules import all_rules
from candle_port.suppressions import is_suppressed, suppressions


# CPython's parser rejects more than 200 nested brackets; libcst's native parser crashes the whole
# process (SIGSEGV) on a few thousand, so such text never reaches it.
MAX_BRACKET_NESTING = 200
_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
_DELTA = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _naive_bracket_depth(text: str) -> int:
    """Deepest bracket nesting, counting brackets in strings and comments too (an upper bound)."""
    brackets = _NOT_BRACKETS.sub("", text)
    return max(itertools.accumulate(map(_DELTA.__getitem__, brackets)), default=0)


# libcst needs about 600 bytes of memory per byte of source (a 50 MB generated file: 24 GB and the
# OOM killer); the largest hand-written file of the corpus is 0.33 MB.
MAX_PARSE_CHARS = 4_000_000

NO_GRAD_REASON = "not on a gradient path, so only candle's forward runs"


def parse(text: str, path: str) -> cst.Module | FileError:
    if len(text) > MAX_PARSE_CHARS:
        return FileError(
            path,
            f"too large to analyse ({len(text) / 1e6:.1f} MB of text; the limit is {MAX_PARSE_CHARS / 1e6:.0f} MB, "
            "as the parser needs about 600 times that in memory); not checked",
        )
    if _naive_bracket_depth(text) > MAX_BRACKET_NESTING:
        try:
            compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as exc:
            return FileError(path, f"syntax error: {exc.msg}", exc.lineno, exc.offset)
        except (ValueError, RecursionError, MemoryError) as exc:
            return FileError(path, f"syntax error: {type(exc).__name__}: {exc}")
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        message = str(exc.message).splitlines()[0] if exc.message else "invalid syntax"
        if _python_accepts(text, path):
            return FileError(path, f"libcst cannot parse this file, though Python can ({message}); not checked", exc.raw_line, exc.raw_column + 1)
        return _syntax_error(text, path, exc)
    except (RecursionError, MemoryError):
        if _python_accepts(text, path):
            return FileError(path, "libcst cannot parse this file (nested too deeply), though Python can; not checked")
        return FileError(path, "syntax error: source too deeply nested to parse")


def _python_accepts(text: str, path: str) -> bool:
    """Whether this Python compiles `text`: "syntax error" is said only of what CPython rejects."""
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


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
