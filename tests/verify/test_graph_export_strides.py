"""The torch reference must not depend on the strides of size-1 dims.

A batch-1 gradient may arrive with any stride on its batch dim (legal for a size-1 dim). torch
2.14.1's CPU BatchNorm backward (eval and train, and instance norm, which runs it) is then wrong
when the gradient is channels-last with a batch stride other than H*W*C: RT-DETR's encoder input
(per level a conv and a BatchNorm, flattened and concatenated) makes one, and `verify --candle`
blamed a correct candle at 1e-3 of scale with no op named. Each op family's backward verify traces
is fed such gradients here against the same values contiguous; the reference
(graph_export._exact_backward_mode) must give the contiguous result for all of them.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from candle_port.verify.graph_export import _exact_backward_mode, export_graph  # noqa: E402

D = torch.float64
# relative to the gradient's scale: rounding of another summation order, far below any error
SAME = 1e-13


def _strides(shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """Layouts of a batch-1 gradient: channels-last with the batch stride C (RT-DETR's) and 1, the
    canonical channels-last one, and NCHW with batch stride 1."""
    c = shape[1]
    if len(shape) == 4:
        h, w = shape[2:]
        return {"channels-last-batch-C": (c, 1, w * c, c), "channels-last-batch-1": (1, 1, w * c, c),
                "channels-last": (h * w * c, 1, w * c, c), "nchw-batch-1": (1, h * w, w, 1)}
    length = shape[2]
    return {"channels-last-batch-C": (c, 1, c), "channels-last-batch-1": (1, 1, c),
            "channels-last": (length * c, 1, c), "ncl-batch-1": (1, length, 1)}


def _scaled(x, p):
    return x * p["w"][:, None, None]


FAMILIES = {
    "batch_norm-eval": (lambda x, p: F.batch_norm(x, p["rm"], p["rv"], p["w"], p["b"], False), (1, 3, 4, 5)),
    "batch_norm-train": (lambda x, p: F.batch_norm(x, None, None, p["w"], p["b"], True), (1, 3, 4, 5)),
    "batch_norm1d-eval": (lambda x, p: F.batch_norm(x, p["rm"], p["rv"], p["w"], p["b"], False), (1, 3, 7)),
    "instance_norm": (lambda x, p: F.instance_norm(x, weight=p["w"], bias=p["b"]), (1, 3, 4, 5)),
    "group_norm": (lambda x, p: F.group_norm(x, 3, p["w"], p["b"]), (1, 3, 4, 5)),
    "layer_norm": (lambda x, p: F.layer_norm(x.permute(0, 2, 3, 1), (3,), p["w"], p["b"]).permute(0, 3, 1, 2), (1, 3, 4, 5)),
    "conv2d": (lambda x, p: F.conv2d(x, p["k"], p["b"], padding=1), (1, 3, 4, 5)),
    "conv1d": (lambda x, p: F.conv1d(x, p["k1"], p["b"], padding=1), (1, 3, 7)),
    "conv_transpose2d": (lambda x, p: F.conv_transpose2d(x, p["k"], p["b"], stride=2), (1, 3, 4, 5)),
    "max_pool2d": (lambda x, p: F.max_pool2d(_scaled(x, p), 3, 2, 1), (1, 3, 4, 5)),
    "avg_pool2d": (lambda x, p: F.avg_pool2d(_scaled(x, p), 3, 2, 1), (1, 3, 4, 5)),
    "adaptive_avg_pool2d": (lambda x, p: F.adaptive_avg_pool2d(_scaled(x, p), (3, 2)), (1, 3, 4, 5)),
    "adaptive_max_pool2d": (lambda x, p: F.adaptive_max_pool2d(_scaled(x, p), (3, 2)), (1, 3, 4, 5)),
    "upsample_nearest2d": (lambda x, p: F.interpolate(_scaled(x, p), scale_factor=2, mode="nearest"), (1, 3, 4, 5)),
    "upsample_bilinear2d": (lambda x, p: F.interpolate(_scaled(x, p), scale_factor=2, mode="bilinear"), (1, 3, 4, 5)),
    "softmax": (lambda x, p: torch.softmax(_scaled(x, p), 1), (1, 3, 4, 5)),
    "gelu": (lambda x, p: F.gelu(_scaled(x, p)), (1, 3, 4, 5)),
}
# measured with torch 2.14.1: the families whose own kernel gets these gradients wrong
TORCH_WRONG = {"batch_norm-eval", "batch_norm-train", "instance_norm"}


def _worst_difference(name: str, exact: bool) -> float:
    """The largest relative difference of any gradient, over the strided layouts, from the same
    gradient fed contiguous; ``exact``: under the reference's backward mode."""
    fn, shape = FAMILIES[name]
    gen = torch.Generator().manual_seed(0)
    p = {k: torch.randn(s, dtype=D, generator=gen) for k, s in
         (("w", (3,)), ("b", (3,)), ("rm", (3,)), ("k", (3, 3, 3, 3)), ("k1", (3, 3, 3)))}
    p["rv"] = torch.rand(3, dtype=D, generator=gen) + 0.5
    leaves = [p[k].requires_grad_() for k in ("w", "b", "k", "k1")]
    x = torch.randn(shape, dtype=D, generator=gen, requires_grad=True)
    upstream = torch.randn(fn(x, p).shape, dtype=D, generator=gen)

    def grads(g):
        for t in (x, *leaves):
            t.grad = None
        out = fn(x, p)
        if exact:
            with _exact_backward_mode(set()):
                out.backward(g)
        else:
            out.backward(g)
        return [t.grad.clone() for t in (x, *leaves) if t.grad is not None]

    reference = grads(upstream.contiguous())
    worst = 0.0
    for strides in _strides(tuple(upstream.shape)).values():
        fed = torch.empty_strided(upstream.shape, strides, dtype=D).copy_(upstream)
        for got, want in zip(grads(fed), reference):
            worst = max(worst, float((got - want).abs().max() / want.abs().max().clamp_min(1e-300)))
    return worst


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_reference_backward_does_not_depend_on_size_one_strides(name):
    assert _worst_difference(name, exact=True) < SAME


@pytest.mark.parametrize("name", sorted(TORCH_WRONG))
def test_torch_batch_norm_backward_depends_on_the_batch_stride(name):
    """What the reference works around (if this fails, torch fixed it: drop the fix)."""
    assert _worst_difference(name, exact=False) > 0.1


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - TORCH_WRONG))
def test_torch_backward_of_the_other_families_does_not(name):
    """The audit: the other families' own kernels are right, so the reference leaves them to torch."""
    assert _worst_difference(name, exact=False) < SAME


