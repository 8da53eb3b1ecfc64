"""Rich rendering of a VerifyReport (stdout). User text is escaped: ``x[0]`` is markup to rich."""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape
from rich.padding import Padding
from rich import box
from rich.table import Table
from rich.text import Text

from .optable import candle_pin


def short_path(path: str) -> str:
    """A location as a user reads it: relative to the working directory when under it, else from
    the import root it lives in (``transformers/models/dpt/modeling_dpt.py:220``, not the absolute
    site-packages path); ``file:line`` suffixes are kept."""
    import os
    import sys

    head, sep, line = path.rpartition(":")
    file, suffix = (head, sep + line) if sep and line.isdigit() else (path, "")
    if not os.path.isabs(file):
        return path
    cwd = os.getcwd() + os.sep
    if file.startswith(cwd):
        return file[len(cwd):] + suffix
    roots = sorted((p for p in sys.path if p and os.path.isabs(p)), key=len, reverse=True)
    for root in roots:
        root = root.rstrip(os.sep) + os.sep
        if file.startswith(root):
            return file[len(root):] + suffix
    return path


def short_locations(wheres: list[str]) -> str:
    """``a.py:33, :35`` for several lines of one file, ``a.py:3, b.py:9`` otherwise."""
    out: list[str] = []
    last = None
    for where in wheres:
        shown = short_path(where)
        file, sep, line = shown.rpartition(":")
        if sep and line.isdigit() and file == last:
            out.append(f":{line}")
        else:
            out.append(shown)
            last = file if sep and line.isdigit() else None
    return ", ".join(out)


_MEASURED = re.compile(r"(measured): docs/candle-measured\.md")


def user_text(text: str) -> str:
    """Table notes as users can follow them: no section numbers of the project's internal op-table
    notes, no repository paths they do not have (the docs site's page is "What candle does, measured")."""
    text = _MEASURED.sub(r"\1", text)
    text = text.replace("../shared/candle-ops.md", "candle's source")
    text = re.sub(r" ?\(\d\.\d+\)", "", text)
    return re.sub(r"\((\d\.\d+); ", "(", text)


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


WIDE = 120  # from this console width on, the comparison also shows the kind and max abs diff
MIN_NAME_WIDTH = 12
# What a graph's op class means, for a reader: "no-op" is the op table's word for "candle has no
# such op" (not "does nothing").
CLASS_LABELS = {"no-op": "no candle op", "not-in-table": "not in candle's op table"}


def class_label(cls: str) -> str:
    return ", ".join(CLASS_LABELS.get(c, c) for c in cls.split(", "))


