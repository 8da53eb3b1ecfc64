"""Reading Python source the way Python does, and writing it back exactly as it was stored.

A file keeps its encoding (PEP 263 cookie or UTF-8), its BOM and its newline style, so a rewrite
touches only the bytes it means to change.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from pathlib import Path

from candle_port.pipeline.records import Record


class SourceError(Exception):
    """A file that cannot be read as Python source; the message is the one-line reason."""


class SourceText(Record):
    """A file's text, and how it was stored (its encoding and whether it began with a BOM)."""

    __slots__ = ("text", "encoding", "bom")

    def __init__(self, text: str, encoding: str = "utf-8", bom: bool = False) -> None:
        self.text = text
        self.encoding = encoding
        self.bom = bom

    def encode(self, text: str | None = None) -> bytes:
        data = (self.text if text is None else text).encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


def decode_source(data: bytes) -> SourceText:
    """Decode bytes as Python does (BOM, coding cookie, else UTF-8), or raise SourceError."""
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    encoding = _declared_encoding(data)
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


def _declared_encoding(data: bytes) -> str:
    """The encoding Python reads `data` in: a PEP 263 cookie's, else UTF-8 (a BOM is handled by
    the caller). Only the first two lines count, and a line ends at \\n, \\r\\n or a lone \\r, as
    in CPython's tokenizer (a cookie on line 3 of a CR-only file is a comment). tokenize only runs
    when those lines mention "coding" (tokenize costs 1 ms of every start to import, and almost no
    file has a cookie)."""
    first_two = _FIRST_TWO_LINES.match(data)
    lines = [line for line in first_two.groups() if line]
    if not any(b"coding" in line for line in lines):
        return "utf-8"
    import tokenize

    # tokenize reads lines ending in "\\n" only: give it the two lines, each ended as it expects.
    given = iter([line.rstrip(b"\r\n") + b"\n" for line in lines])
    try:
        encoding, _ = tokenize.detect_encoding(lambda: next(given, b""))
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" not in str(exc):
            raise SourceError(f"cannot detect encoding: {exc}") from None
        return "utf-8"  # no cookie and undecodable first lines: report the bad byte below
    return encoding


_FIRST_TWO_LINES = re.compile(rb"([^\r\n]*(?:\r\n|\r|\n)?)([^\r\n]*(?:\r\n|\r|\n)?)")


def read_regular_file(path: Path | str, max_bytes: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file and its stat, read once; SourceError for anything else.

    Opened without blocking and checked with fstat, so a FIFO or a device named `x.py` (or a
    symlink to one) is reported instead of hanging the run or filling memory. `max_bytes`: a
    larger file is a SourceError before any of it is read (a sparse file of gigabytes).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as exc:
        kind = _kind_of_unopenable(path)  # a socket cannot be opened: "No such device or address"
        raise SourceError(f"not a regular file ({kind}); skipped" if kind else exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError("is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(f"not a regular file ({_kind(info.st_mode)}); skipped")
        if max_bytes is not None and info.st_size > max_bytes:
            raise SourceError(
                f"too large to analyse ({info.st_size / 1e6:.1f} MB on disk; files over {max_bytes / 1e6:.0f} MB are not read)"
            )
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), info
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _kind_of_unopenable(path) -> str | None:
    """What a path that could not be opened is, when it is no regular file (a socket, a device)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else _kind(mode)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


# Past this a file is not read at all: the parsers take at most 4 MB of text (checker.MAX_PARSE_CHARS),
# four bytes a character at worst; a sparse file of gigabytes would otherwise be read into memory.
MAX_READ_BYTES = 16_000_000

# A file larger than this is read only in a worker, under its memory limit: the main process
# screens smaller ones (engine._first_pass, rewriters/files.py).
MAIN_PROCESS_MAX_BYTES = 4 << 20


def load_source_in_main_process(path: str) -> tuple[bytes, SourceText] | None:
    """load_source's bytes and text when the file is small enough to read in the main process;
    None for a larger one or one that cannot be stat'ed (a worker reads it and reports why).
    SourceError as load_source."""
    try:
        if os.path.getsize(path) > MAIN_PROCESS_MAX_BYTES:
            return None
    except OSError:
        return None
    return load_source(path)


def load_source(path: Path | str) -> tuple[bytes, SourceText]:
    """The raw bytes of a file and its decoded text, or SourceError with a one-line reason."""
    data, _ = read_regular_file(path, MAX_READ_BYTES)
    return data, decode_source(data)


def write_atomically(path: Path, data: bytes) -> None:
    """Kept for callers of the old name: port-fix's one write path is rewriters.writeback."""
    from candle_port.rewriters.writeback import create_or_replace

    create_or_replace(str(path), data)
