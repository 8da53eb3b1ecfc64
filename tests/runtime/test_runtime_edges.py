"""Edge cases: layouts, dtypes, empty batches, identity, modules, argument errors."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import candle_port.runtime as rt
from candle_port.runtime import (
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    interpolate,
    upsample,
    upsample_bilinear,
    upsample_bilinear2d,
    upsample_nearest,
)

FWD_ATOL_F32 = 1e-6
# half precision: we compute in float32 and round once; ATen rounds its weights and partial sums
# to the half type, so the two differ by up to 2 ulps of the output (at |y| <= 1)
FP16_ATOL = 2e-3
BF16_ATOL = 1.6e-2


def _close(out, ref, atol):
    assert out.shape == ref.shape and out.dtype == ref.dtype
    assert (out.double() - ref.double()).abs().max().item() <= atol


def _formats(t):
    return [t.is_contiguous(memory_format=f) for f in (torch.contiguous_format, torch.channels_last)]


@pytest.mark.parametrize(
    "shape", [(2, 3, 5, 7), (1, 8, 150, 140), (2, 1, 5, 7), (2, 3, 1, 1)], ids=str
)
@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(4, 9))], ids=["x2", "size"])
def test_channels_last_output_format_matches_torch(shape, kw):
    x = (torch.rand(shape) * 2 - 1).contiguous(memory_format=torch.channels_last)
    ref = F.interpolate(x, mode="bilinear", **kw)
    out = upsample_bilinear2d(x, **kw)
    _close(out, ref, FWD_ATOL_F32)
    assert _formats(out) == _formats(ref)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.rand(2, 3, 9, 7).transpose(-1, -2),
        lambda: torch.rand(2, 3, 12, 16)[:, :, ::2, 1::3],
        lambda: torch.rand(3, 2, 5, 6).permute(1, 0, 2, 3),
        lambda: torch.rand(1, 3, 140, 300)[:, :, 3:, ::2],
    ],
    ids=["transposed", "strided", "batch-permuted", "long-strided"],
)
def test_non_contiguous_input(make):
    x = make() * 2 - 1
    for kw in (dict(scale_factor=2), dict(size=(5, 3)), dict(scale_factor=(1.0, 1.5))):
        ref = F.interpolate(x, mode="bilinear", **kw)
        out = upsample_bilinear2d(x, **kw)
        _close(out, ref, FWD_ATOL_F32)
        assert _formats(out) == _formats(ref)


@pytest.mark.parametrize(("dtype", "atol"), [(torch.float16, FP16_ATOL), (torch.bfloat16, BF16_ATOL)])
@pytest.mark.parametrize("align", [False, True], ids=["ac-false", "ac-true"])
@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "nhwc"])
def test_half_precision_within_tolerance_of_torch(dtype, atol, align, cl):
    torch.manual_seed(0)  # the "at least as close as torch's" check below is about typical data
    for shape, kw in [((2, 3, 17, 23), dict(scale_factor=2)), ((1, 4, 150, 160), dict(scale_factor=0.6))]:
        x = (torch.rand(shape) * 2 - 1).to(dtype)
        if cl:
            x = x.contiguous(memory_format=torch.channels_last)
        ref = F.interpolate(x, mode="bilinear", align_corners=align, **kw)
        _close(upsample_bilinear2d(x, align_corners=align, **kw), ref, atol)
        # and it is at least as close to the exact (float64) result as torch's own
        exact = F.interpolate(x.double(), mode="bilinear", align_corners=align, **kw)
        ours_err = (upsample_bilinear2d(x, align_corners=align, **kw).double() - exact).abs().max()
        assert ours_err <= (ref.double() - exact).abs().max()


def test_half_precision_gradient_flows():
    x = torch.rand(1, 2, 4, 4, dtype=torch.float16, requires_grad=True)
    upsample_bilinear2d(x, scale_factor=2).sum().backward()
    assert x.grad is not None and x.grad.dtype == torch.float16


def test_batch_zero():
    x = torch.rand(0, 3, 4, 5, requires_grad=True)
    out = upsample_bilinear2d(x, scale_factor=2)
    assert out.shape == F.interpolate(x, scale_factor=2, mode="bilinear").shape
    out.sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize(
    "kw", [dict(size=(5, 7)), dict(scale_factor=1.0), dict(scale_factor=1.1)], ids=str
)
def test_identity_is_a_copy(kw):
    x = torch.rand(2, 3, 5, 7, requires_grad=True)
    out = upsample_bilinear2d(x, **kw)
    assert torch.equal(out, x) and torch.equal(out, F.interpolate(x, mode="bilinear", **kw))
    assert out.data_ptr() != x.data_ptr()
    out.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))


def test_other_modes_pass_through_to_torch():
    x = torch.rand(2, 3, 5, 7)
    for mode in ("nearest", "nearest-exact", "bicubic", "area"):
        torch.testing.assert_close(
            interpolate(x, scale_factor=2, mode=mode), F.interpolate(x, scale_factor=2, mode=mode)
        )
    x5 = torch.rand(1, 2, 3, 4, 5)
    torch.testing.assert_close(
        interpolate(x5, scale_factor=2, mode="trilinear"), F.interpolate(x5, scale_factor=2, mode="trilinear")
    )
    torch.testing.assert_close(upsample_nearest(x, scale_factor=2), F.interpolate(x, scale_factor=2))


def test_aliases():
    x = torch.rand(2, 3, 5, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(upsample_bilinear(x, scale_factor=2), F.upsample_bilinear(x, scale_factor=2), FWD_ATOL_F32)
        _close(upsample(x, size=(4, 9), mode="bilinear"), F.upsample(x, size=(4, 9), mode="bilinear"), FWD_ATOL_F32)


MODULE_CASES = [
    pytest.param(lambda m: m.Upsample(scale_factor=2, mode="bilinear"), id="Upsample-bilinear"),
    pytest.param(lambda m: m.Upsample(size=(9, 4), mode="bilinear", align_corners=True), id="Upsample-ac"),
    pytest.param(lambda m: m.Upsample(scale_factor=1.5, mode="nearest"), id="Upsample-nearest"),
    pytest.param(
        lambda m: m.Upsample(scale_factor=(2.5, 1.5), mode="bilinear", recompute_scale_factor=True),
        id="Upsample-recompute",
    ),
    pytest.param(lambda m: m.UpsamplingBilinear2d(scale_factor=2), id="UpsamplingBilinear2d"),
    pytest.param(lambda m: m.UpsamplingBilinear2d(size=(3, 11)), id="UpsamplingBilinear2d-size"),
    pytest.param(lambda m: m.UpsamplingNearest2d(scale_factor=2), id="UpsamplingNearest2d"),
]


@pytest.mark.parametrize("make", MODULE_CASES)
def test_modules_match_torch(make):
    ours, theirs = make(rt), make(nn)
    assert repr(ours) == repr(theirs)
    assert ours.state_dict() == theirs.state_dict() == {}
    assert list(ours.parameters()) == []
    assert isinstance(ours, type(theirs))
    x = torch.rand(2, 3, 5, 7) * 2 - 1
    _close(ours(x), theirs(x), FWD_ATOL_F32)


def test_module_types():
    assert issubclass(Upsample, nn.Upsample)
    assert issubclass(UpsamplingBilinear2d, nn.UpsamplingBilinear2d)
    assert issubclass(UpsamplingNearest2d, nn.UpsamplingNearest2d)


BAD_ARGS = [
    pytest.param((2, 3, 4, 4), dict(size=(8, 8), scale_factor=2, mode="bilinear"), id="size-and-scale"),
    pytest.param((2, 3, 4, 4), dict(mode="bilinear"), id="neither"),
    pytest.param((2, 3, 4, 4), dict(size=(8, 8, 8), mode="bilinear"), id="size-length"),
    pytest.param((2, 3, 4, 4), dict(scale_factor=(2, 2, 2), mode="bilinear"), id="scale-length"),
    pytest.param((2, 3, 4, 4), dict(size=(8.0, 8), mode="bilinear"), id="float-size"),
    pytest.param(
        (2, 3, 4, 4), dict(size=8, mode="bilinear", recompute_scale_factor=True), id="recompute-with-size"
    ),
    pytest.param((2, 3, 4, 4), dict(size=(0, 3), mode="bilinear"), id="zero-size"),
    pytest.param((2, 3, 4, 4), dict(scale_factor=0.1, mode="bilinear"), id="scale-to-zero"),
    pytest.param((2, 3, 4, 4), dict(scale_factor=-1.0, mode="bilinear"), id="negative-scale"),
    pytest.param((2, 3, 0, 4), dict(scale_factor=2, mode="bilinear"), id="empty-spatial"),
    pytest.param((2, 0, 4, 4), dict(scale_factor=2, mode="bilinear"), id="zero-channels"),
    pytest.param((2, 3, 4, 4), dict(scale_factor=2, mode="nearest", align_corners=True), id="nearest-ac"),
    pytest.param((2, 3, 4), dict(scale_factor=2, mode="bilinear"), id="bilinear-3d"),
    pytest.param((2, 3, 4, 4), dict(scale_factor=2, mode="linear"), id="linear-4d"),
    pytest.param((2, 3, 4), dict(scale_factor=2, mode="linear", antialias=True), id="antialias-linear"),
    pytest.param(
        (2, 3, 4, 4), dict(size=(0, 3), mode="bilinear", antialias=True), id="antialias-zero-size"
    ),
    pytest.param(
        (2, 0, 4, 4), dict(scale_factor=0.5, mode="bilinear", antialias=True), id="antialias-zero-channels"
    ),
    pytest.param(
        (2, 3, 4, 4),
        dict(size=2, scale_factor=0.5, mode="bilinear", antialias=True),
        id="antialias-size-and-scale",
    ),
]


@pytest.mark.parametrize(("shape", "kw"), BAD_ARGS)
def test_bad_arguments_raise_like_torch(shape, kw):
    x = torch.rand(shape)
    with pytest.raises(Exception) as theirs:
        F.interpolate(x, **kw)
    with pytest.raises(type(theirs.value)) as ours:
        interpolate(x, **kw)
    assert str(ours.value) == str(theirs.value)




def test_op_rejects_wrong_rank_and_integer_input():
    with pytest.raises(ValueError, match="4-D"):
        upsample_bilinear2d(torch.rand(2, 3, 4), scale_factor=2)
    with pytest.raises(RuntimeError, match="float"):
        upsample_bilinear2d(torch.zeros(1, 1, 4, 4, dtype=torch.uint8), scale_factor=2)


def test_cache_is_reused_and_clearable():
    rt.clear_cache()
    x = torch.rand(1, 1, 6, 6)
    a = upsample_bilinear2d(x, scale_factor=2)
    b = upsample_bilinear2d(x, scale_factor=2)
    assert torch.equal(a, b)
    rt.clear_cache()
    assert torch.equal(upsample_bilinear2d(x, scale_factor=2), a)
