"""Rich rendering of a VerifyReport (stdout). User text is escaped: ``x[0]`` is markup to rich."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from .optable import candle_pin


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


CHANGED_FILES_SHOWN = 8
REFUSAL_REASONS_SHOWN = 5


def _status(ok: bool | None, changed: bool) -> str:
    if ok is False and changed:
        return "[yellow]changed[/]"
    return {True: "[green]ok[/]", False: "[bold red]MISMATCH[/]", None: "[yellow]info[/]"}[ok]


def _tolerance_text(tol: Any) -> str:
    if tol.mode == "fixed":
        return f"rtol {tol.rtol:g}, atol {tol.atol:g} ({tol.note})"
    return f"{tol.factor:g} x the original's own rounding; {tol.note}"


def _comparison_table(report: Any, max_rows: int) -> Table:
    table = Table(title=f"Original vs rewritten ({escape(report.dtype)}; {escape(_tolerance_text(report.tolerance))})",
                  title_justify="left")
    for col in ("kind", "tensor", "shape", "max abs diff", "max rel diff", "rewrite dist", "own noise",
                "allowed", "status", "note"):
        numeric = "diff" in col or col in ("rewrite dist", "own noise", "allowed")
        table.add_column(col, justify="right" if numeric else "left", overflow="fold")
    rows = report.rows
    hidden = 0
    if len(rows) > max_rows:
        keep = [r for r in rows if r.ok is False or r.kind in ("output", "input grad", "new param")]
        rest = sorted((r for r in rows if r not in keep), key=lambda r: -(r.ratio or r.rel_to_scale or 0.0))
        room = max(0, max_rows - len(keep))
        shown = set(map(id, keep + rest[:room]))
        hidden = len(rows) - len(shown)
        rows = [r for r in rows if id(r) in shown]
    changed = report.changes_by_design
    for r in rows:
        dist = r.rewrite_dist if r.rewrite_dist is not None else r.rel_to_scale
        table.add_row(r.kind, escape(r.name), "x".join(map(str, r.shape)) or "-", _num(r.max_abs),
                      _num(r.max_rel), _num(dist), _num(r.own_noise), _num(r.allowed),
                      _status(r.ok, changed), escape(r.note))
    if hidden:
        table.caption = f"{hidden} more parameter gradients within tolerance (all rows: --output-format json)"
    return table


def _graph_table(label: str, graph: dict[str, Any]) -> Table | str:
    tracer = graph["tracer"] + (f", {graph['fallback_reason']}" if graph.get("fallback_reason") else "")
    lacking = [row for row in graph["summary"] if not row["ok"] or row.get("wrong")]
    total = sum(row["count"] for row in graph["summary"])
    on_path = sum(row["count"] for row in graph["summary"] if row["on_grad_path"])
    if not lacking:
        return (f"[bold]{label} graph[/] ({escape(tracer)}): [green]every op on a gradient path has a correct "
                f"candle backward[/] ({total} ops, {on_path} on gradient paths)")
    table = Table(title=f"{label} graph ({escape(tracer)}): ops without a correct candle backward", title_justify="left")
    for col in ("aten op", "class", "count", "why", "where"):
        table.add_column(col, overflow="fold")
    for row in lacking:
        cls, why = (row["class"], row["reason"]) if not row["ok"] else ("wrong gradient", row["wrong"])
        table.add_row(escape(row["name"]), cls, str(row["count"]), escape(why), escape("\n".join(row["where"])))
    table.caption = f"{total} ops, {on_path} on gradient paths"
    return table


def _rewrite_lines(report: Any, console: Any, show_refusals: bool) -> None:
    changed = report.rewrite["changed"]
    names = ", ".join(changed[:CHANGED_FILES_SHOWN])
    more = f" (+{len(changed) - CHANGED_FILES_SHOWN} more)" if len(changed) > CHANGED_FILES_SHOWN else ""
    console.print(f"rewrite: {len(changed)} of {report.rewrite['scanned']} file(s) changed under "
                  f"{escape(report.source_root)}" + (f": {escape(names)}{more}" if changed else ""))
    if report.rewrite.get("sites_fixed"):
        console.print(f"port-fix: {report.rewrite['sites_fixed']} site(s) rewritten")
    refused = report.rewrite.get("refused", [])
    if show_refusals:
        for note in refused:
            console.print(f"[yellow]port-fix refused[/] {escape(note)}")
    elif refused:
        groups = report.refusal_summary()
        console.print(f"[yellow]port-fix refused {len(refused)} site(s)[/] ({len(groups)} reason(s); all: --show-refusals):")
        for reason, count, first in groups[:REFUSAL_REASONS_SHOWN]:
            console.print(f"  {count} x {escape(reason)} (e.g. {escape(', '.join(first))})")
        if len(groups) > REFUSAL_REASONS_SHOWN:
            console.print(f"  ... {len(groups) - REFUSAL_REASONS_SHOWN} more reason(s)")
    for err in report.rewrite.get("errors", []):
        console.print(f"[yellow]rewrite warning:[/] {escape(err)}")


def _caveats(report: Any, console: Any) -> None:
    """Ops candle trains but not exactly, with where they are: what the rewrite removed (dim) and
    what it left (yellow). Wrong gradients that decide the verdict are in the graph table."""
    for prefix, graph in (
        ("[dim]original graph, candle caveat[/]", report.graph_original),
        ("[yellow]candle caveat[/]", report.graph_rewritten),
    ):
        warnings: dict[str, tuple[str, str]] = {}
        for row in (graph or {}).get("summary", []):
            if row["warning"] and row["on_grad_path"]:
                warnings.setdefault(row["name"], (row["warning"], row["where"][0] if row["where"] else ""))
        for name, (text, where) in warnings.items():
            at = f" at {escape(where)}" if where else ""
            console.print(f"{prefix} {escape(name)}{at}: {escape(text)}")


def render_report(report: Any, console: Any, show_refusals: bool = False) -> None:
    pin = candle_pin()
    console.print(f"[bold]candle-port verify[/] {escape(report.model)}  strategy={report.strategy} "
                  f"dtype={report.dtype} seed={report.seed} mode={'train' if report.train else 'eval'} "
                  f"inputs={escape(str(report.input_shapes))}")
    _rewrite_lines(report, console, show_refusals)
    if report.new_parameters:
        console.print(f"[yellow]new parameters added by the rewrite (initialised, not loaded):[/] "
                      f"{escape(', '.join(report.new_parameters))}")
    if report.dropped_state:
        console.print(f"[yellow]state_dict entries the rewritten model does not have:[/] "
                      f"{escape(', '.join(report.dropped_state))}")
    console.print(_comparison_table(report, 40))
    for label, graph in (("Original", report.graph_original), ("Rewritten", report.graph_rewritten)):
        if graph is not None:
            console.print(_graph_table(label, graph))
    if report.graph_rewritten is None:
        console.print(f"[yellow]rewritten graph not checked:[/] {escape(report.trace_error or 'not traced')}")
    _caveats(report, console)
    if report.gradcheck is not None:
        gc = report.gradcheck
        console.print(f"gradcheck (float64, eval, inputs {gc['shapes']}, input gradient only: parameters are "
                      f"not gradchecked, {gc['seconds']}s): "
                      + ("[green]ok[/]" if gc["ok"] else f"[bold red]FAILED[/] {escape(gc['message'])}"))
    console.print(f"[dim]op table: candle {pin['version']} @ {pin['commit'][:12]}; {report.seconds}s[/]")
    verdict = report.verdict
    if verdict == "pass":
        extra = ""
        if report.wrong_gradients:
            extra = f" ({len(report.wrong_gradients)} wrong candle gradient(s) accepted by --allow-wrong-gradients)"
        console.print("[bold green]PASS[/]: the rewritten model matches and candle trains every op on its "
                      "gradient paths with a correct gradient" + escape(extra))
    elif verdict == "changed":
        console.print(f"[bold yellow]CHANGED[/]: {escape(report.changed_summary())}")
    elif verdict == "unchecked":
        console.print("[bold yellow]UNCHECKED[/]: the numbers " + ("differ as the strategy intends" if report.changes_by_design
                      else "match") + "; " + escape("; ".join(report.unchecked)))
    else:
        console.print("[bold red]FAIL[/]: " + escape("; ".join(report.failures)))
