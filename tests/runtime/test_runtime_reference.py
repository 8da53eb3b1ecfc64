"""A slow, obviously correct reference (loops over output pixels) cross-checks the op and torch."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from candle_port.runtime import upsample_bilinear2d

REF_ATOL = 1e-12  # float64; the reference rounds differently from ATen only at ~1e-16 level


def _source(j: int, n_in: int, n_out: int, align_corners: bool, scale_factor):
    """torch's area_pixel_compute_source_index + guard, in Python floats."""
    if n_in == n_out:
        return j, j, 0.0
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = scale * j
    else:
        scale = 1.0 / scale_factor if scale_factor else n_in / n_out
        src = max(scale * (j + 0.5) - 0.5, 0.0)
    i0 = min(math.floor(src), n_in - 1)
    i1 = i0 + 1 if i0 < n_in - 1 else i0
    lam = min(max(src - i0, 0.0), 1.0)
    return i0, i1, lam


def reference_bilinear(x, out_h, out_w, align_corners, scales=(None, None)):
    n, c, h, w = x.shape
    y = torch.empty(n, c, out_h, out_w, dtype=torch.float64)
    xs = x.double().tolist()
    for b in range(n):
        for ch in range(c):
            for oy in range(out_h):
                y0, y1, ly = _source(oy, h, out_h, align_corners, scales[0])
                for ox in range(out_w):
                    x0, x1, lx = _source(ox, w, out_w, align_corners, scales[1])
                    img = xs[b][ch]
                    top = (1 - lx) * img[y0][x0] + lx * img[y0][x1]
                    bottom = (1 - lx) * img[y1][x0] + lx * img[y1][x1]
                    y[b, ch, oy, ox] = (1 - ly) * top + ly * bottom
    return y


CASES = [
    pytest.param((1, 2, 3, 4), dict(size=(6, 8)), id="up-size"),
    pytest.param((2, 1, 5, 7), dict(size=(3, 2)), id="down-size"),
    pytest.param((1, 1, 1, 1), dict(size=(3, 4)), id="from-1x1"),
    pytest.param((1, 1, 4, 5), dict(size=(1, 1)), id="to-1x1"),
    pytest.param((1, 2, 4, 6), dict(size=(4, 9)), id="one-axis-identity"),
    pytest.param((1, 1, 4, 5), dict(scale_factor=1.5), id="x1.5-scale"),
    pytest.param((1, 1, 5, 4), dict(scale_factor=(0.6, 2.3)), id="mixed-scale"),
    pytest.param((1, 1, 5, 4), dict(scale_factor=(0.6, 2.3), recompute_scale_factor=True), id="recompute"),
    pytest.param((1, 1, 5, 5), dict(scale_factor=1.1), id="same-size-by-scale"),
]


@pytest.mark.parametrize(("shape", "kw"), CASES)
@pytest.mark.parametrize("align", [False, True], ids=["ac-false", "ac-true"])
def test_reference_matches_op_and_torch(shape, kw, align):
    x = torch.rand(shape, dtype=torch.float64) * 2 - 1
    ref_torch = F.interpolate(x, mode="bilinear", align_corners=align, **kw)
    out_h, out_w = ref_torch.shape[-2:]
    scales = (None, None)
    if "scale_factor" in kw and not kw.get("recompute_scale_factor") and not align:
        sf = kw["scale_factor"]
        scales = tuple(sf) if isinstance(sf, tuple) else (sf, sf)
    slow = reference_bilinear(x, out_h, out_w, align, scales)
    ours = upsample_bilinear2d(x, align_corners=align, **kw)
    assert (slow - ref_torch).abs().max().item() <= REF_ATOL
    assert (slow - ours).abs().max().item() <= REF_ATOL
