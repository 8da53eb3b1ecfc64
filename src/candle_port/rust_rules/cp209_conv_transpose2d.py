"""CP209: conv_transpose2d with output_padding >= stride, whose backward fails."""

from __future__ import annotations

from candle_port.rust.sites import literal, struct_fields
from candle_port.rust_rules.base import RustHit, RustRule, measured

_PROBE = ("conv_transpose2d", "conv_transpose2d, output_padding 1 >= stride 1 (dilation 2)")
# ConvTranspose2dConfig::default()
_DEFAULTS = {"padding": 0, "output_padding": 0, "stride": 1, "dilation": 1}


class ConvTranspose2d(RustRule):
    """candle's ConvTranspose2D backward computes the input gradient with a conv2d whose shape
    does not match when output_padding >= stride (measured: "shape mismatch in add"). Judged from
    literal arguments: the method's (kernel, padding, output_padding, stride, dilation), or a
    ConvTranspose2dConfig struct literal given to candle-nn's layer."""

    code = "CP209"
    name = "conv-transpose2d-output-padding"
    summary = "conv_transpose2d (or a candle_nn::ConvTranspose2d) with output_padding >= stride: backward() fails"
    why = "candle's conv_transpose2d backward fails with a shape mismatch when output_padding >= stride"
    source = "candle-core 0.11.0 src/backprop.rs (Op::ConvTranspose2D); measured: docs/candle-measured.md, op conv_transpose2d"
    fix_hint = "candle_port_ops::conv_transpose2d(&xs, &w, bias, &Conv::new()...), or an output_padding below the stride"
    VALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor) -> candle::Result<Tensor> {\n    xs.conv_transpose2d(w, 1, 1, 2, 1)\n}\n",
        "use candle_nn::{conv_transpose2d, ConvTranspose2dConfig};\nfn f(vb: VarBuilder) -> Result<ConvTranspose2d> {\n"
        "    let cfg = ConvTranspose2dConfig { padding: 1, output_padding: 1, stride: 2, dilation: 1 };\n"
        "    conv_transpose2d(64, 32, 3, cfg, vb)\n}\n",
    )
    INVALID = (
        "use candle::Tensor;\nfn f(xs: &Tensor, w: &Tensor) -> candle::Result<Tensor> {\n    xs.conv_transpose2d(w, 0, 1, 1, 2)\n}\n",
        "use candle_nn::{conv_transpose2d, ConvTranspose2dConfig};\nfn f(vb: VarBuilder) -> Result<ConvTranspose2d> {\n"
        "    conv_transpose2d(64, 32, 3, ConvTranspose2dConfig { output_padding: 1, ..Default::default() }, vb)\n}\n",
    )

    def check(self, site, version: str):
        if site.api == "conv_transpose2d":
            values = {"output_padding": literal(site.arg(2)), "stride": literal(site.arg(3))}
        elif site.api == "nn_conv_transpose2d":
            config = site.arg(2 if site.shown.endswith("::new") else 3)
            fields = struct_fields(config)
            if fields is None:
                return
            found, base = fields
            defaults = base in ("Default::default()", "ConvTranspose2dConfig::default()", "candle_nn::ConvTranspose2dConfig::default()")
            values = {}
            for key in ("output_padding", "stride"):
                if key in found:
                    values[key] = literal(found[key])
                else:
                    values[key] = _DEFAULTS[key] if defaults else None  # another base: unknown
        else:
            return
        padding, stride = values["output_padding"], values["stride"]
        if not isinstance(padding, int) or not isinstance(stride, int) or padding < stride:
            return
        fires, judgement = measured(version, *_PROBE)
        if fires:
            yield RustHit(f"{site.shown}(output_padding {padding}, stride {stride}): backward() fails (shape mismatch: output_padding >= stride)", judgement=judgement)
