"""The verdict and its two renderings: rich tables for people, JSON for CI.

Verdicts, worst first (the exit code of the worst one that applies):

- ``fail`` (1): a tensor differs beyond tolerance, an op on a gradient path of the rewritten graph
  has no candle backward, or its candle backward gives a wrong gradient (unless
  ``--allow-wrong-gradients``), or gradcheck failed, or (``--candle``) the model run in real
  candle in port mode fails, on the original or the rewritten copy.
- ``unchecked`` (4): nothing failed, but a part could not be checked: the rewritten model was not
  traced (trace failed, or ``--no-trace``), no gradient flowed to any input or parameter, or
  ``--candle`` could not run candle at all (no cargo, a model make_fx cannot trace).

The JSON's ``verdict`` and ``exit_code`` and the process's exit code all come from ``verdict``
(``--candle``'s result is part of the report, not a second verdict beside it).
- ``changed`` (3): a strategy that changes the numbers by design (``nearest``, ``convtranspose``)
  rewrote something; the differences are reported, never called a match.
- ``pass`` (0): the numbers are equal within tolerance and every op on a gradient path has a
  correct candle backward.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from candle_port.rewriters.strategies import EXACT_STRATEGIES  # those that keep the numbers by construction

from .compare import Tolerance
from .optable import candle_pin

SCHEMA_VERSION = 2
EXIT_PASS, EXIT_FAIL, EXIT_ERROR, EXIT_CHANGED, EXIT_UNCHECKED = 0, 1, 2, 3, 4
VERDICT_EXIT = {"pass": EXIT_PASS, "fail": EXIT_FAIL, "changed": EXIT_CHANGED, "unchecked": EXIT_UNCHECKED}


# ATen op names (prefixes) of the layers and calls runtime.convert routes to the runtime.
CONVERT_REPLACES = ("upsample_", "_upsample_", "max_pool", "avg_pool", "adaptive_", "grid_sampler", "affine_grid",
                    "conv_transpose", "convolution", "_convolution", "conv3d")


@dataclass
class VerifyReport:
    model: str
    strategy: str
    dtype: str
    seed: int
    train: bool
    input_shapes: list[list[int]]
    source_root: str
    rewrite: dict[str, Any]
    tolerance: Tolerance
    new_parameters: list[str]
    dropped_state: list[str]
    rows: list[Any]
    graph_original: dict[str, Any] | None
    graph_rewritten: dict[str, Any] | None
    gradcheck: dict[str, Any] | None = None
    module_files: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    timings: dict[str, Any] = field(default_factory=dict)
    trace_error: str = ""  # why the rewritten graph is missing ("--no-trace" when asked)
    allow_wrong_gradients: bool = False
    # The first seed's runs crossed an activation's kink (verify/kinks.py, runner._past_kinks):
    # {seed, flips, crossed_seeds, checked_seed (the seed that passed or differed without a
    # crossing; None when every seed tried crossed one), outcome}.
    kink: dict[str, Any] | None = None
    # --candle's result (candle_check.candle_check): None when --candle was not given.
    candle: dict[str, Any] | None = None

    @property
    def seed_compared(self) -> int:
        """The seed whose runs the rows show: the last one tried when a kink crossing was retried."""
        if not self.kink:
            return self.seed
        checked = self.kink.get("checked_seed")
        return self.kink["crossed_seeds"][-1] if checked is None else checked

    def kink_note(self) -> str:
        """One line on a kink crossing and what verify did about it; "" without one."""
        if not self.kink:
            return ""
        from .kinks import describe

        crossed = self.kink["crossed_seeds"]
        where = (f"seed {crossed[0]}: {describe(self.kink['flips'])}, so every gradient upstream differs by a whole "
                 f"term")
        later = crossed[1:]
        also = f"; seed{'s' if len(later) > 1 else ''} {', '.join(map(str, later))} crossed one too" if later else ""
        outcome = self.kink["outcome"]
        if outcome == "passed":
            return f"{where}{also}; rounding, not the rewrite: compared on seed {self.kink['checked_seed']} instead"
        if outcome == "differs without a kink":
            return f"{where}{also}; seed {self.kink['checked_seed']} differs without crossing one: its comparison is shown"
        return f"{where}{also}; every seed tried crossed one: seed {self.seed_compared}'s comparison is shown"

    @property
    def changes_by_design(self) -> bool:
        """A numerics-changing strategy that rewrote something, judged without a user tolerance."""
        return (self.strategy not in EXACT_STRATEGIES and bool(self.rewrite.get("changed"))
                and not self.tolerance.given)

    @property
    def differing(self) -> list[Any]:
        return [r for r in self.rows if r.ok is False]

    @property
    def wrong_gradients(self) -> list[dict[str, Any]]:
        return list((self.graph_rewritten or {}).get("wrong", []))

    @property
    def failures(self) -> list[str]:
        reasons = []
        if self.differing and not self.changes_by_design:
            tol = self.tolerance
            how = (f"rtol={tol.rtol:g} atol={tol.atol:g}" if tol.mode == "fixed"
                   else f"{tol.factor:g} x the original's own rounding")
            reasons.append(f"{len(self.differing)} tensor(s) differ beyond {how}")
        graph = self.graph_rewritten
        if graph is not None and graph["lacking"]:
            names = sorted({r["name"] for r in graph["lacking"]})
            reasons.append(f"the rewritten graph still has ops without candle backward: {', '.join(names)}")
        if self.wrong_gradients and not self.allow_wrong_gradients:
            names = sorted({r["name"] for r in self.wrong_gradients})
            reasons.append(f"candle would train ops of the rewritten graph with a wrong gradient: {', '.join(names)} "
                           "(--allow-wrong-gradients accepts them)")
        if self.gradcheck is not None and not self.gradcheck["ok"]:
            reasons.append("gradcheck failed")
        reasons += candle_failures(self.candle)
        left = self._convert_may_reach()
        direct = [r.get("where", "") for r in left if calls_in_source(r)]
        if direct:
            reasons.append(f"ops the runtime replaces were left in the rewritten graph by calls in the source that "
                           f"port-fix did not rewrite ({', '.join(sorted(set(direct))[:3])}; port-fix --diff says "
                           "why): --strategy convert routes them to the runtime")
        elif left:
            reasons.append("ops the runtime replaces were left in the rewritten graph (built through a layer "
                           "factory or registry, which no source rewrite sees?): --strategy convert fixes the built model")
        return reasons

    def _convert_may_reach(self) -> list[dict[str, Any]]:
        """The rows left in the rewritten graph of ops runtime.convert replaces ([] when convert was used)."""
        if self.strategy == "convert" or self.graph_rewritten is None:
            return []
        left = list(self.graph_rewritten["lacking"])
        if not self.allow_wrong_gradients:
            left += list(self.wrong_gradients)
        return [r for r in left if r["name"].startswith(CONVERT_REPLACES)]

    @property
    def unchecked(self) -> list[str]:
        reasons = []
        if self.graph_rewritten is None:
            reasons.append("the candle op check did not run: " + (self.trace_error or "the rewritten model was not traced"))
        grads = [r for r in self.rows if r.kind in ("input grad", "param grad")]
        if grads and all(r.note == "no gradient in either" for r in grads):
            reasons.append("no gradient flowed to any input or parameter: gradients were not compared")
        if self.candle is not None and "port" not in self.candle:
            reasons.append(f"--candle could not run candle: {self.candle.get('error') or '?'}")
        return reasons

    def changed_summary(self) -> str:
        d = self.max_diffs()
        return (f"numerics changed as expected ({self.strategy}): max rel {d['output_max_rel']:.3g} on outputs, "
                f"{d['input_grad_max_rel']:.3g} on input grad, {d['param_grad_max_rel']:.3g} on parameter grads")

    @property
    def verdict(self) -> str:
        if self.failures:
            return "fail"
        if self.unchecked:
            return "unchecked"
        if self.changes_by_design:
            return "changed"
        return "pass"

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def exit_code(self) -> int:
        return VERDICT_EXIT[self.verdict]

    def max_diffs(self) -> dict[str, float]:
        """Largest max_abs and rel_to_scale per kind, plus the old output/grad pair."""
        out: dict[str, float] = {}
        groups = (("output", ("output",)), ("grad", ("input grad", "param grad")),
                  ("input_grad", ("input grad",)), ("param_grad", ("param grad",)))
        for key, kinds in groups:
            rows = [r for r in self.rows if r.kind in kinds and r.max_abs is not None]
            out[f"{key}_max_abs"] = max((r.max_abs for r in rows), default=0.0)
            out[f"{key}_max_rel"] = max((r.rel_to_scale for r in rows), default=0.0)
        ratios = [r.ratio for r in self.rows if r.ratio is not None]
        out["worst_ratio"] = max(ratios, default=0.0)  # rewrite_dist / own noise: above the factor fails
        noise = [r.own_noise for r in self.rows if r.own_noise is not None]
        dist = [r.rewrite_dist for r in self.rows if r.rewrite_dist is not None]
        out["own_noise_max"] = max(noise, default=0.0)
        out["rewrite_dist_max"] = max(dist, default=0.0)
        return out

    def refusal_summary(self) -> list[tuple[str, int, list[str]]]:
        """port-fix's refusals grouped by reason: (reason, count, first locations)."""
        groups: dict[str, list[str]] = {}
        for note in self.rewrite.get("refused", []):
            where, reason = split_refusal(note)
            groups.setdefault(reason, []).append(where)
        return sorted(((r, len(w), w[:3]) for r, w in groups.items()), key=lambda g: -g[1])

    def to_json(self) -> dict[str, Any]:
        verdict = self.verdict
        return {
            "schema_version": SCHEMA_VERSION,
            "verdict": verdict,
            "exit_code": self.exit_code,
            "failures": self.failures,
            "unchecked": self.unchecked,
            "changed": self.changed_summary() if self.changes_by_design else "",
            "model": self.model,
            "strategy": self.strategy,
            "dtype": self.dtype,
            "seed": self.seed,
            "mode": "train" if self.train else "eval",
            "input_shapes": self.input_shapes,
            "source_root": self.source_root,
            "rewrite": self.rewrite,
            "refusals": [{"reason": r, "count": n, "first": w} for r, n, w in self.refusal_summary()],
            "tolerance": dict(self.tolerance.to_json(), definition=(
                "scale = max(max|original|, G), G = largest max|original| of the tensor's kind; reference mode: "
                "rewrite_dist <= factor * max(own_noise, floor), both / scale (see compare.py); fixed mode: "
                "max|rewritten-original| <= atol + rtol * scale")),
            "state_dict": {"new_parameters": self.new_parameters, "not_loaded": self.dropped_state},
            "max_diffs": self.max_diffs(),
            "comparisons": [row.to_json() for row in self.rows],
            "graphs": {"original": self.graph_original, "rewritten": self.graph_rewritten},
            "coverage": {"original": coverage(self.graph_original), "rewritten": coverage(self.graph_rewritten)},
            "trace_error": self.trace_error,
            "allow_wrong_gradients": self.allow_wrong_gradients,
            "kink": ({"note": self.kink_note(), **self.kink} if self.kink else None),
            "seed_compared": self.seed_compared,
            "gradcheck": self.gradcheck,
            "candle": candle_pin(),
            "module_files": self.module_files,
            "seconds": self.seconds,
            "timings": self.timings,
            # --candle's result takes the op table's pin's key, as it always did
            **({"candle": self.candle} if self.candle is not None else {}),
        }

    def render(self, console: Any, show_refusals: bool = False) -> None:
        from .render_text import render_report

        render_report(self, console, show_refusals)


