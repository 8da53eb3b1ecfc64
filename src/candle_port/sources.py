"""Reading Python source the way Python does, and writing it back exactly as it was stored.

A file keeps its encoding (PEP 263 cookie or UTF-8), its BOM and its newline style, so a rewrite
touches only the bytes it means to change.
"""

from __future__ import annotations

import codecs
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path


class SourceError(Exception):
    """A file that cannot be read as Python source; the message is the one-line reason."""


@dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str = "utf-8"
    bom: bool = False

    def encode(self, text: str | None = None) -> bytes:
        data = (self.text if text is None else text).encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def decode_source(data: bytes) -> SourceText:
    """Decode bytes as Python does (BOM, coding cookie, else UTF-8), or raise SourceError."""
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" not in str(exc):
            raise SourceError(f"cannot detect encoding: {exc}") from None
        encoding = "utf-8"  # no cookie and undecodable first lines: report the bad byte below
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[len(codecs.BOM_UTF8) :]
        encoding = "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"not valid {encoding}: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding cookie") from None
    return SourceText(text, "utf-8" if encoding == "utf-8-sig" else encoding, bom)


def load_source(path: Path | str) -> tuple[bytes, SourceText]:
    """The raw bytes of a file and its decoded text, or SourceError with a one-line reason."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    return data, decode_source(data)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step, keeping its permissions; never half-written."""
    path = Path(os.path.realpath(path))
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
