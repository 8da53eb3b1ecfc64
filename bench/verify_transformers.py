"""Tiny transformers (and torchvision FCN) models for `candle-port verify`, built from configs offline.

Issue 14 asks that verify's runtime strategy pass these real model classes on rounding alone. Each
factory builds the model from a small config (no download) and wraps it so the forward returns one
tensor. Reproduce a row of the README's "Real models verified" table with, e.g.:

    SITE=$(python -c 'import transformers, os; print(os.path.dirname(transformers.__file__))')
    PYTHONPATH=$PWD/src python -m candle_port verify bench/verify_transformers.py:mobilevit \
        --input-shape 2,3,64,64 --source-root $SITE/models/mobilevit --dtype float32

`python bench/verify_transformers.py [mobilevit dinov2 dpt fcn]` runs the rows in float32 and float64 and prints the table;
with `--planted` it scales every rewritten resize by 1.001 instead, and each row must then fail.
Optional: needs `transformers` (and torchvision for FCN), which CI does not install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch


class FirstOutput(torch.nn.Module):
    """Returns one named field of a model's output, so verify compares a single tensor."""

    def __init__(self, model: torch.nn.Module, field: str):
        super().__init__()
        self.model = model
        self.field = field

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        out = self.model(pixel_values)
        return out[self.field]


def mobilevit() -> torch.nn.Module:
    """MobileViT segmentation: bilinear resizes in the MobileViT blocks and the ASPP pooling (BatchNorm over the batch)."""
    from transformers import MobileViTConfig, MobileViTForSemanticSegmentation

    config = MobileViTConfig(image_size=64, hidden_sizes=[16, 16, 16], neck_hidden_sizes=[8, 8, 16, 16, 16, 16, 32],
                             num_attention_heads=2, aspp_out_channels=16, num_labels=3)
    return FirstOutput(MobileViTForSemanticSegmentation(config), "logits")


def dinov2() -> torch.nn.Module:
    """DINOv2 at an input size other than the config's, so it resizes its position embedding (bicubic, in float32)."""
    from transformers import Dinov2Config, Dinov2Model

    config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          image_size=56, patch_size=14)
    return FirstOutput(Dinov2Model(config), "last_hidden_state")


def dpt() -> torch.nn.Module:
    """DPT depth (ViT backbone, hybrid off): bilinear resizes in the position embedding, fusion and head."""
    from transformers import DPTConfig, DPTForDepthEstimation

    config = DPTConfig(hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64,
                       image_size=32, patch_size=8, backbone_out_indices=[0, 1, 2, 3],
                       neck_hidden_sizes=[8, 16, 32, 32], fusion_hidden_size=16, is_hybrid=False)
    return FirstOutput(DPTForDepthEstimation(config), "predicted_depth")


def fcn() -> torch.nn.Module:
    """torchvision FCN-ResNet50 (random weights, 3 classes): the final bilinear resize to the input size."""
    from torchvision.models.segmentation import fcn_resnet50

    return FirstOutput(fcn_resnet50(weights=None, weights_backbone=None, num_classes=3, aux_loss=False), "out")


# (factory, input shape, source root: a transformers subpackage or a torchvision one)
ROWS = [
    ("mobilevit", "2,3,64,64", "transformers", "models/mobilevit"),
    ("dinov2", "1,3,42,42", "transformers", "models/dinov2"),
    ("dpt", "1,3,48,48", "transformers", "models/dpt"),
    # The ResNet's MaxPool2d(3, 2, 1) lives in models/resnet.py: the root must hold it too.
    ("fcn", "1,3,32,32", "torchvision", "models"),
]


def _package_dir(name: str) -> Path:
    import importlib

    return Path(importlib.import_module(name).__file__).parent


def run_row(factory: str, shape: str, package: str, sub: str, dtype: str) -> dict:
    """One `candle-port verify` run (JSON), as a user would type it."""
    here = Path(__file__).resolve()
    cmd = [sys.executable, "-m", "candle_port", "verify", f"{here}:{factory}", "--input-shape", shape,
           "--source-root", str(_package_dir(package) / sub), "--dtype", dtype, "--output-format", "json"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here.parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        return {"verdict": f"error {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
    return json.loads(proc.stdout)


def row_cells(data: dict) -> dict:
    if "max_diffs" not in data:
        return {"verdict": data["verdict"]}
    d, g = data["max_diffs"], data["graphs"]
    return {
        "verdict": data["verdict"], "sites": data["rewrite"]["sites_fixed"],
        "lacking": f"{len(g['original']['lacking'])} → {len(g['rewritten']['lacking'])}",
        "wrong": f"{len(g['original']['wrong'])} → {len(g['rewritten']['wrong'])}",
        "tensors": len(data["comparisons"]), "method": data["tolerance"]["method"],
        "dists": f"{d['rewrite_dist_max']:.1e} / {d['own_noise_max']:.1e} ({d['worst_ratio']:.2f})",
    }


def _scaled_resize(text: str, strategy: str, path: str):
    """port-fix's rewrite, then a planted bug: every rewritten resize scaled by 1.001 (0.1%)."""
    from candle_port.verify.workspace import fix_with_port_fix

    new_text, changed, *rest = fix_with_port_fix(text, strategy, path)
    return (new_text.replace("candle_runtime.interpolate(", "1.001 * candle_runtime.interpolate("), changed, *rest)


def planted(factory: str, shape: str, package: str, sub: str, dtype: str) -> str:
    """verify's verdict on a wrong rewrite of the row (it must fail on the numbers)."""
    from candle_port.verify.runner import VerifyOptions, run_verify

    options = VerifyOptions(model=f"{Path(__file__).resolve()}:{factory}", input_shapes=[tuple(map(int, shape.split(",")))],
                            dtype=dtype, source_root=str(_package_dir(package) / sub))
    report = run_verify(options, rewrite=_scaled_resize).to_json()
    d = report["max_diffs"]
    return f"{report['verdict']} (worst ratio {d['worst_ratio']:.3g}, rewrite dist {d['rewrite_dist_max']:.2g})"


def main() -> None:
    import transformers

    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    wanted = [a for a in sys.argv[1:] if a != "--planted"]  # factory names; all rows when none
    for factory, shape, package, sub in ROWS:
        if wanted and factory not in wanted:
            continue
        if "--planted" in sys.argv:
            cells = {dtype: planted(factory, shape, package, sub, dtype) for dtype in ("float32", "float64")}
        else:
            cells = {dtype: row_cells(run_row(factory, shape, package, sub, dtype)) for dtype in ("float32", "float64")}
        print(json.dumps({"model": factory, "input": shape, "source_root": f"{package}/{sub}", **cells}))


if __name__ == "__main__":
    main()