def candle_failures(candle: dict[str, Any] | None) -> list[str]:
    """Why ``--candle``'s run fails the verdict: port mode failing in real candle on the original
    model or on the rewritten copy ([] when it passes, was not asked for, or could not run)."""
    if not candle or "port" not in candle or candle.get("ok", False):
        return []
    reasons = []
    if not candle.get("original_ok", candle["port"].get("ok", False)):
        reasons.append("the original model fails in real candle in port mode (--candle)")
    rewritten = candle.get("rewritten") or {}
    if rewritten and not rewritten.get("ok", False):
        why = "" if "port" in rewritten else f": {rewritten.get('error') or '?'}"
        reasons.append(f"the rewritten copy fails in real candle (--candle){why}")
    return reasons or ["the model fails in real candle (--candle)"]


# The names a source line calls an op by (functional or layer), per ATen op name prefix.
_CALL_NAMES = (("upsample", ("interpolate", "upsample", "Upsample")), ("_upsample", ("interpolate", "upsample", "Upsample")),
               ("max_pool", ("max_pool", "MaxPool")), ("avg_pool", ("avg_pool", "AvgPool")),
               ("adaptive_", ("adaptive_", "Adaptive")), ("grid_sampler", ("grid_sample",)),
               ("affine_grid", ("affine_grid",)), ("conv_transpose", ("conv_transpose", "ConvTranspose")),
               ("conv", ("conv1d", "Conv1d", "conv3d", "Conv3d")), ("_conv", ("conv1d", "Conv1d", "conv3d", "Conv3d")))


