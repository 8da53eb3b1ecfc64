"""CP203: candle_nn::rotary_emb::rope / rope_i / rope_thd, fused kernels with no backward."""

from __future__ import annotations

from candle_port.pipeline.findings import Severity
from candle_port.rust_rules.base import RustHit, RustRule

_SLOW = {"rope": "rope_slow", "rope_i": "rope_i_slow"}


class FusedRope(RustRule):
    """The rotary embeddings are applied with `apply_op3_no_bwd`: queries and keys that go
    through them carry no gradient back to their projections."""

    code = "CP203"
    name = "fused-rope"
    summary = "candle_nn::rotary_emb::rope/rope_i/rope_thd: a fused kernel without backward; the gradient stops there without an error"
    why = "rope, rope_i and rope_thd apply their kernel with apply_op3_no_bwd: no gradient reaches the query/key projections before them"
    source = "candle-nn 0.11.0 src/rotary_emb.rs:262-287, 555-580 and 830-855"
    default_severity = Severity.WARNING
    fix_hint = "candle_nn::rotary_emb::rope_slow / rope_i_slow (same arguments) differentiate; for rope_thd, candle_port_ops::rope::rope_thd; port-fix does it"
    VALID = (
        "fn f(q: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {\n    candle_nn::rotary_emb::rope_slow(q, cos, sin)\n}\n",
        "mod rotary_emb {\n    pub fn rope(x: &Tensor) -> Tensor { x.clone() }\n}\nfn f(q: &Tensor) -> Tensor {\n    rotary_emb::rope(q)\n}\n",
    )
    INVALID = (
        "fn f(q: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {\n    candle_nn::rotary_emb::rope(q, cos, sin)\n}\n",
        "use candle_nn::rotary_emb::rope_i;\nfn f(q: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {\n    rope_i(&q.contiguous()?, cos, sin)\n}\n",
        "use candle_nn::rotary_emb;\nfn f(q: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor> {\n    rotary_emb::rope_thd(q, cos, sin)\n}\n",
    )

    def check(self, site, version: str):
        if site.api != "rope":
            return
        name = site.shown.rsplit("::", 1)[-1]
        slow = f" (candle_nn::rotary_emb::{_SLOW[name]} differentiates)" if name in _SLOW else ""
        yield RustHit(f"{site.shown}: fused rotary embedding without backward, the gradient stops here without an error{slow}")
