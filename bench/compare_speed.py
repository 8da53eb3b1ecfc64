"""How long `candle-port compare` takes on a ViT-Base-sized parity directory (86M float32
parameters, a gradient each, the outputs of its 200-odd modules at batch 1), against the floor of
merely reading its two tensor files in the same process.

    python bench/compare_speed.py [--repeat 3]

Prints the median seconds of each and their ratio (docs/parity.md keeps the figures). The
directory is synthetic (random tensors shaped as transformers' ViTForImageClassification base:
12 layers of width 768), so no model is built or run: this times compare alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from candle_port.parity import FORMAT, tensor_files  # noqa: E402
from candle_port.parity.compare import compare  # noqa: E402


def vit_base_shapes() -> tuple[dict[str, tuple], list[str]]:
    params = {"vit.embeddings.cls_token": (1, 1, 768), "vit.embeddings.position_embeddings": (1, 197, 768),
              "vit.embeddings.patch_embeddings.projection.weight": (768, 3, 16, 16),
              "vit.embeddings.patch_embeddings.projection.bias": (768,)}
    modules = ["vit.embeddings.patch_embeddings", "vit.embeddings"]
    for i in range(12):
        p = f"vit.layers.{i}"
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            params[f"{p}.attention.{n}.weight"], params[f"{p}.attention.{n}.bias"] = (768, 768), (768,)
        params[f"{p}.mlp.fc1.weight"], params[f"{p}.mlp.fc1.bias"] = (3072, 768), (3072,)
        params[f"{p}.mlp.fc2.weight"], params[f"{p}.mlp.fc2.bias"] = (768, 3072), (768,)
        for n in ("layernorm_before", "layernorm_after"):
            params[f"{p}.{n}.weight"], params[f"{p}.{n}.bias"] = (768,), (768,)
        modules += [f"{p}.layernorm_before", f"{p}.attention.q_proj", f"{p}.attention.k_proj",
                    f"{p}.attention.v_proj", f"{p}.attention.o_proj", f"{p}.attention", f"{p}.layernorm_after",
                    f"{p}.mlp.fc1", f"{p}.mlp.fc2", f"{p}.mlp", p]
    params["vit.layernorm.weight"], params["vit.layernorm.bias"] = (768,), (768,)
    params["classifier.weight"], params["classifier.bias"] = (1000, 768), (1000,)
    return params, modules + ["vit.layernorm", "classifier"]


def build(directory: Path) -> int:
    gen = torch.Generator().manual_seed(0)
    params, modules = vit_base_shapes()
    grads = {f"grad:{k}": torch.randn(s, generator=gen) for k, s in params.items()}
    outs = {f"module:{m}": torch.randn((1, 197, 3072 if m.endswith("fc1") else 768), generator=gen) for m in modules}
    torch_side = {**grads, **outs, "output.0": torch.randn(1, 1000, generator=gen)}
    candle_side = {k: v + 1e-7 * torch.randn(v.shape, generator=gen) for k, v in torch_side.items()}
    tensor_files.write(directory / "torch.safetensors", torch_side)
    tensor_files.write(directory / "candle.safetensors", candle_side)
    manifest = {"format": FORMAT, "model": "synthetic ViT-Base", "dtype": "float32", "mode": "eval",
                "inputs": ["input.0"], "outputs": ["output.0"], "parameters": list(params), "buffers": [],
                "shapes": {k: list(s) for k, s in params.items()},
                "modules": [{"name": m, "class": "Module", "source": ""} for m in modules],
                "noise_method": "float64", "noise": {k: 1e-6 for k in torch_side}, "renames": [], "steps": None}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    requests = [{"name": k, "torch_name": k, "shape": list(s), "torch_shape": list(s), "status": "parameter"}
                for k, s in params.items()]
    (directory / "candle.json").write_text(json.dumps({"format": FORMAT, "dtype": "float32", "requests": requests,
                                                       "without_gradient": [], "losses": []}))
    return sum(torch.Size(s).numel() for s in params.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        n = build(directory)
        read, full = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            tensor_files.read(directory / "torch.safetensors")
            tensor_files.read(directory / "candle.safetensors")
            read.append(time.perf_counter() - start)
            start = time.perf_counter()
            result = compare(directory)
            full.append(time.perf_counter() - start)
        assert result.verdict == "match", result.verdict
    r, f = statistics.median(read), statistics.median(full)
    print(f"ViT-Base-sized parity directory: {n / 1e6:.1f}M parameters, {len(result.modules)} module outputs, 1 thread")
    print(f"  read both tensor files: {r:.2f} s (median of {args.repeat})")
    print(f"  candle-port compare:    {f:.2f} s  ({f / r:.1f}x reading)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
