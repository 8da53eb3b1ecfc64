"""Check source text for constructs candle cannot train: parse, find sites, run every rule."""

from __future__ import annotations

import ast
import warnings

from candle_port.analysis.consumers import detached_input
from candle_port.analysis.outline import Outline
from candle_port.analysis.relevance import Relevance, more_names, recheck_names
from candle_port.analysis.sites import Scan, Site, scan_module
from candle_port.config import Config
from candle_port.pipeline.findings import FileError, FileResult, Finding, Severity
from candle_port.pipeline.prefilter import may_hold_sites
from candle_port.rules import all_rules
from candle_port.pipeline.suppressions import is_suppressed, suppressions


# CPython's parser rejects more than 200 nested brackets itself; libcst's native parser crashes the
# whole process (SIGSEGV) on a few thousand, so port-fix never hands such text to it.
MAX_BRACKET_NESTING = 200

# The largest hand-written file of the corpus is 0.33 MB; a generated file beyond this is not
# analysed (libcst, which port-fix uses to rewrite, needs about 600 bytes of memory per byte).
MAX_PARSE_CHARS = 4_000_000

NO_GRAD_REASON = "not on a gradient path, so only candle's forward runs"


def parse(text: str, path: str) -> ast.Module | FileError:
    """CPython's own tree of `text`, or the FileError to report: port-check never builds a libcst tree."""
    if len(text) > MAX_PARSE_CHARS:
        return FileError(
            path,
            f"too large to analyse ({len(text) / 1e6:.1f} MB of text; the limit is {MAX_PARSE_CHARS / 1e6:.0f} MB, "
            "as the parser needs about 600 times that in memory); not checked",
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like are the user's business
            return compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return FileError(path, f"syntax error: {exc.msg}", exc.lineno, max(exc.offset or 1, 1) if exc.lineno else None)
    except (RecursionError, MemoryError):
        return FileError(path, "syntax error: source too deeply nested to parse")
    except ValueError as exc:
        return FileError(path, f"syntax error: {exc}")


def parse_cst(text: str, path: str):
    """libcst's tree for port-fix (only on a file with sites to rewrite), or a FileError.

    What libcst cannot parse but CPython can is named as such: port-check still checks it.
    """
    import libcst as cst

    if _naive_bracket_depth(text) > MAX_BRACKET_NESTING:
        return FileError(path, "libcst cannot parse this file, though Python can (nested too deeply); not rewritten")
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        message = str(exc.message).splitlines()[0] if exc.message else "invalid syntax"
        return FileError(path, f"libcst cannot parse this file, though Python can ({message}); not rewritten", exc.raw_line, exc.raw_column + 1)
    except (RecursionError, MemoryError):
        return FileError(path, "libcst cannot parse this file, though Python can (nested too deeply); not rewritten")


_DELTA = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _naive_bracket_depth(text: str) -> int:
    """Deepest bracket nesting, counting brackets in strings and comments too (an upper bound)."""
    import itertools
    import re

    brackets = re.sub(r"[^()\[\]{}]+", "", text)
    return max(itertools.accumulate(map(_DELTA.__getitem__, brackets)), default=0)


def harmless_without_gradients(site: Site, codes) -> bool:
    """Whether the site runs with gradients off and every finding of `codes` there is about the
    backward only (candle runs its forward): port-fix leaves such a site alone unless asked."""
    if not site.no_grad:
        return False
    hits = [hit for rule in all_rules() if rule.code in codes for hit in rule.check(site)]
    return bool(hits) and all(hit.backward_only for hit in hits)


def check_module(tree: ast.Module, text: str, path: str, config: Config, index=None, package: str = "") -> list[Finding]:
    """Findings for an already parsed module (used by port-fix to re-check its output)."""
    scan = scan_module(tree, text, index, package)
    if not scan.sites:
        return []
    return findings_for_scan(scan, text, path, config)


def site_position(site: Site) -> tuple[int, int, int]:
    """(line, 1-based character column, end line) of a site's call."""
    call = site.call
    line, offset = call.lineno, call.col_offset
    if site.api.family == "tensor_unfold" and isinstance(call.func, ast.Attribute) and call.func.end_col_offset:
        # a method: at its name, so that chained `x.unfold(...).unfold(...)` are two places
        line, offset = call.func.end_lineno or line, call.func.end_col_offset - len(call.func.attr)
    column = site.source.column(line, offset) if site.source is not None else offset
    return line, column + 1, call.end_lineno or call.lineno


def findings_for_scan(scan: Scan, text: str, path: str, config: Config, pending: list | None = None) -> list[Finding]:
    """The findings of a scan's sites. With `pending` (a tree's file, whose training verdict the
    engine decides with the whole project index: engine._decide_training), a finding whose verdict
    depends on the index is made as if it may train and listed there as (finding, condition)."""
    rules = [rule for rule in all_rules() if config.enabled(rule.code, path)]
    if not rules:
        return []
    suppressed = suppressions(text)
    findings: list[Finding] = []
    deferred: list[tuple[Finding, tuple]] = []
    for site in scan.sites:
        line, column, end_line = site_position(site)
        lines = (line, end_line)
        for rule in rules:
            for hit in rule.check(site):
                if is_suppressed(rule.code, lines, suppressed):
                    continue
                if hit.backward_only and detached_input(site):
                    continue  # `F.interpolate(x.detach(), ...)`: no gradient reaches it
                severity, message = hit.severity or rule.default_severity, hit.message
                untrained, defer = "", False
                if site.kind == "chosen" or (site.kind == "value" and site.chosen_from):
                    severity = Severity.WARNING  # only one of the layers runs
                if site.no_grad and hit.backward_only:
                    severity = Severity.WARNING
                    message += f" (under `{site.no_grad}`: {NO_GRAD_REASON})"
                elif pending is not None and site.untrained_if is not None and not config.include_untrained:
                    defer = True
                elif site.untrained and not config.include_untrained:
                    severity = Severity.WARNING  # analysis/training.py
                    message += f" (not on a training path: {site.untrained})"
                    untrained = site.untrained
                finding = Finding(
                    code=rule.code,
                    path=path,
                    line=line,
                    column=column,
                    message=message,
                    severity=config.severity_of(rule.code, severity),
                    why=rule.why,
                    fixes=hit.fixes,
                    end_line=end_line,
                    hint="" if hit.fixes or site.kind == "wrapper" else hit.hint,  # by hand: where no strategy applies
                    wrapper=site.wrapper,
                    untrained=untrained,
                )
                findings.append(finding)
                if defer:
                    deferred.append((finding, site.untrained_if))
    findings.sort(key=lambda f: (f.line, f.column, f.code))
    if pending is not None and deferred:
        at = {id(f): i for i, f in enumerate(findings)}
        for f, (reason, own, users) in deferred:
            pending.append((at[id(f)], reason, tuple(sorted(own)), tuple(tuple(sorted(u)) for u in users)))
    return findings


def check_text(
    text: str,
    path: str = "<stdin>",
    config: Config | None = None,
    index=None,
    package: str = "",
    module: str = "",
    prefiltered: bool = False,
    skip_unrelated: bool = False,
    defer_training: bool = False,
) -> FileResult:
    """Check one source text; a syntax error becomes the result's `error`, also in a text that
    names no API unless `prefiltered` (the caller found that it may hold a site: a tree's file).

    `index`: the project index (analysis/index.py) of the tree the file is checked in, for names
    defined in other modules; without it, the file's own module constants, enums and wrappers count.
    `prefiltered`: the caller already found that the text may hold a site (engine.check_file).
    `skip_unrelated`: functions that cannot hold a site are not parsed (analysis/relevance.py);
    the result then keeps the words they could reach another module's wrapper by, for the later
    pass that checks it again if one of them turns out to be a new wrapper's name.
    `defer_training`: findings whose training verdict depends on other modules are left as if
    they may train, with what decides it in the result's `untrained_if` (engine._decide_training).
    """
    config = config or Config()
    result = FileResult(path)
    if not prefiltered and not may_hold_sites(text) and (index is None or not index.mentioned_in(text, package)):
        # One text (check_source, stdin): its syntax errors are reported like ruff's, though it
        # holds no site. A tree's files are prefiltered instead (docs/port-check.md says why).
        tree = parse(text, path)
        if isinstance(tree, FileError):
            result.error = tree
        return result
    needed = _scan_needed_bodies(text, path, index, package, module) if skip_unrelated else None
    if needed is not None:
        scan, result.call_words = needed
    else:
        tree = parse(text, path)
        if isinstance(tree, FileError):
            result.error = tree
            return result
        scan = scan_module(tree, text, index, package, module, path)
    result.parsed = True
    pending: list | None = [] if defer_training else None
    result.findings = findings_for_scan(scan, text, path, config, pending) if scan.sites else []
    if pending:
        result.untrained_if = tuple(pending)
    if scan.summary is not None and not scan.summary.empty():
        result.summary = scan.summary.to_json()
    result.refs = tuple(sorted(scan.refs))
    scan.builder.release()
    return result


def _scan_needed_bodies(text: str, path: str, index, package: str, module: str) -> tuple[Scan, frozenset[str]] | None:
    """The scan of `text` with the functions no site needs left out (analysis/outline.py), and the
    words those could reach another module's wrapper or subclass by (relevance.recheck_names);
    None when every function is needed or the outline cannot be trusted: then the whole text is
    parsed."""
    outline = Outline.of(text) if len(text) <= MAX_PARSE_CHARS else None  # too large: said by parse()
    if outline is None:
        return None
    if index is None:
        relevance = Relevance(outline)
    else:
        relevance = Relevance(outline, index.called_names(), index.own_wrapper_names(module))
    while True:
        left_out = relevance.left_out()
        if not left_out:
            return None
        tree = parse(outline.skeleton(left_out), path)
        if isinstance(tree, FileError) or not outline.matches(tree, left_out):
            return None  # a syntax error is reported from the whole text, at its own line
        scan = scan_module(tree, text, index, package, module, path)
        found = more_names(relevance, tree, scan.wrappers)
        if not found or not relevance.add(found):
            return scan, recheck_names(outline, left_out)
        scan.builder.release()

