"""Fix one source text: find the sites port-check reports, rewrite the eligible ones, verify.

Which sites: those with an unsuppressed, enabled finding (port-check's own rules, suppression
comments and config) whose code the strategy considers. Each is either fixed, refused (with
eligibility.refusal's reason), or, when its finding is suppressed or disabled, skipped. Every
other finding (an API the runtime has no drop-in for, e.g. nn.LPPool3d) is listed as unfixable, with the rule's
hint, so the summary accounts for every site port-check reports.

The result is verified before it is returned: it must parse (libcst and Python's compiler), and
re-checking it must report no fixed code except at the refused and skipped sites. Otherwise the
text is left unchanged and the result carries an error.
"""

from __future__ import annotations

import ast
import sys

import libcst as cst

from candle_port.analysis.names import ClassInfo
from candle_port.analysis.sites import Site, reference_call, scan_module
from candle_port.pipeline.checker import findings_for_scan, harmless_without_gradients, parse, parse_cst, site_position
from candle_port.config import Config
from candle_port.pipeline.findings import FileError
from candle_port.pipeline.prefilter import may_hold_sites
from candle_port.rewriters import exact_type, imports, strategies, unused_imports
from candle_port.rewriters.results import Fixed, FixError, FixResult, Refused, Skipped, Unfixable
from candle_port.rewriters.splice import splice
from candle_port.rewriters.strategies import CONVTRANSPOSE, NEAREST, RUNTIME, STRATEGIES
from candle_port.rules import all_rules


