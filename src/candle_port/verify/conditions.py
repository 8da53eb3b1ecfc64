"""The conditions of the table's ``conditional`` ops, evaluated from one node's arguments.

Each function takes the node's arguments bound by name (tensors replaced by ``TensorInfo``) and
its first output, and says whether candle's backward works for exactly this call, and why not.
The rules are those of ../shared/candle-ops.md, sections 2.1, 2.3, 3.2 and 3.3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class TensorInfo:
    shape: tuple[int, ...]
    dtype: str = ""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    reason: str = ""
    warning: str = ""
    wrong: bool = False  # candle's backward runs but its gradient is silently wrong (warning says how)


def _shape(value: Any) -> tuple[int, ...] | None:
    return value.shape if isinstance(value, TensorInfo) else None


def _tuple(value: Any, n: int, default: int) -> tuple[int, ...]:
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0):
        return (default,) * n
    if isinstance(value, (list, tuple)):
        values = tuple(int(v) for v in value)
        return values * n if len(values) == 1 else values
    return (int(value),) * n


def _uniform(values: Sequence[int]) -> bool:
    return len(set(values)) <= 1


def convolution(args: dict[str, Any], out: TensorInfo | None, transposed: bool | None = None) -> Outcome:
    """conv1d/conv2d (+ transposed) as candle has them: 3-D conv has no op, conv_transpose1d no
    backward, grouped conv_transpose2d no op; conv2d with stride > 1 needs equal H/W residuals."""
    weight, inp = _shape(args.get("weight")), _shape(args.get("input"))
    if weight is None or inp is None:
        return Outcome(False, "cannot read the weight/input shapes")
    spatial = len(weight) - 2
    if transposed is None:
        transposed = bool(args.get("transposed", False))
    groups = int(args.get("groups", 1) or 1)
    stride = _tuple(args.get("stride"), spatial, 1)
    dilation = _tuple(args.get("dilation"), spatial, 1)
    padding_arg = args.get("padding")
    if isinstance(padding_arg, str):
        # "same" pads dilation * (kernel - 1) in all: none for a 1-wide kernel
        unpadded = padding_arg == "valid" or all(d * (k - 1) == 0 for d, k in zip(dilation, weight[2:]))
        padding = (0,) * spatial if unpadded else None
    else:
        padding = _tuple(padding_arg, spatial, 0)
    if spatial >= 3:
        return Outcome(False, f"{spatial}-D convolution: candle has no such op")
    if transposed:
        if spatial == 1:
            return Outcome(False, "conv_transpose1d: candle has the op but no backward")
        if groups > 1:
            return Outcome(False, f"conv_transpose2d with groups={groups}: candle's has no groups argument")
        out_pad = _tuple(args.get("output_padding"), spatial, 0)
        if any(op >= s for op, s in zip(out_pad, stride)):
            return Outcome(False, f"output_padding {out_pad} >= stride {stride}: candle's backward ignores "
                           "output_padding and fails with a shape mismatch")
        if not (_uniform(stride) and _uniform(dilation) and (padding is None or _uniform(padding))):
            return Outcome(False, "non-uniform stride/dilation/padding: candle's conv_transpose2d takes one of each")
        return Outcome(True)
    if spatial == 1:
        per_group = weight[0] // max(groups, 1)
        if len(inp) == 3 and inp[0] > 1 and per_group > 1:
            # candle's backward convolves with the transposed output gradient as the kernel, which
            # its conv1d reads wrong once that is not contiguous; and it computes the input gradient
            # with conv_transpose1d, whose CPU col2im path (no padding, dilation 1, no output
            # padding) is wrong for batch > 1
            which = _CONV1D_WEIGHT
            if padding is not None and padding[0] == 0 and dilation[0] == 1 and (
                    inp[-1] - (weight[-1] - 1) - 1) % stride[0] == 0:
                which = _CONV1D_BOTH
            return Outcome(True, warning=f"conv1d with batch {inp[0]} and {per_group} {_CONV1D_MARK}: "
                           f"candle 0.11.0's {which} wrong (measured against finite differences: "
                           "crates/candle-port-run/src/measure.rs)", wrong=True)
        return Outcome(True)
    if not (_uniform(stride) and _uniform(dilation)):
        return Outcome(False, f"non-uniform stride {stride} / dilation {dilation}: candle's conv2d takes one of each")
    if stride[0] > 1 and padding is not None:
        residues = []
        for size, pad, dil, k in zip(inp[-2:], padding, dilation, weight[-2:]):
            residues.append((size + 2 * pad - dil * (k - 1) - 1) % stride[0])
        if residues[0] != residues[1]:
            return Outcome(
                False,
                f"stride {stride[0]} with H/W residuals {residues[0]} != {residues[1]} "
                f"(input {inp[-2]}x{inp[-1]}): candle's conv2d backward fails with a shape mismatch",
            )
    return Outcome(True)


# The wording of conv1d's wrong-gradient warning above, which conv1d_wrong_on_path re-scopes.
_CONV1D_MARK = "output channels per group"
_CONV1D_BOTH, _CONV1D_WEIGHT, _CONV1D_INPUT = "weight and input gradients are", "weight gradient is", "input gradient is"


def conv1d_wrong_on_path(warning: str, weight_on: bool, input_on: bool) -> str | None:
    """A conv1d's wrong-gradient warning (from `convolution`) kept to the operands on a gradient
    path: the weight's fault, and the input's where unpadded ("" when neither is on a path: a frozen
    weight on the raw input). None for any other warning."""
    if _CONV1D_MARK not in warning:
        return None
    both = _CONV1D_BOTH in warning
    if weight_on and (input_on or not both):
        return warning
    if weight_on:
        return warning.replace(_CONV1D_BOTH, _CONV1D_WEIGHT)
    if both and input_on:
        return warning.replace(_CONV1D_BOTH, _CONV1D_INPUT)
    return ""


def conv1d(args, out):
    return convolution(args, out, transposed=False)


def conv2d(args, out):
    return convolution(args, out, transposed=False)


def conv_transpose2d(args, out):
    return convolution(args, out, transposed=True)


def _pool_common(args: dict[str, Any], with_dilation: bool) -> tuple[Outcome | None, tuple[int, ...], tuple[int, ...]]:
    inp = _shape(args.get("input"))
    kernel_arg = args.get("kernel_size")
    n = 1 if "1d" in str(args.get("__op__", "")) else 2
    kernel = _tuple(kernel_arg, n, 1)
    stride = _tuple(args.get("stride"), n, 0)
    stride = kernel if all(s == 0 for s in stride) else stride
    padding = _tuple(args.get("padding"), n, 0)
    problems = []
    if stride != kernel:
        problems.append(f"kernel {kernel} != stride {stride}")
    if any(padding):
        problems.append(f"padding {padding}")
    if with_dilation and any(d != 1 for d in _tuple(args.get("dilation"), n, 1)):
        problems.append("dilation")
    if args.get("ceil_mode"):
        problems.append("ceil_mode")
    if args.get("divisor_override") is not None:
        problems.append("divisor_override")
    if problems:
        return Outcome(False, "candle's pool backward needs kernel == stride and no padding/dilation/ceil_mode: "
                       + ", ".join(problems)), kernel, inp or ()
    return None, kernel, inp or ()


def _uneven(kernel: tuple[int, ...], inp: tuple[int, ...], what: str) -> str:
    spatial = inp[-len(kernel):] if inp else ()
    if spatial and any(s % k for s, k in zip(spatial, kernel)):
        return f"input {spatial} not divisible by kernel {kernel}: {what} (2.3, measured)"
    return ""


def max_pool(args, out):
    failed, kernel, inp = _pool_common(args, with_dilation=True)
    if failed:
        return failed
    # tests/candle_native.rs: the backward's max mask compares each input with the wrong window's
    # output, so most maxima get no gradient at all.
    uneven = _uneven(kernel, inp, "candle's gradient misses most maxima (they get none)")
    window = 1
    for k in kernel:
        window *= k
    return Outcome(True, warning=uneven, wrong=window > 1)


def avg_pool(args, out):
    failed, kernel, inp = _pool_common(args, with_dilation=False)
    if failed:
        return failed
    uneven = _uneven(kernel, inp, "candle's gradient lands on the wrong rows and on the remainder")
    return Outcome(True, warning=uneven, wrong=bool(uneven))


def scatter_add(args, out):
    """candle's ScatterAdd backward builds its mask from the destination's shape and scatters
    with the index: an index smaller than the destination fails (tests/candle_native.rs)."""
    inp, index = _shape(args.get("input")), _shape(args.get("index"))
    if inp is None or index is None:
        return Outcome(False, "cannot read the input/index shapes")
    if index != inp:
        return Outcome(False, f"scatter_add with an index shaped {index}, not like the destination {inp}: candle's "
                       "backward fails ('shape mismatch in scatter (indexes, src)')")
    return Outcome(True)


def _in_out_spatial(args, out) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    inp, res = _shape(args.get("input")), (out.shape if out else None)
    if inp is None or res is None or len(inp) != len(res):
        return None
    n = 1 if "1d" in str(args.get("__op__", "")) else 2
    return inp[-n:], res[-n:]


def adaptive_avg_pool(args, out):
    sizes = _in_out_spatial(args, out)
    if sizes is None:
        return Outcome(False, "cannot read the input/output shapes")
    i, o = sizes
    if all(x == 1 for x in o):
        return Outcome(True)
    if all(a % b == 0 for a, b in zip(i, o)):
        ks = tuple(a // b for a, b in zip(i, o))
        if _uniform(ks):
            return Outcome(True)
    return Outcome(False, f"adaptive_avg_pool {i} -> {o}: neither global nor an even avg_pool2d")


def adaptive_max_pool(args, out):
    sizes = _in_out_spatial(args, out)
    if sizes is None:
        return Outcome(False, "cannot read the input/output shapes")
    i, o = sizes
    if all(x == 1 for x in o):
        return Outcome(True)
    return Outcome(False, f"adaptive_max_pool {i} -> {o}: candle has only the global (1x1) form")


def nearest_upscale(args, out):
    sizes = _in_out_spatial(args, out)
    if sizes is None:
        return Outcome(False, "cannot read the input/output shapes")
    i, o = sizes
    if any(b < a for a, b in zip(i, o)):
        return Outcome(False, f"nearest {i} -> {o} downscales: candle bails")
    if any(b % a for a, b in zip(i, o)):
        return Outcome(False, f"nearest {i} -> {o}: non-integer upscaling factor, candle bails")
    factors = {b // a for a, b in zip(i, o)}
    if len(factors) > 1:
        return Outcome(False, f"nearest {i} -> {o}: non-uniform upscaling factors, candle bails")
    return Outcome(True)


CONDITIONS: dict[str, Callable[[dict[str, Any], TensorInfo | None], Outcome]] = {
    "convolution": convolution,
    "conv1d": conv1d,
    "conv2d": conv2d,
    "conv_transpose2d": conv_transpose2d,
    "max_pool": max_pool,
    "avg_pool": avg_pool,
    "adaptive_avg_pool": adaptive_avg_pool,
    "adaptive_max_pool": adaptive_max_pool,
    "nearest_upscale": nearest_upscale,
    "scatter_add": scatter_add,
}
