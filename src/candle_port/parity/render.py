"""The text report of `candle-port compare`: plain lines that fit 80 columns and read the same
piped, the verdict and the first divergence first, details after."""

from __future__ import annotations

import textwrap

from candle_port.parity.compare import Comparison

WIDTH = 80


def _wrap(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False) or [indent]


def _short_path(source: str) -> str:
    """file:line relative to the current directory, or from the package on (site-packages/...)."""
    import os

    path, _, line = source.rpartition(":")
    marker = "site-packages" + os.sep
    if marker in path:
        path = path.split(marker, 1)[1]
    else:
        try:
            path = os.path.relpath(path)
        except ValueError:
            pass
    return f"{path}:{line}"


def _figure(x: float) -> str:
    return f"{x:.1e}"


def _row(r) -> str:
    label = {"match": "ok", "DIFFERS": "DIFFERS", "missing": "not recorded", "shape": "SHAPE",
             "no-gradient": "NO GRADIENT", "boundary": "boundary (torch's module ends after an activation)"}[r.status]
    if r.status in ("match", "DIFFERS", "boundary"):
        read = f" [candle's dims read in the order {r.layout}]" if r.layout else ""
        return f"{r.name}: {_figure(r.rel)} of scale (allowed {_figure(r.allowed)}) {label}{read}"
    if r.status == "shape":
        return f"{r.name}: shape {r.candle_shape} in candle, {r.shape} in torch"
    return f"{r.name}: {label}"


def render(c: Comparison, verbose: bool = False) -> str:
    lines = ["candle-port compare", f"  {c.directory}", f"  {c.model} ({c.dtype}, {c.mode} mode)", ""]
    if c.verdict == "match":
        lines.append("MATCH: the port agrees with torch in forward and backward.")
    else:
        lines.append("DIVERGES")
    if c.first_divergence:
        d = c.first_divergence
        lines += _wrap(f"first divergence: {d['module']} ({d['class']}): {_figure(d['rel'])} of scale, "
                       f"allowed {_figure(d['allowed'])}", "  ")
        if d.get("source"):
            lines += _wrap(f"defined at {_short_path(d['source'])}", "    ")
        if d.get("inside_agreeing"):
            lines += _wrap(f"inside {d['inside_agreeing']}, which agrees: a boundary drawn elsewhere, or a "
                           "difference the enclosing module damps (see Forward)", "    ")
    if c.backward_divergence:  # with a first divergence only when that one is inside an agreeing module
        d = c.backward_divergence
        where = d["module"] or "(the model itself)"
        then = f" or in what runs after it: {', '.join(d['then'])}" if d.get("then") else ""
        lead = "the enclosing modules agree" if c.first_divergence else "forward agrees"
        lines += _wrap(f"{lead}; the backward goes wrong in {where} ({d['class'] or 'parameter'}: "
                       f"{d['parameter']} {d['status']}){then}; the gradients of every module after that agree", "  ")
        if d.get("source"):
            lines += _wrap(f"defined at {_short_path(d['source'])}", "    ")
    for label, err in (("the port did not build", c.build_error), ("forward failed", c.forward_error),
                       ("backward failed", c.backward_error)):
        if err:  # candle's errors carry a backtrace after the message
            lines += _wrap(f"{label}: {err.strip().splitlines()[0].strip()}", "  ")
    lines.append("")

    lines.append("Weights")
    loaded = f"  never loaded by the port: {len(c.never_loaded)}; unknown to torch: {len(c.unknown_to_torch)}; " \
             f"shape mismatches: {len(c.shape_mismatches)}"
    lines += _wrap(loaded.strip(), "  ")
    for m in c.shape_mismatches:
        lines += _wrap(f"{m['name']}: port {m['port_shape']}, torch {m['torch_shape']} ({m['looks']})", "    ")
    for u in c.unknown_to_torch[: None if verbose else 8]:
        renamed = f" (renamed {u['torch_name']})" if u["torch_name"] != u["name"] else ""
        lines += _wrap(f"{u['name']}: not in torch's state_dict{renamed}", "    ")
    for n in c.never_loaded[: None if verbose else 8]:
        lines += _wrap(f"{n}: never loaded", "    ")
    hidden = max(0, len(c.unknown_to_torch) - 8) + max(0, len(c.never_loaded) - 8)
    if hidden and not verbose:
        lines.append(f"    ... {hidden} more (--verbose)")
    if c.tried_absent:
        lines += _wrap(f"{len(c.tried_absent)} optional names the port tried, torch lacks, and the port "
                       f"built without (e.g. {c.tried_absent[0]})", "  ")
    for m in c.dtype_mismatches:
        lines += _wrap(f"dtype: torch ran {m['torch']}, the port {m['port']}", "    ")
    if c.suggested_renames:
        lines += _wrap("most names miss; rerun `candle-port reference` with these rules, then the port's check:", "  ")
        lines += [f"    --rename '{r}'" for r in c.suggested_renames]
    lines.append("")

    lines.append("Forward")
    for r in c.outputs:
        lines += _wrap(_row(r), "  ")
    if c.modules:
        bad = [r for r in c.modules if r.status not in ("match", "boundary")]
        lines.append(f"  modules recorded by the port: {len(c.modules)}, diverging: {len(bad)}")
        for r in (c.modules if verbose else bad[:10]):
            lines += _wrap(_row(r), "    ")
        if c.boundaries:
            after = [b for b in c.boundaries if b.get("activation_after")]
            lines += _wrap(f"{len(c.boundaries)} of them differ inside a module that agrees ("
                           + ", ".join(f"{b['module']} in {b['inside']}" for b in c.boundaries[:4])
                           + (", ..." if len(c.boundaries) > 4 else "")
                           + "): the port may draw their boundaries elsewhere (an activation applied after "
                           "the module, not in it), or the enclosing module damps the difference", "  ")
            if after:
                lines += _wrap(f"{len(after)} of these are torch's output before its activation (torch's = "
                               f"{after[0]['activation_after']}(candle's), e.g. {after[0]['module']}): boundaries, "
                               "not divergences", "    ")
    else:
        lines += _wrap("no module outputs recorded by the port (call candle_port_parity::record(name, &xs) "
                       "to locate a forward divergence by torch module name)", "  ")
    lines.append("")

    lines.append("Backward")
    if c.gradients:
        bad = [g for g in c.gradients if g.status != "match"]
        lines.append(f"  parameter gradients: {len(c.gradients)}, diverging or missing: {len(bad)}")
        shown = c.gradients if verbose else bad[:12]
        for g in shown:
            lines += _wrap(_row(g), "    ")
        if not verbose and len(bad) > 12:
            lines.append(f"    ... {len(bad) - 12} more (--verbose)")
    if c.gradient_hint:
        lines += _wrap(c.gradient_hint, "  ")
    if c.losses:
        lines.append("")
        lines.append(f"Loss curve ({c.losses['optimizer']}, lr {c.losses['lr']}, relative tolerance {c.losses['rtol']:.0e})")
        lines.append(f"  {'step':>4}  {'torch':>16}  {'candle':>16}  {'rel diff':>9}")
        for s in c.losses["steps"]:
            candle = "-" if s["candle"] is None else f"{s['candle']:.9g}"
            lines.append(f"  {s['step']:>4}  {s['torch']:>16.9g}  {candle:>16}  {s['rel']:>9.1e}{'' if s['ok'] else '  DIFFERS'}")
    return "\n".join(line.rstrip() for line in lines)
