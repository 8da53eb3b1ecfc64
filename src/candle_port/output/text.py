"""The default, human-readable report: `path:line:col: CODE message`, grouped by file."""

from __future__ import annotations

from collections import Counter

from candle_port.cli.console import escape
from candle_port.pipeline.findings import FileError, Finding, Severity


def print_findings(console, findings: list[Finding], show_fixes: bool = True) -> None:
    """Findings on stdout, one per line, files in order, a blank line between files."""
    if console.color_system is None and not console.record:
        _print_plain(console.file, findings, show_fixes)
        return
    last_path = None
    for f in findings:
        if last_path is not None and f.path != last_path:
            console.print()
        last_path = f.path
        style = "bold red" if f.severity is Severity.ERROR else "bold yellow"
        fixes = f" [dim]\\[fix: {escape(', '.join(f.fixes))}][/dim]" if (show_fixes and f.fixes) else ""
        if show_fixes and f.hint and not f.fixes:
            fixes = f" [dim]\\[hint: {escape(f.hint)}][/dim]"
        console.print(
            f"[bold]{escape(f.path)}[/bold]:{f.line}:{f.column}: [{style}]{f.code}[/{style}] {escape(f.message)}{fixes}",
            soft_wrap=True,
            highlight=False,
        )


def _print_plain(out, findings: list[Finding], show_fixes: bool) -> None:
    """The same lines without styles, written as they are: rich's markup pass over each line took
    more of port-check's own time than building the report on a large tree."""
    lines: list[str] = []
    last_path = None
    for f in findings:
        if last_path is not None and f.path != last_path:
            lines.append("")
        last_path = f.path
        fixes = f" [fix: {', '.join(f.fixes)}]" if (show_fixes and f.fixes) else ""
        if show_fixes and f.hint and not f.fixes:
            fixes = f" [hint: {f.hint}]"
        lines.append(f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}{fixes}")
    if lines:
        out.write("\n".join(lines) + "\n")
        out.flush()


def print_file_errors(console, errors: list[FileError]) -> None:
    """One line per file that could not be checked, naming the file and the reason (stderr)."""
    for e in errors:
        console.print(f"[bold red]error[/bold red]: {escape(e.describe())}", soft_wrap=True, highlight=False)


def print_statistics(console, findings: list[Finding]) -> None:
    """One line per code, most frequent first; a code whose sites differ in severity (CP109) says
    how many are of each."""
    counts = Counter(f.code for f in findings)
    severities: dict[str, Counter] = {}
    for f in findings:
        severities.setdefault(f.code, Counter())[f.severity.value] += 1
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        levels = severities[code]
        shown = next(iter(levels)) if len(levels) == 1 else ", ".join(f"{level} {n}" for level, n in sorted(levels.items()))
        console.print(f"{count:5d}  {code}  {shown}", highlight=False, markup=False)


def summary(findings: list[Finding], errors: list[FileError], files: int) -> str:
    n_err = sum(f.severity is Severity.ERROR for f in findings)
    n_warn = len(findings) - n_err
    parts = [f"Checked {files} file{'s' * (files != 1)}"]
    if findings:
        parts.append(f"found {len(findings)} finding{'s' * (len(findings) != 1)} ({n_err} error{'s' * (n_err != 1)}, {n_warn} warning{'s' * (n_warn != 1)})")
    else:
        parts.append("no findings")
    if errors:
        parts.append(f"{len(errors)} file{'s' * (len(errors) != 1)} could not be checked")
    return ": ".join(parts[:1]) + ": " + "; ".join(parts[1:]) + "."
