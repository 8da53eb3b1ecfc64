"""CP106: max/avg pooling that candle's backward rejects (kernel != stride, padding, dilation, ceil_mode)."""

from __future__ import annotations

import ast

from candle_port.analysis.sites import Site
from candle_port.analysis.values import Value, evaluate
from candle_port.pipeline.findings import Severity
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


def literal(value: Value) -> tuple[bool, object]:
    """(True, v) when literals prove the argument is the single value v."""
    if value.known and len(value.candidates) == 1:
        return True, value.candidates[0]
    return False, None


def int_tuple(value, dims: int) -> tuple[int, ...] | None:
    """An int or a tuple/list of `dims` ints as a `dims`-tuple; None for anything else."""
    values = list(value) if isinstance(value, (tuple, list)) else [value] * dims
    if len(values) != dims or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        return None
    return tuple(values)


def dims_of(site: Site) -> int:
    return 1 if "1d" in site.api.name.lower() else 2


def is_max_pool(site: Site) -> bool:
    return site.api.family == "pool" and site.api.name.lower().startswith("max")


def shown(site: Site, name: str) -> str:
    """`name=<as written>`, with a parameter's literal default when the value is that parameter."""
    value = site.value(name)
    text = f"{name}={value.source.strip() if not value.omitted else repr(value.candidates[0])}"
    has_default, default = parameter_default(site, name) if not value.known else (False, None)
    return f"{text} (default {default!r})" if has_default else text


def parameter_default(site: Site, name: str) -> tuple[bool, object]:
    """(True, d) when the argument is a bare parameter of the enclosing function whose default is the
    literal d (`def __init__(self, k=5): nn.MaxPool2d(k, 1)`): the value unless a caller passes another."""
    node = site.value(name).node
    if not isinstance(node, ast.Name):
        return False, None
    found = site.resolver.parameter(node.id, site.scope)
    if found is None or found[0].default is None:
        return False, None
    return literal(evaluate(found[0].default))


def pool_problems(site: Site) -> tuple[bool, list[str]]:
    """(kernel != stride proven, the settings candle's pooling lacks), from literals only.

    A literal stride of 1 cannot equal the kernel unless the pooling is an identity (kernel 1), so it
    differs whatever the kernel is (YOLO's SPPF: `nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)`).
    """
    dims = dims_of(site)
    known_stride, stride = literal(site.value("stride"))
    known_kernel, kernel = literal(site.value("kernel_size"))
    stride_differs = False
    if known_stride and stride not in (None, [], ()):
        strides = int_tuple(stride, dims)
        if known_kernel:
            kernels = int_tuple(kernel, dims)
            stride_differs = strides is not None and kernels is not None and strides != kernels
        else:
            has_default, default = parameter_default(site, "kernel_size")
            kernels = int_tuple(default, dims) if has_default else None
            if kernels is not None:
                stride_differs = strides is not None and strides != kernels
            else:
                stride_differs = strides is not None and all(s == 1 for s in strides)
    missing: list[str] = []
    for name, neutral in (("padding", 0), ("dilation", 1)):
        if name not in site.api.params:
            continue
        known, value = literal(site.value(name))
        values = int_tuple(value, dims) if known else None
        if values is not None and any(v != neutral for v in values):
            missing.append(shown(site, name))
    known, ceil_mode = literal(site.value("ceil_mode"))
    if known and ceil_mode is True:
        missing.append("ceil_mode=True")
    return stride_differs, missing


