"""safetensors files read and written with torch alone (the format is a JSON header and raw
little-endian bytes), so the parity commands need no package beyond torch."""

from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path

import torch

_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL",
}
_BY_NAME = {v: k for k, v in _DTYPES.items()}


class TensorFileError(ValueError):
    """A file that is not a readable safetensors file."""


def write(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Write `tensors` to `path` atomically (a temporary file renamed over it)."""
    header: dict[str, dict] = {}
    blobs: list[bytes] = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype not in _DTYPES:
            t = t.to(torch.float64) if t.is_floating_point() else t.to(torch.int64)
        data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": _DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def read(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor of `path`, copied out of a memory map."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            (size,) = struct.unpack("<Q", view[:8])
            header = json.loads(view[8:8 + size])
            base = 8 + size
            out = {}
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                start, end = info["data_offsets"]
                dtype = _BY_NAME[info["dtype"]]
                raw = torch.frombuffer(bytearray(view[base + start:base + end]), dtype=torch.uint8)
                out[name] = raw.view(dtype).reshape(info["shape"]) if end > start else torch.empty(info["shape"], dtype=dtype)
            return out
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, struct.error) as exc:
        raise TensorFileError(f"{path}: not a safetensors file ({type(exc).__name__}: {exc})") from None