def calls_in_source(row: dict[str, Any]) -> bool:
    """Whether the source line a graph row points at calls the op itself (``F.interpolate(...,
    mode="nearest")`` left in the source), rather than a layer built elsewhere (a factory)."""
    where = row.get("where") or ""
    path, sep, line = where.rpartition(":")
    if not sep or not line.isdigit():
        return False
    try:
        text = Path(path).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    except (OSError, UnicodeDecodeError, IndexError):
        return False
    import re

    names = next((n for prefix, n in _CALL_NAMES if row["name"].startswith(prefix)), ())
    # `F.interpolate(`, `nn.Upsample(`, an imported `interpolate(`; not a layer attribute `self.up(`
    return any(re.search(rf"(?:\b(?:F|nn|functional|torch)\.|(?<![\w.]))\w*{name}\w*\s*\(", text) for name in names)


_LACKS = ("forward-only", "no-op", "not-in-table")


def coverage(graph: dict[str, Any] | None) -> dict[str, Any]:
    """What converter users know: "N of M traced ops have a candle backward (x%)", and the ops
    without one grouped by op, with the count and the first source location of each.

    An op lacks a candle backward when candle has none for it (forward-only, no op, not in the
    table), when its backward's condition fails on a gradient path, or when candle's backward
    gives a wrong gradient there. Counts are traced calls, not distinct ops."""
    if not graph:
        return {"total": 0, "with_backward": 0, "percent": 100.0, "by_op": []}
    total = 0
    by_op: dict[str, dict[str, Any]] = {}
    for row in graph["summary"]:
        total += row["count"]
        lacks = row["class"] in _LACKS or not row["ok"] or bool(row.get("wrong"))
        if not lacks:
            continue
        entry = by_op.setdefault(row["name"], {"op": row["name"], "count": 0, "class": set(),
                                               "on_grad_path": False, "first": ""})
        entry["count"] += row["count"]
        entry["class"].add("wrong gradient" if row["ok"] and row.get("wrong") else row["class"])
        entry["on_grad_path"] = entry["on_grad_path"] or row["on_grad_path"]
        if not entry["first"] and row["where"]:
            entry["first"] = row["where"][0]
    ops = sorted(by_op.values(), key=lambda e: (not e["on_grad_path"], -e["count"], e["op"]))
    for entry in ops:
        entry["class"] = ", ".join(sorted(entry["class"]))
    lacking = sum(e["count"] for e in ops)
    return {"total": total, "with_backward": total - lacking,
            "percent": round(100.0 * (total - lacking) / total, 1) if total else 100.0, "by_op": ops}


def split_refusal(note: str) -> tuple[str, str]:
    """``pkg/a.py:12: reason`` -> (``pkg/a.py:12``, ``reason``)."""
    head, sep, reason = note.partition(": ")
    return (head, reason) if sep else ("", note)