def fix_text(
    text: str,
    strategy: str = RUNTIME,
    path: str = "<string>",
    config: Config | None = None,
    vendored_module: str | None = None,
    fast: bool = True,
    untrained: dict | None = None,
    **options,
) -> FixResult:
    """Rewrite every fixable site of `text` with `strategy`; never raises for bad source.

    `vendored_module`: import the runtime from this module (written by --vendor) instead of
    candle_port.runtime. `fast=False` forces the libcst transformer instead of splicing callee
    spans into the text (same output; the tests compare them). `untrained`: (line, column) -> why,
    sites the project index puts on no training path (left alone, as the file's own are). A syntax error becomes the result's `error` with the text unchanged.
    """
    if strategy not in STRATEGIES:
        raise FixError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    chosen = strategies.get(strategy)
    if options:
        raise FixError(f"unknown option(s): {', '.join(sorted(options))}")
    config = config or Config()
    result = FixResult(path, strategy, text, text)
    if not may_hold_sites(text):
        return result
    tree = parse(text, path)
    if isinstance(tree, FileError):
        if tree.reason.startswith("syntax error") and not isinstance(parse_cst(text, path), FileError):
            # libcst reads newer syntax than the running Python compiles: not the user's error.
            version = ".".join(map(str, sys.version_info[:2]))
            tree = FileError(
                path, f"Python {version} cannot compile this file (newer syntax?); run port-fix under the Python the code targets; left unchanged"
            )
        result.error = tree
        return result
    scan = scan_module(tree, text)
    # A call of a wrapper is reported where it passes its mode; the wrapper is rewritten, not the call.
    scan.sites = [site for site in scan.sites if site.kind != "wrapper"]
    if not scan.sites:
        return result
    considered = strategies.CONSIDERED_CODES
    all_findings = [f for f in findings_for_scan(scan, text, path, config) if not f.wrapper]
    findings = [f for f in all_findings if f.code in considered]
    positions = {site.call: site_position(site) for site in scan.sites}
    by_position: dict[tuple[int, int], list[str]] = {}
    for finding in findings:
        by_position.setdefault((finding.line, finding.column), []).append(finding.code)
    rules = [rule for rule in all_rules() if rule.code in considered]
    class_checks = None  # built once, when a class would be swapped

    planned: list[tuple[Site, str]] = []  # (site, codes)
    for site in scan.sites:
        line, column, _ = positions[site.call]
        codes = by_position.get((line, column))
        if not codes:
            raw = [rule.code for rule in rules if any(True for _ in rule.check(site))]
            if raw:
                reason = "finding suppressed by a `# port: ignore` comment or disabled by configuration"
                result.skipped.append(Skipped(",".join(raw), line, column, reason))
            continue
        code = ",".join(sorted(set(codes)))
        if not chosen.considers(site):
            continue  # no runtime drop-in for this API: listed as unfixable below, with the rule's hint
        if not config.include_no_grad and harmless_without_gradients(site, codes):
            reason = f"under `{site.no_grad}`, not on a gradient path; --include-no-grad rewrites it"
            result.skipped.append(Skipped(code, line, column, reason, no_grad=True))
            continue
        why = site.untrained or (untrained or {}).get((line, column))
        if why and not config.include_untrained:
            reason = f"not on a training path: {why}"
            result.skipped.append(Skipped(code, line, column, reason, no_grad=True))
            continue
        reason = chosen.refusal(site)
        if reason is None and not set(codes) <= set(chosen.fixed_codes):
            reason = f"the {strategy} strategy does not fix {code}"
        if reason is None and site.kind == "subclass" and _subclass_base(site) is None:
            reason = f"cannot locate the nn.{site.api.name} base class of this subclass; rewrite it by hand"
        if reason is None and _swaps_class(site, chosen):
            class_checks = class_checks or exact_type.ClassChecks(tree)
            reason = class_checks.refusal(site, chosen.replacement_subclasses_api)
        if reason is not None:
            refused = Refused(code, line, column, reason)
            if refused not in result.refused:  # a layer chosen at run time: one site per class it can be
                result.refused.append(refused)
            continue
        planned.append((site, code))
        result.fixed.append(
            Fixed(code, line, column, strategy, site.api.name, chosen.note(site))
        )
    _list_unfixable(all_findings, result)
    if not planned:
        return result

    module = parse_cst(text, path)  # libcst only here: a file with sites to rewrite
    if isinstance(module, FileError):
        result.error = module
        result.fixed.clear()
        return result
    try:
        new_text = _rewrite(module, tree, text, planned, strategy, vendored_module, result, fast)
    except _NoPlaceForImport as exc:
        result.refused.extend(Refused(f.code, f.line, f.column, str(exc)) for f in result.fixed)
        result.fixed.clear()
        result.import_added = None
        return result
    except _Unlocated as exc:
        result.error = FileError(path, f"internal error, file left unchanged: libcst has no node for the {exc}")
        result.fixed.clear()
        result.import_added = None
        return result
    new_text, result.imports_removed = unused_imports.remove_made_unused(tree, new_text, path)
    problem = _verify(new_text, path, config, strategy, result)
    if problem is not None and not _compiles(text, path):
        # libcst reads newer syntax than the running Python compiles: not a port-fix bug.
        version = ".".join(map(str, sys.version_info[:2]))
        result.error = FileError(
            path, f"Python {version} cannot compile this file (newer syntax?); run port-fix under the Python the code targets; left unchanged"
        )
        result.fixed.clear()
        result.import_added = None
        result.imports_removed = []
        return result
    if problem is not None:
        result.error = FileError(path, f"internal error, file left unchanged: {problem}")
        result.fixed.clear()
        result.import_added = None
        result.imports_removed = []
        return result
    result.text = new_text
    return result


def _swaps_class(site: Site, chosen: strategies.Strategy) -> bool:
    """Whether the rewrite puts another class where the site's layer class was (a subclass's base
    changes nothing an exact-type check of the layer class sees)."""
    return site.api.is_module and site.kind != "subclass" and chosen.target(None) is not None


def _list_unfixable(findings, result: FixResult) -> None:
    """Findings at sites not fixed, refused or skipped: codes no strategy considers, APIs with no drop-in."""
    handled = {(e.line, e.column) for e in (*result.fixed, *result.refused, *result.skipped)}
    hints = {rule.code: rule.fix_hint or rule.summary for rule in all_rules()}
    for finding in findings:
        if (finding.line, finding.column) in handled:
            continue
        reason = f"no automatic fix; {hints[finding.code]}"
        result.unfixable.append(Unfixable(finding.code, finding.line, finding.column, reason))


def _subclass_base(site: Site) -> tuple[ast.ClassDef, int] | None:
    """The local class and the index of its base that is the torch API (through local subclasses)."""
    info: ClassInfo | None = site.subclass
    seen: set[int] = set()
    while info is not None and id(info) not in seen:
        seen.add(id(info))
        next_info = None
        for index, base in enumerate(info.node.bases):
            if site.qualified_name not in site.resolver.qualified_names(base, info.scope):
                continue
            local = None
            if isinstance(base, ast.Name):
                bindings = site.resolver.lookup(base.id, info.scope) or ()
                local = next((b for b in bindings if isinstance(b, ClassInfo)), None)
            if local is None:
                return info.node, index
            next_info = local
            break
        info = next_info
    return None


