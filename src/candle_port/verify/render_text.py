"""Rich rendering of a VerifyReport (stdout). User text is escaped: ``x[0]`` is markup to rich."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from .optable import candle_pin


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _status(ok: bool | None) -> str:
    return {True: "[green]ok[/]", False: "[bold red]MISMATCH[/]", None: "[yellow]info[/]"}[ok]


def _comparison_table(report: Any, max_rows: int) -> Table:
    tol = "not enforced" if report.rtol is None else f"rtol {report.rtol:g}, atol {report.atol:g}"
    table = Table(title=f"Original vs rewritten ({escape(report.dtype)}; {tol})", title_justify="left")
    for col in ("kind", "tensor", "shape", "max abs diff", "max rel diff", "tested rel diff", "status", "note"):
        table.add_column(col, justify="right" if "diff" in col else "left", overflow="fold")
    rows = report.rows
    hidden = 0
    if len(rows) > max_rows:
        keep = [r for r in rows if r.ok is False or r.kind in ("output", "input grad", "new param")]
        rest = sorted((r for r in rows if r not in keep), key=lambda r: -(r.rel_to_scale or 0.0))
        room = max(0, max_rows - len(keep))
        shown = set(map(id, keep + rest[:room]))
        hidden = len(rows) - len(shown)
        rows = [r for r in rows if id(r) in shown]
    for r in rows:
        table.add_row(r.kind, escape(r.name), "x".join(map(str, r.shape)) or "-", _num(r.max_abs),
                      _num(r.max_rel), _num(r.rel_to_scale), _status(r.ok), escape(r.note))
    if hidden:
        table.caption = f"{hidden} more parameter gradients within tolerance (all rows: --output-format json)"
    return table


def _graph_table(label: str, graph: dict[str, Any]) -> Table | str:
    tracer = graph["tracer"] + (f", {graph['fallback_reason']}" if graph.get("fallback_reason") else "")
    lacking = [row for row in graph["summary"] if not row["ok"]]
    total = sum(row["count"] for row in graph["summary"])
    on_path = sum(row["count"] for row in graph["summary"] if row["on_grad_path"])
    if not lacking:
        return (f"[bold]{label} graph[/] ({escape(tracer)}): [green]every op on a gradient path has a candle "
                f"backward[/] ({total} ops, {on_path} on gradient paths)")
    table = Table(title=f"{label} graph ({escape(tracer)}): ops without candle backward", title_justify="left")
    for col in ("aten op", "class", "count", "why", "where"):
        table.add_column(col, overflow="fold")
    for row in lacking:
        table.add_row(escape(row["name"]), row["class"], str(row["count"]), escape(row["reason"]),
                      escape("\n".join(row["where"])))
    table.caption = f"{total} ops, {on_path} on gradient paths"
    return table


def render_report(report: Any, console: Any) -> None:
    pin = candle_pin()
    console.print(f"[bold]candle-port verify[/] {escape(report.model)}  strategy={report.strategy} "
                  f"dtype={report.dtype} seed={report.seed} mode={'train' if report.train else 'eval'} "
                  f"inputs={escape(str(report.input_shapes))}")
    changed = report.rewrite["changed"]
    console.print(f"rewrite: {len(changed)} of {report.rewrite['scanned']} file(s) changed under "
                  f"{escape(report.source_root)}" + (f": {escape(', '.join(changed[:8]))}" if changed else ""))
    if report.rewrite.get("sites_fixed"):
        console.print(f"port-fix: {report.rewrite['sites_fixed']} site(s) rewritten")
    for note in report.rewrite.get("refused", []):
        console.print(f"[yellow]port-fix refused[/] {escape(note)}")
    for err in report.rewrite.get("errors", []):
        console.print(f"[yellow]rewrite warning:[/] {escape(err)}")
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
    # Ops candle trains but not exactly (max_pool2d's scaled gradient): what the rewrite removed,
    # and, as a caveat, what it left.
    for prefix, graph in (
        ("[dim]original graph, candle caveat[/]", report.graph_original),
        ("[yellow]candle caveat[/]", report.graph_rewritten),
    ):
        warnings: dict[str, str] = {}
        for row in (graph or {}).get("summary", []):
            if row["warning"] and row["on_grad_path"]:
                warnings.setdefault(row["name"], row["warning"])
        for name, text in warnings.items():
            console.print(f"{prefix} {escape(name)}: {escape(text)}")
    if report.gradcheck is not None:
        gc = report.gradcheck
        console.print(f"gradcheck (float64, inputs {gc['shapes']}, {gc['seconds']}s): "
                      + ("[green]ok[/]" if gc["ok"] else f"[bold red]FAILED[/] {escape(gc['message'])}"))
    console.print(f"[dim]op table: candle {pin['version']} @ {pin['commit'][:12]}; {report.seconds}s[/]")
    if report.passed:
        console.print("[bold green]PASS[/]: the rewritten model matches and candle can train every op on its gradient paths")
    else:
        console.print("[bold red]FAIL[/]: " + escape("; ".join(report.failures)))
