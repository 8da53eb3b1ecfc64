"""The verdict and its two renderings: rich tables for people, JSON for CI."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .optable import candle_pin

TEXT_MAX_ROWS = 40  # above this, text shows failing rows and the largest differences only
SCHEMA_VERSION = 1


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
    rtol: float | None
    atol: float
    new_parameters: list[str]
    dropped_state: list[str]
    rows: list[Any]
    graph_original: dict[str, Any] | None
    graph_rewritten: dict[str, Any] | None
    gradcheck: dict[str, Any] | None = None
    module_files: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    timings: dict[str, Any] = field(default_factory=dict)

    @property
    def numbers_ok(self) -> bool:
        return all(row.ok is not False for row in self.rows)

    @property
    def graph_ok(self) -> bool:
        return bool(self.graph_rewritten) and not self.graph_rewritten["lacking"]

    @property
    def failures(self) -> list[str]:
        reasons = []
        bad = [r for r in self.rows if r.ok is False]
        if bad:
            reasons.append(f"{len(bad)} tensor(s) differ beyond rtol={self.rtol:g} atol={self.atol:g}")
        if self.graph_rewritten is None:
            reasons.append("the rewritten model was not traced")
        elif self.graph_rewritten["lacking"]:
            names = sorted({r["name"] for r in self.graph_rewritten["lacking"]})
            reasons.append(f"the rewritten graph still has ops without candle backward: {', '.join(names)}")
        if self.gradcheck is not None and not self.gradcheck["ok"]:
            reasons.append("gradcheck failed")
        return reasons

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def max_diffs(self) -> dict[str, float]:
        """Largest max_abs and rel_to_scale (what rtol is compared with) over outputs and gradients."""
        out: dict[str, float] = {}
        for key, kinds in (("output", ("output",)), ("grad", ("input grad", "param grad"))):
            rows = [r for r in self.rows if r.kind in kinds and r.max_abs is not None]
            out[f"{key}_max_abs"] = max((r.max_abs for r in rows), default=0.0)
            out[f"{key}_max_rel"] = max((r.rel_to_scale for r in rows), default=0.0)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "verdict": "pass" if self.passed else "fail",
            "exit_code": self.exit_code,
            "failures": self.failures,
            "model": self.model,
            "strategy": self.strategy,
            "dtype": self.dtype,
            "seed": self.seed,
            "mode": "train" if self.train else "eval",
            "input_shapes": self.input_shapes,
            "source_root": self.source_root,
            "rewrite": self.rewrite,
            "tolerance": {"rtol": self.rtol, "atol": self.atol,
                          "enforced": self.rtol is not None,
                          "definition": "max|rewritten-original| <= atol + rtol * max(max|original|, G), "
                                        "G = largest max|original| among tensors of the same kind"},
            "state_dict": {"new_parameters": self.new_parameters, "not_loaded": self.dropped_state},
            "max_diffs": self.max_diffs(),
            "comparisons": [row.to_json() for row in self.rows],
            "graphs": {"original": self.graph_original, "rewritten": self.graph_rewritten},
            "gradcheck": self.gradcheck,
            "candle": candle_pin(),
            "module_files": self.module_files,
            "seconds": self.seconds,
            "timings": self.timings,
        }

    def render(self, console: Any) -> None:
        from .render_text import render_report

        render_report(self, console)