class _CstNodes:
    """The libcst node at each ast site: calls by their callee's span, classes by name and line,
    and a class passed as a value (site kind "value") by its own span.

    One analysis: the sites are the ast ones port-check reports; libcst only locates them to rewrite.
    """

    def __init__(self, module: cst.Module, text: str, value_calls=()) -> None:
        from libcst.metadata import MetadataWrapper, PositionProvider

        from candle_port.analysis.values import Source

        self.source = Source(text)
        value_spans = frozenset(self._key(call.func) for call in value_calls)
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
        self.calls: dict[tuple, cst.Call] = {}
        self.classes: dict[tuple, cst.ClassDef] = {}
        self.values: dict[tuple, cst.BaseExpression] = {}
        for node, where in positions.items():
            if value_spans and isinstance(node, (cst.Name, cst.Attribute)):
                span = (where.start.line, where.start.column, where.end.line, where.end.column)
                if span in value_spans:
                    self.values[span] = node
            if isinstance(node, cst.Call):
                func = positions[node.func]
                self.calls[(func.start.line, func.start.column, func.end.line, func.end.column)] = node
            elif isinstance(node, cst.ClassDef):
                self.classes[(node.name.value, positions[node.name].start.line)] = node

    def _key(self, node: ast.AST) -> tuple:
        src = self.source
        return (
            node.lineno,
            src.column(node.lineno, node.col_offset),
            node.end_lineno,
            src.column(node.end_lineno, node.end_col_offset),
        )

    def call(self, call: ast.Call) -> cst.Call | None:
        return self.calls.get(self._key(call.func))

    def value(self, call: ast.Call) -> cst.BaseExpression | None:
        return self.values.get(self._key(call.func))

    def classdef(self, node: ast.ClassDef) -> cst.ClassDef | None:
        return self.classes.get((node.name, node.lineno))


def _cst_site(site: Site, call: cst.Call) -> Site:
    """The site with its call and bound arguments as libcst nodes, for the strategies."""
    arguments: dict[str, cst.Arg] = {}
    position = 0
    args = call.args[1:] if site.kind == "partial" else call.args
    for arg in args:
        if arg.star:
            continue
        if arg.keyword is not None:
            arguments[arg.keyword.value] = arg
            continue
        if position < len(site.api.params):
            arguments[site.api.params[position]] = arg
        position += 1
    return site.replace(call=call, arguments=arguments)


def _assignments_swapped(planned):
    """A layer chosen through a rebound name (`klass = nn.Conv1d; if freq: klass = nn.Conv2d;
    klass(...)`) is fixed where its class is assigned: one reference swap per assignment that
    names the site's API (as a class passed as a value), each once however many calls use it."""
    out, seen = [], set()
    for site, code in planned:
        if site.kind != "chosen" or not site.rebound_classes:
            out.append((site, code))
            continue
        for node in site.rebound_classes:
            if (node.lineno, node.col_offset) in seen:
                continue
            seen.add((node.lineno, node.col_offset))
            out.append((site.replace(call=reference_call(node), kind="value"), code))
    return out


