"""The no-gradient resize compositions (bench/runtime_table.py rows) against torch and against
the gradient path: same values, same strides, gradients equal to torch's.

The no-gradient paths run when autograd records nothing on the input (``torch.no_grad()`` or an
input without ``requires_grad``) and nothing traces; they write into a fresh output, so their
values must equal the traced / differentiable composition's to rounding.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

from candle_port.runtime import bilinear as B
from candle_port.runtime import interpolate

FWD_ATOL_F32 = 1e-6  # inputs in [-1, 1], as the parity tests
FWD_ATOL_F64 = 1e-12
GRAD_ATOL_F64 = 1e-10

CL = torch.channels_last

# (input shape, interpolate kwargs): x2 both align_corners, x3, x4, x8, mixed factors, odd sizes
PHASE_CASES = [
    ((2, 5, 9, 13), dict(scale_factor=2, align_corners=True)),
    ((2, 5, 9, 13), dict(scale_factor=2, align_corners=False)),
    ((2, 5, 9, 13), dict(size=(18, 26))),
    ((1, 3, 7, 5), dict(scale_factor=4)),
    ((1, 3, 7, 5), dict(scale_factor=3)),
    ((2, 4, 3, 6), dict(scale_factor=8)),
    ((3, 4, 5, 7), dict(scale_factor=(2, 4))),
    ((2, 3, 11, 4), dict(size=(22, 8), align_corners=True)),
    ((2, 16, 6, 6), dict(scale_factor=2, align_corners=True)),
]


def _rand(shape, dtype=torch.float32, fmt=CL, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
    return x.to(dtype).contiguous(memory_format=fmt)


class _Count:
    def __init__(self, monkeypatch):
        self.calls = 0
        real = B._apply_phase_cl

        def counting(*args):
            self.calls += 1
            return real(*args)

        monkeypatch.setattr(B, "_apply_phase_cl", counting)


@pytest.mark.parametrize("shape,kw", PHASE_CASES)
@pytest.mark.parametrize("chunk", [8 << 20, 256], ids=["one-chunk", "row-bands"])
@pytest.mark.parametrize("fmt", [CL, torch.contiguous_format], ids=["cl", "nchw"])
def test_phase_no_grad_equals_torch_and_grad_path(shape, kw, chunk, fmt, monkeypatch):
    monkeypatch.setattr(B, "_PHASE_CHUNK_BYTES", chunk)
    count = _Count(monkeypatch)
    for dtype, atol in ((torch.float32, FWD_ATOL_F32), (torch.float64, FWD_ATOL_F64)):
        x = _rand(shape, dtype, fmt).requires_grad_()
        ref = F.interpolate(x, mode="bilinear", **kw)
        with torch.no_grad():
            fast = interpolate(x, mode="bilinear", **kw)
        calls = count.calls
        graded = interpolate(x, mode="bilinear", **kw)
        assert count.calls == calls, "the gradient path must not take the no-gradient composition"
        assert graded.requires_grad and not fast.requires_grad
        assert (fast - ref).abs().max().item() <= atol
        assert (fast - graded.detach()).abs().max().item() <= atol
        assert fast.stride() == ref.stride() == graded.stride()
    assert count.calls == 2  # once per dtype, under no_grad


def test_phase_runs_for_an_input_without_requires_grad(monkeypatch):
    count = _Count(monkeypatch)
    x = _rand((2, 8, 6, 6))
    out = interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    assert count.calls == 1
    ref = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    assert (out - ref).abs().max().item() <= FWD_ATOL_F32


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((2, 8, 6, 6), dict(scale_factor=4, align_corners=True)),  # x4 ac=True: neighbours vary
        ((2, 8, 6, 6), dict(size=(9, 9))),  # not an integer factor
        ((2, 8, 6, 6), dict(size=(12, 6))),  # W unchanged
    ],
)
def test_phase_declines_other_upscales(shape, kw, monkeypatch):
    count = _Count(monkeypatch)
    x = _rand(shape)
    with torch.no_grad():
        out = interpolate(x, mode="bilinear", **kw)
    assert count.calls == 0
    ref = F.interpolate(x, mode="bilinear", **kw)
    assert (out - ref).abs().max().item() <= FWD_ATOL_F32
    assert out.stride() == ref.stride()


def test_phase_not_for_long_contiguous_axes_or_tracing(monkeypatch):
    count = _Count(monkeypatch)
    x = _rand((1, 2, 6, 200), fmt=torch.contiguous_format)  # W > 128: the periodic GEMM
    with torch.no_grad():
        out = interpolate(x, scale_factor=2, mode="bilinear")
    assert count.calls == 0
    assert (out - F.interpolate(x, scale_factor=2, mode="bilinear")).abs().max().item() <= FWD_ATOL_F32
    xc = _rand((2, 8, 6, 6))
    gm = make_fx(lambda t: interpolate(t, scale_factor=2, mode="bilinear"))(xc)
    assert count.calls == 0
    targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert not any("lerp" in t for t in targets), targets
    ref = F.interpolate(xc, scale_factor=2, mode="bilinear")
    assert (gm(xc) - ref).abs().max().item() <= FWD_ATOL_F32


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_phase_half_precision(dtype):
    x = _rand((2, 6, 5, 7), dtype)
    with torch.no_grad():
        out = interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    ref = F.interpolate(x.float(), scale_factor=2, mode="bilinear", align_corners=True).to(dtype)
    assert out.dtype == dtype and out.stride() == ref.stride()
    assert (out.float() - ref.float()).abs().max().item() <= 2 * torch.finfo(dtype).eps


def test_phase_batch_one_layout_is_torchs():
    # channels_last-contiguous batch-1 tensor that torch resizes into a contiguous output
    x = _rand((1, 6, 5, 7), fmt=torch.contiguous_format).permute(0, 2, 3, 1).reshape(1, 5, 7, 6)
    x = x.permute(0, 3, 1, 2)
    with torch.no_grad():
        out = interpolate(x, scale_factor=2, mode="bilinear")
    ref = F.interpolate(x, scale_factor=2, mode="bilinear")
    assert out.stride() == ref.stride()
    assert (out - ref).abs().max().item() <= FWD_ATOL_F32


@pytest.mark.parametrize("shape,kw", PHASE_CASES[:6])
def test_channels_last_gradients_equal_torch(shape, kw):
    x = _rand(shape, torch.float64).requires_grad_()
    g = _rand(F.interpolate(x.detach(), mode="bilinear", **kw).shape, torch.float64, seed=1)
    (ref,) = torch.autograd.grad(F.interpolate(x, mode="bilinear", **kw), x, g)
    (got,) = torch.autograd.grad(interpolate(x, mode="bilinear", **kw), x, g)
    assert (got - ref).abs().max().item() <= GRAD_ATOL_F64


def _graph_test_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("test_runtime_graph.py")
    spec = importlib.util.spec_from_file_location("_runtime_graph_for_resize_paths", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((2, 3, 20, 24), dict(scale_factor=2, align_corners=True)),  # band, W first
        ((2, 3, 20, 24), dict(scale_factor=4)),  # periodic on both axes
        ((2, 3, 20, 24), dict(size=(50, 30))),  # band
        ((2, 3, 40, 36), dict(scale_factor=0.5)),  # downscale: dense, H first
    ],
)
def test_channels_last_gradient_path_graph_uses_allowed_ops(shape, kw):
    graph = _graph_test_module()
    x = _rand(shape)
    gm = make_fx(lambda t: interpolate(t, mode="bilinear", **kw))(x)
    used = graph._tainted_ops(gm)
    assert used and used <= set(graph.ALLOWED), sorted(used - set(graph.ALLOWED))
    ref = F.interpolate(x, mode="bilinear", **kw)
    assert (gm(x) - ref).abs().max().item() <= FWD_ATOL_F32
    xg = _rand(shape, torch.float64).requires_grad_()
    g = _rand(ref.shape, torch.float64, seed=2)
    (want,) = torch.autograd.grad(F.interpolate(xg, mode="bilinear", **kw), xg, g)
    (got,) = torch.autograd.grad(interpolate(xg, mode="bilinear", **kw), xg, g)
    assert (got - want).abs().max().item() <= GRAD_ATOL_F64


NEAREST_CASES = [
    ("nearest", (2, 5, 6, 7), dict(scale_factor=2)),
    ("nearest", (2, 5, 6, 7), dict(scale_factor=(3, 2))),
    ("nearest", (2, 5, 6, 7), dict(size=(6, 21))),  # H unchanged
    ("nearest", (2, 5, 6, 7), dict(size=(13, 14))),  # H not an integer factor: gathered
    ("nearest-exact", (2, 5, 6, 7), dict(scale_factor=2)),
    ("nearest", (1, 3, 4, 5, 6), dict(scale_factor=2)),  # 3-D, channels_last_3d
    ("nearest", (2, 4, 5, 3), dict(scale_factor=0.5)),
]


@pytest.mark.parametrize("mode,shape,kw", NEAREST_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.uint8])
def test_nearest_channels_last_no_grad_equals_torch_and_grad_path(mode, shape, kw, dtype):
    fmt = CL if len(shape) == 4 else torch.channels_last_3d
    x = _rand(shape, torch.float64, fmt)
    if dtype.is_floating_point:
        x = x.to(dtype)
    else:
        x = (x * 100).abs().to(dtype)
    x = x.contiguous(memory_format=fmt)
    ref = F.interpolate(x, mode=mode, **kw)
    with torch.no_grad():
        fast = interpolate(x, mode=mode, **kw)
    assert torch.equal(fast, ref) and fast.stride() == ref.stride()
    if dtype.is_floating_point:
        xg = x.clone().requires_grad_()
        out = interpolate(xg, mode=mode, **kw)
        assert torch.equal(out.detach(), ref) and out.stride() == ref.stride()
        g = _rand(ref.shape, dtype, fmt, seed=3)
        (got,) = torch.autograd.grad(out, xg, g)
        (want,) = torch.autograd.grad(F.interpolate(xg, mode=mode, **kw), xg, g)
        assert (got - want).abs().max().item() <= (1e-12 if dtype == torch.float64 else 1e-5)


LERP_ROWS_CASES = [
    ((1, 3, 32, 40), dict(size=(47, 75))),  # the mask upscale's shape, small
    ((2, 2, 17, 23), dict(size=(40, 31), align_corners=True)),
    ((1, 2, 30, 41), dict(scale_factor=0.37)),  # downscale
    ((1, 1, 9, 11), dict(size=(20, 3))),
    ((2, 3, 13, 10), dict(scale_factor=(2.5, 1.3))),
]


@pytest.mark.parametrize("shape,kw", LERP_ROWS_CASES)
@pytest.mark.parametrize("chunk", [16, 128], ids=["row-per-band", "bands"])
def test_lerp_rows_no_grad_equals_torch_and_grad_path(shape, kw, chunk, monkeypatch):
    monkeypatch.setattr(B, "_LERP_CHUNK_BYTES", chunk)
    calls = []
    real = B._apply_lerp_rows
    monkeypatch.setattr(B, "_apply_lerp_rows", lambda *a: (calls.append(1), real(*a))[1])
    for dtype, atol in ((torch.float32, FWD_ATOL_F32), (torch.float64, FWD_ATOL_F64)):
        x = _rand(shape, dtype, torch.contiguous_format).requires_grad_()
        ref = F.interpolate(x, mode="bilinear", **kw)
        with torch.no_grad():
            fast = interpolate(x, mode="bilinear", **kw)
        graded = interpolate(x, mode="bilinear", **kw)
        assert (fast - ref).abs().max().item() <= atol
        assert (fast - graded.detach()).abs().max().item() <= atol
        assert fast.stride() == ref.stride()
        g = _rand(ref.shape, dtype, torch.contiguous_format, seed=4)
        if dtype == torch.float64:
            (got,) = torch.autograd.grad(graded, x, g)
            (want,) = torch.autograd.grad(ref, x, g)
            assert (got - want).abs().max().item() <= GRAD_ATOL_F64
    assert len(calls) == 2  # no_grad only, once per dtype


def test_lerp_rows_not_for_periodic_w_small_images_or_tracing(monkeypatch):
    calls = []
    real = B._apply_lerp_rows
    monkeypatch.setattr(B, "_apply_lerp_rows", lambda *a: (calls.append(1), real(*a))[1])
    with torch.no_grad():
        interpolate(_rand((1, 3, 256, 256), fmt=torch.contiguous_format), size=(1024, 1024), mode="bilinear")
        interpolate(_rand((2, 3, 20, 30), fmt=torch.contiguous_format), size=(47, 75), mode="bilinear")
    assert not calls  # x4 W is periodic; 47 x 75 outputs are under the band size
    monkeypatch.setattr(B, "_LERP_CHUNK_BYTES", 64)
    x = _rand((1, 3, 20, 30), fmt=torch.contiguous_format)
    gm = make_fx(lambda t: interpolate(t, size=(47, 75), mode="bilinear"))(x)
    assert not calls
    assert (gm(x) - F.interpolate(x, size=(47, 75), mode="bilinear")).abs().max().item() <= FWD_ATOL_F32


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("chunk", [8 << 20, 256], ids=["one-chunk", "row-bands"])
@pytest.mark.parametrize("fmt", [CL, torch.contiguous_format], ids=["cl", "nchw"])
def test_phase_non_finite_input_takes_the_tap_path(value, chunk, fmt, monkeypatch):
    monkeypatch.setattr(B, "_PHASE_CHUNK_BYTES", chunk)
    x = _rand((2, 4, 6, 7), fmt=fmt)
    x[1, 2, 5, 3] = value
    ref = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    with torch.no_grad():
        out = interpolate(x, scale_factor=2, mode="bilinear", align_corners=True)
    assert torch.equal(out.isnan(), ref.isnan()) and torch.equal(out.isinf(), ref.isinf())
    ok = ref.isfinite()
    assert (out[ok] - ref[ok]).abs().max().item() <= FWD_ATOL_F32
    assert out.stride() == ref.stride()


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_lerp_rows_non_finite_input_takes_the_tap_path(value, monkeypatch):
    monkeypatch.setattr(B, "_LERP_CHUNK_BYTES", 128)
    x = _rand((1, 2, 12, 17), fmt=torch.contiguous_format)
    x[0, 1, 7, 4] = value
    ref = F.interpolate(x, size=(19, 30), mode="bilinear")
    with torch.no_grad():
        out = interpolate(x, size=(19, 30), mode="bilinear")
    assert torch.equal(out.isnan(), ref.isnan()) and torch.equal(out.isinf(), ref.isinf())
    ok = ref.isfinite()
    assert (out[ok] - ref[ok]).abs().max().item() <= FWD_ATOL_F32