class PoolStride(Rule):
    """Max/avg pooling whose candle backward bails, or that candle cannot express.

    candle's MaxPool2D and AvgPool2D backward arms bail unless kernel_size == stride
    ("backward not supported for maxpool2d if ksize (3, 3) != stride (2, 2)"), and candle's pooling
    has no padding, dilation or ceil_mode (../shared/candle-ops.md, 2.1 rows AvgPool2D/MaxPool2D,
    3.2, 7.2). 1-D pooling has no candle op and lowers to the 2-D one.
    """

    code = "CP106"
    name = "pool-stride-padding"
    summary = "max/avg pooling with stride != kernel_size, padding, dilation or ceil_mode: no candle backward"
    why = (
        "candle's pooling backward bails with 'backward not supported for maxpool2d (avgpool2d) if "
        "ksize != stride', and candle's max_pool2d/avg_pool2d have no padding, dilation or ceil_mode"
    )
    source = (
        "candle-core/src/backprop.rs:343-377 (measured in candle 0.11.0: docs/candle-measured.md)"
    )
    severity_note = (
        "a warning when kernel != stride rests on a parameter's default kernel size; a literal stride of 1 "
        "is an error whatever the kernel (it cannot equal a kernel > 1)"
    )
    fix_hint = (
        "port-fix swaps in candle_port.runtime's pooling (gather / matmul, exact, full backward); or use "
        "kernel_size == stride without padding (pad the input yourself first if needed)"
    )
    VALID = (
        # a class picked by name without a keyword could be any layer; another object's getattr is not torch's
        "from torch import nn\ndef act(name):\n    return getattr(nn, name)()\n",
        "def pool(lib, mode):\n    return getattr(lib, mode)(kernel_size=3, stride=1, ceil_mode=True)\n",
        # a conditional of layer classes, called: each pool it can be, with the call's arguments
        "from torch import nn\ndef down(same):\n    pool = nn.AvgPool2d if same else nn.Identity\n    return pool(2)\n",
        "from torch import nn\nm = nn.MaxPool2d(2)\n",
        "from torch import nn\nm = nn.AvgPool2d(kernel_size=2, stride=2, padding=0)\n",
        "import torch.nn.functional as F\ny = F.avg_pool2d(x, 3, stride=s)\n",
        "import torch.nn.functional as F\ny = F.max_pool2d(x, k, 2)\n",
        "from torch import nn\nm = nn.MaxPool2d(2, 2, 0, 1, True)\n",
        "from torch import nn\ndef pool(k=2):\n    return nn.MaxPool2d(k, 2)\n",
        "def max_pool2d(x, k, s): return x\ny = max_pool2d(x, 3, 2)\n",
    )
    INVALID = (
        "from torch import nn\ndef down(same):\n    pool_fn = PoolSame if same else nn.AvgPool2d\n    return pool_fn(2, 1, ceil_mode=True)\n",
        # a torch.nn class picked by name (neuralforecast's N-HiTS): each layer taking those keywords
        "from torch import nn\ndef pool(mode, k):\n    return getattr(nn, mode)(kernel_size=k, stride=k, ceil_mode=True)\n",
        "from torch import nn\nm = getattr(nn, 'MaxPool2d')(3, 2, 1)\n",
        "from torch import nn\nm = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)\n",
        "from torch import nn\nm = nn.MaxPool2d(3, 2)\n",
        "import torch.nn.functional as F\ny = F.avg_pool2d(x, 2, 2, 1)\n",
        "import torch.nn.functional as F\ny = F.max_pool2d(x, 2, None, 0, 1, True)\n",
        "from torch.nn import AvgPool2d as P\nm = P(2, ceil_mode=True)\n",
        "import torch\ny = torch.nn.functional.max_pool1d(x, 3, 1)\n",
        "from torch import nn\nm = nn.MaxPool2d(2, dilation=2)\n",
        "from torch import nn\nclass SPPF(nn.Module):\n    def __init__(self, k=5):\n"
        "        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)\n",
        "from torch import nn\ndef pool(k):\n    return nn.MaxPool2d(k, 1)\n",
        "from torch import nn\ndef pool(k=3):\n    return nn.MaxPool2d(k, 2)\n",
    )

    def check(self, site: Site):
        if site.api.family != "pool":
            return
        stride_differs, missing = pool_problems(site)
        if not stride_differs and not missing:
            return
        op = "maxpool2d" if is_max_pool(site) else "avgpool2d"
        arguments = [shown(site, "kernel_size"), shown(site, "stride")] if stride_differs else []
        reasons = []
        if stride_differs:
            reasons.append(f"candle's backward bails ('backward not supported for {op} if ksize != stride')")
        if missing:
            settings = ", ".join(m.split("=")[0] for m in missing)
            reasons.append(f"candle's {op.replace('pool', '_pool')} has no {settings}")
        yield Hit(
            f"{describe_call(site)}({', '.join(arguments + missing)}): {'; '.join(reasons)}",
            applicable(site),
            severity=Severity.WARNING if stride_differs and not missing and _kernel_from_default(site) else None,
            backward_only=not missing,  # padding, dilation, ceil_mode: no candle forward either
        )


def _kernel_from_default(site: Site) -> bool:
    """Whether kernel != stride rests on a parameter's default (a caller may pass the stride)."""
    known_stride, stride = literal(site.value("stride"))
    strides = int_tuple(stride, dims_of(site)) if known_stride else None
    return not literal(site.value("kernel_size"))[0] and not (strides and all(s == 1 for s in strides))