def wrap_dotted(name: str, width: int) -> str:
    """``name`` cut after its dots into lines of at most ``width`` (a parameter path is never cut
    inside a part; a single part longer than ``width`` stays whole and rich folds it)."""
    lines = [""]
    for part in re.split(r"(?<=\.)", name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append(part)
        else:
            lines[-1] += part
    return "\n".join(lines)


def _comparison_table(report: Any, max_rows: int, width: int = 80) -> tuple[Table, list[str]]:
    """The table, and the notes printed under it: a note column would squeeze the others (and
    itself, one word a line), so each note is a numbered line and its row's status says ``see N``."""
    wide = width >= WIDE
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    rows = report.rows
    hidden = 0
    if len(rows) > max_rows:
        keep = [r for r in rows if r.ok is False or r.kind in ("output", "input grad", "new param")]
        rest = sorted((r for r in rows if r not in keep), key=lambda r: -(r.ratio or r.rel_to_scale or 0.0))
        room = max(0, max_rows - len(keep))
        shown = set(map(id, keep + rest[:room]))
        hidden = len(rows) - len(shown)
        rows = [r for r in rows if id(r) in shown]
    # The verdict compares `rewrite dist` with `allowed`. The element-wise difference relative to the
    # tensor's largest entry (JSON's max_rel) is not shown: near a zero gradient it is large while
    # the row is ok, which reads as a contradiction.
    columns = (["kind"] if wide else []) + ["tensor", "shape"] + (["max abs diff"] if wide else []) + [
        "rewrite dist", "own noise", "allowed", "status"]
    changed = report.changes_by_design
    notes: list[str] = []
    cells = []
    for r in rows:
        dist = r.rewrite_dist if r.rewrite_dist is not None else r.rel_to_scale
        status = _status(r.ok, changed)
        if r.note:
            notes.append(f"{len(notes) + 1}. {r.name}: {r.note}")
            status += f" (see {len(notes)})"
        cells.append(([r.kind] if wide else []) + [r.name, "x".join(map(str, r.shape)) or "-"] + (
            [_num(r.max_abs)] if wide else []) + [_num(dist), _num(r.own_noise), _num(r.allowed),
                                                                    status])
    name_at = columns.index("tensor")
    headers = [col if wide or col in ("tensor", "shape", "status") else col.replace(" ", "\n", 1) for col in columns]
    widths: list[int | None] = [None] * len(columns)
    if not wide:
        # Narrow: two-line headers, so a column is as wide as its numbers, and the rest for the names
        # (each column's width; between columns the box's blank rule and a space either side; an edge
        # at each end).
        widths = [max([len(Text.from_markup(str(row[i])).plain) for row in cells] + [len(p) for p in headers[i].split("\n")])
                  for i in range(len(columns))]
        others = sum(w for i, w in enumerate(widths) if i != name_at)
        name_width = max(MIN_NAME_WIDTH, width - others - 3 * (len(columns) - 1) - 2)
        for row in cells:
            row[name_at] = wrap_dotted(row[name_at], name_width)
        widths[name_at] = min(name_width, max(max(map(len, row[name_at].split("\n"))) for row in cells))
    for col, header, fixed in zip(columns, headers, widths):
        numeric = "diff" in col or col in ("rewrite dist", "own noise", "allowed")
        table.add_column(header, justify="right" if numeric else "left", overflow="fold", width=fixed,
                         no_wrap=True, min_width=MIN_NAME_WIDTH if col == "tensor" and fixed is None else None)
    for row in cells:
        row[name_at] = escape(row[name_at])
        table.add_row(*row)
    if hidden:
        table.caption = f"{hidden} more parameter gradients within tolerance (all rows: --output-format json)"
    return table, notes


def _graph_lines(label: str, graph: dict[str, Any], console: Any) -> None:
    """One line per graph with the coverage ("N of M traced ops have a candle backward"), then
    each op without a correct candle backward: count, class, why and where (short paths)."""
    from .report import coverage

    tracer = graph["tracer"] + (f", {graph['fallback_reason']}" if graph.get("fallback_reason") else "")
    cov = coverage(graph)
    lacking = [row for row in graph["summary"] if not row["ok"] or row.get("wrong")]
    on_path = sum(row["count"] for row in graph["summary"] if row["on_grad_path"])
    head = (f"[bold]{label} graph[/] ({escape(tracer)}): {cov['with_backward']} of {cov['total']} traced ops have a "
            f"candle backward ({cov['percent']:.1f}%)")
    if not lacking:
        console.print(f"{head}; [green]every op on a gradient path ({on_path}) has a correct candle backward[/]")
    else:
        console.print(f"{head}; on gradient paths ({on_path} ops), [bold]without a correct candle backward[/]:")
    for row in lacking:
        cls, why = (class_label(row["class"]), row["reason"]) if not row["ok"] else ("wrong gradient", row["wrong"])
        where = f" at {escape(short_locations(row['where']))}" if row["where"] else ""
        console.print(Padding(f"[bold]{escape(row['name'])}[/] x{row['count']} ({cls}){where}", (0, 0, 0, 2)))
        if why:
            console.print(Padding(escape(user_text(why)), (0, 0, 0, 6)))
    missing = [op for op in cov["by_op"] if not any(op["op"] == row["name"] for row in lacking)]
    absent = [op for op in missing if {"no-op", "not-in-table"} & set(op["class"].split(", "))]
    forward = [op for op in missing if op not in absent]
    if forward:
        console.print("  [dim]no candle backward, not on a gradient path (candle runs only their forward):[/] "
                      + escape(_op_counts(forward)))
    if absent:
        # Off the gradient path candle still has to run them forward, and it has no such op.
        console.print("  [dim]no candle op (or not in the table), not on a gradient path (the port computes "
                      "them another way):[/] " + escape(_op_counts(absent)))


def _op_counts(ops: list) -> str:
    return ", ".join(f"{op['op']} x{op['count']}" + (f" ({short_path(op['first'])})" if op["first"] else "") for op in ops)


def _rewrite_lines(report: Any, console: Any, show_refusals: bool) -> None:
    changed = report.rewrite["changed"]
    names = ", ".join(changed[:CHANGED_FILES_SHOWN])
    more = f" (+{len(changed) - CHANGED_FILES_SHOWN} more)" if len(changed) > CHANGED_FILES_SHOWN else ""
    timing = ""
    if "seconds" in report.rewrite:
        timing = f" ({report.rewrite['seconds']:.1f}s, {report.rewrite.get('from_cache', 0)} from the rewrite cache)"
    skipped = report.rewrite.get("not_imported")
    imported = (f" (the files the model imports; {skipped} other(s) left as they are, --rewrite-all rewrites them)"
                if skipped else "")
    console.print(f"rewrite: {len(changed)} of {report.rewrite['scanned']} file(s) changed under "
                  f"{escape(short_path(report.source_root))}" + (f": {escape(names)}{more}" if changed else "") + timing
                  + imported)
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
    """Ops candle trains but not exactly, with where they are, each said once: what the rewrite
    removed (dim, "original graph"), what it left (yellow; also in the original graph, not repeated).
    Wrong gradients that decide the verdict are in the graph lines."""
    def warnings(graph: dict | None) -> dict[str, tuple[str, str]]:
        found: dict[str, tuple[str, str]] = {}
        for row in (graph or {}).get("summary", []):
            if row["warning"] and row["on_grad_path"]:
                found.setdefault(row["name"], (row["warning"], row["where"][0] if row["where"] else ""))
        return found

    def listed(graph: dict | None) -> set[str]:  # already in the graph lines, as a wrong gradient
        return {row["name"] for row in (graph or {}).get("summary", []) if not row["ok"] or row.get("wrong")}

    left = {k: v for k, v in warnings(report.graph_rewritten).items() if k not in listed(report.graph_rewritten)}
    removed = {k: v for k, v in warnings(report.graph_original).items()
               if k not in left and k not in warnings(report.graph_rewritten) and k not in listed(report.graph_original)}
    for prefix, found in (("[dim]original graph, candle caveat[/]", removed), ("[yellow]candle caveat[/]", left)):
        for name, (text, where) in found.items():
            at = f" at {escape(short_path(where))}" if where else ""
            console.print(f"{prefix} {escape(name)}{at}:")
            console.print(Padding(escape(user_text(text)), (0, 0, 0, 6)))


def render_report(report: Any, console: Any, show_refusals: bool = False) -> None:
    pin = candle_pin()
    shapes = ", ".join("x".join(map(str, s)) for s in report.input_shapes)
    console.print(f"[bold]candle-port verify[/] {escape(report.model)}")
    console.print(f"  strategy={report.strategy} dtype={report.dtype} seed={report.seed} "
                  f"mode={'train' if report.train else 'eval'} inputs={escape(shapes)}")
    _rewrite_lines(report, console, show_refusals)
    if report.new_parameters:
        console.print(f"[yellow]new parameters added by the rewrite (initialised, not loaded):[/] "
                      f"{escape(', '.join(report.new_parameters))}")
    if report.dropped_state:
        console.print(f"[yellow]state_dict entries the rewritten model does not have:[/] "
                      f"{escape(', '.join(report.dropped_state))}")
    # The heading is a line of its own: as a table title it would wrap at the table's width.
    console.print(f"Original vs rewritten (outputs, input and parameter gradients; {escape(report.dtype)}; "
                  f"{escape(_tolerance_text(report.tolerance))})")
    table, notes = _comparison_table(report, 40, console.width)
    console.print(table)
    for note in notes:
        console.print(Padding(escape(note), (0, 0, 0, 2)))
    for label, graph in (("Original", report.graph_original), ("Rewritten", report.graph_rewritten)):
        if graph is not None:
            _graph_lines(label, graph, console)
    if report.graph_rewritten is None:
        console.print(f"[yellow]rewritten graph not checked:[/] {escape(report.trace_error or 'not traced')}")
    _caveats(report, console)
    if report.gradcheck is not None:
        gc = report.gradcheck
        console.print(f"gradcheck (float64, eval, inputs {gc['shapes']}, input gradient only: parameters are "
                      f"not gradchecked, {gc['seconds']}s): "
                      + ("[green]ok[/]" if gc["ok"] else f"[bold red]FAILED[/] {escape(gc['message'])}"))
    console.print(f"[dim]op table: candle {pin['version']} @ {pin['commit'][:12]}; {report.seconds}s[/]")
    if report.kink:
        console.print("[yellow]kink[/]: " + escape(report.kink_note()))
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
