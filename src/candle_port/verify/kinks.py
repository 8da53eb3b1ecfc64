"""Kinks: activation inputs that sit within rounding of a point where the derivative jumps.

A ReLU's gradient is 1 above 0 and 0 below it. When one of its inputs is within float32 rounding
of 0, the original and a correct rewrite (the same function, summed in another order) can land
on either side, and every gradient upstream of that element then differs by a whole term, far
beyond rounding, while the outputs agree. MONAI's HighResNet under `--strategy convert` hit one
(an input of -6.3e-07 in the original, +6.1e-07 rewritten, on a scale of 6.4). verify records,
for every activation module, the inputs within KINK_BAND of a kink (`record`), and a failing
comparison whose runs put one of them on different sides (`flips`) is run again on another seed.
Functional calls (`F.relu`) are not seen: only modules.
"""

from __future__ import annotations

from typing import Any

# Within this fraction of the input's largest magnitude from a kink, rounding may cross it.
KINK_BAND = 1e-5
_MAX_PER_CALL = 4096  # positions kept per module call


def _kinks_of(module: Any) -> tuple[float, ...]:
    """The inputs at which `module`'s derivative jumps; () for a smooth or unknown module."""
    import torch.nn as nn

    if isinstance(module, (nn.ReLU, nn.LeakyReLU, nn.PReLU, nn.RReLU)):
        return (0.0,)
    if isinstance(module, nn.Hardtanh):  # also ReLU6
        return (float(module.min_val), float(module.max_val))
    if isinstance(module, nn.Threshold):
        return (float(module.threshold),)
    return ()


def record(model: Any) -> tuple[dict[str, Any], Any]:
    """Hooks on `model`'s activation modules: (the record they fill while the model runs, a
    function that removes them). Keys `name#call@kink`; values (flat indices, input values)."""
    import torch

    found: dict[str, Any] = {}
    calls: dict[str, int] = {}
    handles = []

    def hook_for(name: str, kinks: tuple[float, ...]):
        def hook(module, inputs):
            x = inputs[0] if inputs else None
            if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() == 0:
                return
            call = calls[name] = calls.get(name, -1) + 1
            with torch.no_grad():
                flat = x.detach().reshape(-1)
                band = KINK_BAND * float(flat.abs().max())
                for kink in kinks:
                    near = ((flat - kink).abs() <= band).nonzero().reshape(-1)[:_MAX_PER_CALL]
                    if near.numel():
                        found[f"{name}#{call}@{kink:g}"] = (near.clone(), flat[near].double().clone())

        return hook

    for name, module in model.named_modules():
        kinks = _kinks_of(module)
        if kinks:
            handles.append(module.register_forward_pre_hook(hook_for(name, kinks)))

    def remove() -> None:
        for handle in handles:
            handle.remove()

    return found, remove


def flips(original: dict[str, Any] | None, rewritten: dict[str, Any] | None, limit: int = 3) -> list[dict[str, Any]]:
    """Positions near a kink that the two runs put on different sides (or one exactly on it):
    up to `limit` of them, each {module, original, rewritten}, and how many in all under "count"
    of the first."""
    out: list[dict[str, Any]] = []
    count = 0
    for key, (indices, values) in (original or {}).items():
        theirs = (rewritten or {}).get(key)
        if theirs is None:
            continue
        kink = float(key.rsplit("@", 1)[1])
        mine = dict(zip(indices.tolist(), values.tolist()))
        for index, value in zip(theirs[0].tolist(), theirs[1].tolist()):
            if index in mine and _side(mine[index], kink) != _side(value, kink):
                count += 1
                if len(out) < limit:
                    out.append({"module": key.split("#", 1)[0], "kink": kink, "original": mine[index], "rewritten": value})
    if out:
        out[0]["count"] = count
    return out


def _side(value: float, kink: float) -> int:
    return (value > kink) - (value < kink)


def describe(found: list[dict[str, Any]]) -> str:
    """One line for a report: where the runs crossed a kink, with the values."""
    first = found[0]
    more = f" (and {first['count'] - 1} more)" if first.get("count", 1) > 1 else ""
    return (f"an input of {first['module']} lies within float32 rounding of its kink at {first['kink']:g}: "
            f"{first['original']:.3g} in the original, {first['rewritten']:.3g} rewritten{more}")