class Levels(torch.nn.Module):
    """RT-DETR's encoder input: per level a 1x1 conv and a BatchNorm, flattened, concatenated: the
    gradient of each level is a channels-last slice whose batch stride is the whole sequence's."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1, bias=False), torch.nn.BatchNorm2d(4))
                                        for _ in range(2))
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x):
        feats = [p(f) for p, f in zip(self.proj, [x, x[:, :, ::2, ::2]])]
        return self.lin(torch.cat([f.flatten(2).permute(0, 2, 1) for f in feats], 1))

    def by_hand(self, x):
        """The same, each eval BatchNorm as its per-channel affine map, the sequence made contiguous."""
        feats = []
        for p, f in zip(self.proj, [x, x[:, :, ::2, ::2]]):
            bn = p[1]
            z = (p[0](f) - bn.running_mean[:, None, None]) / torch.sqrt(bn.running_var[:, None, None] + bn.eps)
            feats.append(z * bn.weight[:, None, None] + bn.bias[:, None, None])
        return self.lin(torch.cat([f.flatten(2).permute(0, 2, 1).contiguous() for f in feats], 1))


def levels() -> tuple[Levels, torch.Tensor]:
    torch.manual_seed(0)
    model = Levels().double().eval()
    with torch.no_grad():
        for p in model.proj:
            p[1].running_mean.normal_()
            p[1].running_var.uniform_(0.5, 2.0)
            p[1].weight.normal_()
    return model, torch.randn(1, 3, 4, 6, dtype=D)


def test_the_reference_of_a_batch_one_batch_norm_with_a_strided_gradient_is_right(tmp_path):
    model, x = levels()
    graph = export_graph(model, [x], tmp_path)
    reference = load_file(str(tmp_path / "torch.safetensors"))
    upstream = load_file(str(tmp_path / "tensors.safetensors"))["upstream.0"]
    model.zero_grad()
    (model.by_hand(x) * upstream).sum().backward()
    for name, p in model.named_parameters():
        assert torch.allclose(reference[f"grad.{name}"], p.grad, rtol=1e-13, atol=1e-14), name
    assert "aten.native_batch_norm_backward.default" in graph["reference_fixes"]
    model.zero_grad()
    (model(x) * upstream).sum().backward()  # torch's own backward: 1.4 off on proj.0.1.bias
    assert float((model.proj[0][1].bias.grad - reference["grad.proj.0.1.bias"]).abs().max()) > 0.1


@pytest.mark.slow
def test_a_batch_one_batch_norm_with_a_strided_gradient_passes_in_candle(binary):
    """RT-DETR at batch 1 failed --candle in port mode with no op named: torch was wrong, not candle."""
    from candle_port.verify.candle_run import check_in_candle, summary_lines

    model, x = levels()
    result = check_in_candle(model, [x], binary=binary)
    assert result["port"]["ok"] and result["native"]["ok"], summary_lines(result)
    assert "aten.native_batch_norm_backward.default" in result["reference_fixes"]
    assert any("reference" in line and "native_batch_norm_backward" in line for line in summary_lines(result))