def _rewrite(module: cst.Module, tree: ast.Module, text: str, planned, strategy: str, vendored_module, result: FixResult, fast: bool) -> str:
    planned = _assignments_swapped(planned)
    chosen = strategies.get(strategy)
    target = chosen.target(vendored_module)
    alias = None
    existing = None
    if target is not None:
        existing = alias = imports.existing_alias(module, target.module)
        if alias is None:
            alias = imports.fresh_name(target.preferred_alias, imports.used_names(text))
    if fast and chosen.splices and all(site.kind != "subclass" for site, _ in planned):
        import_line = f"import {target.module} as {alias}" if existing is None else None
        edits = [
            (site.call, site.kind == "partial", f"{alias}.{chosen.replacement_name(site)}")
            for site, _ in planned
        ]
        spliced = splice(text, tree, edits, import_line)
        if spliced is not None:
            result.import_added = import_line
            return spliced
    nodes = _CstNodes(module, text, [site.call for site, _ in planned if site.kind == "value"])
    calls: dict[int, Site] = {}
    values: dict[int, cst.BaseExpression] = {}
    bases: dict[int, tuple[cst.ClassDef, dict[int, cst.BaseExpression]]] = {}
    for site, _ in planned:
        if site.kind == "value":
            reference = nodes.value(site.call)
            if reference is None:
                raise _Unlocated(f"class reference at line {site.call.lineno}")
            values[id(reference)] = strategies.callee(alias, chosen.replacement_name(site))
        elif site.kind == "subclass":
            found = _subclass_base(site)
            assert found is not None
            node, index = found
            classdef = nodes.classdef(node)
            if classdef is None:
                raise _Unlocated(f"class {node.name} at line {node.lineno}")
            new = strategies.callee(alias, chosen.replacement_name(site))
            bases.setdefault(id(classdef), (classdef, {}))[1][index] = new
        else:
            call = nodes.call(site.call)
            if call is None:
                raise _Unlocated(f"call at line {site.call.lineno}")
            calls[id(call)] = _cst_site(site, call)
    transformer = _Transformer(calls, bases, chosen, alias, values)
    new_module = module.visit(transformer)
    if target is not None and transformer.used_target and imports.existing_alias(module, target.module) is None:
        new_module = imports.add_import(new_module, target.module, alias)
        result.import_added = f"import {target.module} as {alias}"
        if not any(imports.imports_torch(statement) for statement in module.body):
            # Placed where torch is imported (optional torch): every fixed site must see it.
            if not imports.alias_seen_by_every_use(new_module.code, alias):
                raise _NoPlaceForImport(
                    f"torch is imported only inside other functions or blocks, so no place for `import {target.module}` "
                    "is seen by this site without importing torch where the module did not; rewrite it by hand"
                )
    return new_module.code


class _NoPlaceForImport(Exception):
    """The runtime import cannot go where the file imports torch and still be seen by every fixed site."""


class _Unlocated(Exception):
    """An ast site that libcst's tree has no node for at the same place (should not happen)."""


class _Transformer(cst.CSTTransformer):
    def __init__(self, calls: dict[int, Site], bases, strategy: strategies.Strategy, alias: str | None, values=None) -> None:
        self.calls = calls
        self.bases = bases
        self.strategy = strategy
        self.alias = alias
        self.values = values or {}  # id of a class reference passed as a value -> its replacement
        self.used_target = bool(bases) or bool(self.values)

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        return self.values.get(id(original_node), updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        return self.values.get(id(original_node), updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        site = self.calls.get(id(original_node))
        if site is None:
            return updated_node
        self.used_target = self.used_target or self.alias is not None
        return self.strategy.rewrite_call(site, original_node, updated_node, self.alias)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.BaseStatement:
        found = self.bases.get(id(original_node))
        if found is None:
            return updated_node
        _, new_bases = found
        return strategies.swap_base(updated_node, set(new_bases), new_bases)


def _compiles(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _verify(new_text: str, path: str, config: Config, strategy: str, result: FixResult) -> str | None:
    """Why the rewritten text must not be written, or None when it is fine."""
    try:
        compile(new_text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"the rewrite does not parse ({exc})"
    tree = parse(new_text, path)
    if isinstance(tree, FileError):
        return f"the rewrite does not parse ({tree.reason})"
    from candle_port.pipeline.checker import check_module

    fixed_codes = set(strategies.get(strategy).fixed_codes)
    remaining = {
        (f.line, f.column) for f in check_module(tree, new_text, path, config) if f.code in fixed_codes and not f.wrapper
    }
    kept = (*result.refused, *(s for s in result.skipped if s.no_grad), *result.unfixable)
    allowed = sum(1 for r in kept if set(r.code.split(",")) & fixed_codes)
    if len(remaining) > allowed:
        return f"port-check still reports {', '.join(sorted(fixed_codes))} at {len(remaining) - allowed} fixed site(s)"
    return None


__all__ = ["FixResult", "Fixed", "Refused", "Skipped", "Unfixable", "FixError", "fix_text", "CONVTRANSPOSE", "NEAREST", "RUNTIME"]
