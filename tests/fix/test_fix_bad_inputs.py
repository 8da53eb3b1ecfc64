"""One bad input never stops or misleads a run (issue 32, third round): a one-line error naming
the file (and the key), a distinct exit code, every other file still done.

Letter B in docs/reliability.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command

SITE = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
FIXED = (  # F's only use was the site: its import goes too (issue 36)
    "import candle_port.runtime as candle_runtime\n"
    "y = candle_runtime.interpolate(x, scale_factor=2, mode='bilinear')\n"
)
APP = single_command_app(fix_command, "port-fix")


def run(*args, input=None):
    return CliRunner().invoke(APP, ["--jobs", "1", *map(str, args)], input=input)


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(SITE)
    return tmp_path


# --- configuration -----------------------------------------------------------------------------

def test_config_on_dev_zero_is_a_one_line_error(tree: Path):
    result = run("--config", "/dev/zero", tree)
    assert result.exit_code == 2
    assert error_lines(result) == ["error: /dev/zero: not a regular file; a config file must be a TOML file"]
    assert (tree / "model.py").read_text() == SITE


def test_config_on_a_fifo_does_not_hang(tree: Path):
    fifo = tree / "config.toml"
    os.mkfifo(fifo)
    writer = threading.Timer(20, lambda: open(fifo, "w").close())  # frees a hung read, so a failure is reported, not a hung suite
    writer.start()
    try:
        result = run("--config", fifo, tree)
    finally:
        writer.cancel()
    assert result.exit_code == 2
    assert error_lines(result) == [f"error: {fifo}: not a regular file; a config file must be a TOML file"]


def test_a_huge_config_file_is_refused(tree: Path):
    big = tree / "big.toml"
    big.write_text("# padding\n" * 200_000)
    result = run("--config", big, tree)
    assert result.exit_code == 2 and error_lines(result) == [f"error: {big}: larger than 1 MB; not a config file"]


WRONG_TYPES = {
    "per-file-ignores-number": ('[tool.candle-port]\nper-file-ignores = {"a.py" = 3}\n', "per-file-ignores 'a.py' must be a list of rule codes, not an integer"),
    "per-file-ignores-numbers": ('[tool.candle-port]\nper-file-ignores = {"a.py" = [1, 2]}\n', "per-file-ignores 'a.py' must be a list of rule codes, not an array holding an integer"),
    "per-file-ignores-string": ('[tool.candle-port]\nper-file-ignores = "x"\n', "per-file-ignores must be a table of glob = [codes], not a string"),
    "candle-port-integer": ("[tool]\ncandle-port = 1\n", "[tool] candle-port must be a table ([tool.candle-port]), not an integer"),
    "tool-string": ('tool = "x"\n# candle-port\n', "tool must be a table ([tool]), not a string"),
    "exclude-nested": ("[tool.candle-port]\nexclude = " + "[" * 300 + "]" * 300 + "\n", "exclude must be a list of strings, not an array holding an array"),
    "select-empty": ("[tool.candle-port]\nselect = []\n", "select is empty, so no rule would run; remove it to run every rule"),
    "cache-dir-number": ("[tool.candle-port]\ncache-dir = 3\n", "cache-dir must be a string (a directory), not an integer"),
}


@pytest.mark.parametrize(("toml", "message"), WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
@pytest.mark.parametrize("how", ["found", "--config"])
def test_a_config_value_of_the_wrong_type_names_the_file_and_the_key(tree: Path, toml: str, message: str, how: str):
    config = tree / "pyproject.toml"
    config.write_text(toml)
    result = run(*(["--config", config] if how == "--config" else []), tree)
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [f"error: {config}: {message}"]
    assert "internal error" not in result.output
    assert (tree / "model.py").read_text() == SITE


@pytest.mark.parametrize("select", ["", ",", " , ,"])
def test_select_naming_no_code_is_a_usage_error(tree: Path, select: str):
    result = run("--select", select, tree)
    assert result.exit_code == 2
    assert error_lines(result) == [f"error: --select {select!r} names no rule code; omit it to run every rule"]
    assert (tree / "model.py").read_text() == SITE


# --- --vendor with stdin -----------------------------------------------------------------------

def test_vendor_with_stdin_writes_the_module_the_output_imports(tmp_path: Path):
    vendor = tmp_path / "third_party"
    result = run("--vendor", vendor, "-", input=SITE)
    assert result.exit_code == 0, result.output
    assert "import candle_port_runtime as candle_runtime" in result.stdout
    module = vendor / "candle_port_runtime.py"
    assert module.is_file() and module.read_text().startswith('"""candle-port runtime, vendored by `port-fix --vendor`')
    assert f"wrote the vendored runtime to {module}" in result.stderr


def test_vendor_with_stdin_and_nothing_to_fix_writes_nothing(tmp_path: Path):
    vendor = tmp_path / "third_party"
    result = run("--vendor", vendor, "-", input="x = 1\n")
    assert result.exit_code == 0 and result.stdout == "x = 1\n" and not vendor.exists()


def test_vendor_with_stdin_that_cannot_be_written_emits_nothing(tmp_path: Path):
    vendor = tmp_path / "third_party"
    vendor.mkdir()
    (vendor / "candle_port_runtime.py").write_text("MINE = 1\n")
    result = run("--vendor", vendor, "-", input=SITE)
    assert result.exit_code == 2 and result.stdout == ""
    assert "was not written by port-fix" in result.stderr


# --- a file too large to read ------------------------------------------------------------------

def test_a_sparse_file_of_gigabytes_is_one_line_and_the_others_are_fixed(tree: Path):
    huge = tree / "huge.py"
    with open(huge, "wb") as handle:
        handle.truncate(2_200_000_000)  # sparse: no disk used, 2.2 GB to read
    (tree / "other.py").write_text(SITE)
    result = run(tree)
    assert result.exit_code == 3, result.output
    assert error_lines(result) == [f"error: {huge}: too large to analyse (2200.0 MB on disk; files over 16 MB are not read)"]
    assert (tree / "model.py").read_text() == FIXED and (tree / "other.py").read_text() == FIXED
    assert "2 sites fixed in 2 files" in result.stderr


# --- the summary cannot be written ---------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _port_fix_with_stdout(tree: Path, stdout) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "candle_port", "fix", "-j", "1", "--output-format", "json", str(tree)],
        stdout=stdout, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
    )


def test_a_summary_that_cannot_be_written_still_says_what_changed(tree: Path):
    with open("/dev/full", "w") as full:  # stdout on a full disk
        out = _port_fix_with_stdout(tree, full)
    assert out.returncode == 3, out.stderr
    assert f"{tree / 'model.py'}: rewritten" in out.stderr.splitlines()
    assert "port-fix: could not write the summary (No space left on device); 1 file(s) rewritten (listed above)" in out.stderr
    assert (tree / "model.py").read_text() == FIXED


def test_a_closed_stdout_still_says_what_changed(tree: Path):
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody reads: writing is EPIPE
    try:
        out = _port_fix_with_stdout(tree, write_end)
    finally:
        os.close(write_end)
    assert out.returncode == 3, out.stderr
    assert f"{tree / 'model.py'}: rewritten" in out.stderr.splitlines()
    assert (tree / "model.py").read_text() == FIXED


# --- CR-only newlines (old Mac files): Python reads a lone \r as a line end -----------------------

CR_CASES = {
    # a cookie past line 2 is a comment to Python: the file is UTF-8 (ascii would reject the é)
    "cookie-on-line-3": (
        b"# a comment\rimport torch.nn.functional as F\r# -*- coding: ascii -*-\r"
        b"y = F.interpolate(x, scale_factor=2, mode='bilinear')\rs = '\xc3\xa9'\r"
    ),
    # a cookie on line 2 counts: latin-1 (as UTF-8 the \xe9 would be invalid)
    "cookie-on-line-2": (
        b"#!/usr/bin/env python\r# -*- coding: latin-1 -*-\rimport torch.nn.functional as F\r"
        b"y = F.interpolate(x, scale_factor=2, mode='bilinear')\rs = '\xe9'\r"
    ),
    # a comment first: it ends at the \r, not at the end of the file (every site was hidden)
    "comment-first": b"# model\rimport torch.nn.functional as F\ry = F.interpolate(x, scale_factor=2, mode='bilinear')\r",
}


@pytest.mark.parametrize("data", CR_CASES.values(), ids=CR_CASES.keys())
def test_cr_only_files_are_read_as_python_reads_them(tmp_path: Path, data: bytes):
    compile(data, "m.py", "exec")  # Python takes it
    path = tmp_path / "m.py"
    path.write_bytes(data)
    result = run(path)
    assert result.exit_code == 0, result.output
    after = path.read_bytes()
    assert after == data.replace(b"F.interpolate(", b"candle_runtime.interpolate(").replace(
        b"import torch.nn.functional as F\r", b"import candle_port.runtime as candle_runtime\r"
    )
    compile(after, "m.py", "exec")


def test_port_check_sees_a_site_after_a_comment_in_a_cr_only_file():
    from candle_port.api import check_source

    text = CR_CASES["comment-first"].decode()
    assert [f.code for f in check_source(text, "m.py")] == ["CP101"]


# --- what is not a plain file in a plain place ---------------------------------------------------

def test_a_socket_named_like_a_module_is_not_a_regular_file(tree: Path):
    import socket

    path = tree / "x.py"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        result = run(path, tree / "model.py")
    finally:
        server.close()
    assert result.exit_code == 3
    assert error_lines(result) == [f"error: {path}: not a regular file (a socket); skipped"]
    assert (tree / "model.py").read_text() == FIXED


def test_a_bind_mounted_file_is_left_alone_with_its_reason(tree: Path, monkeypatch):
    """rename(2) over a mount point is EBUSY (simulated: mounting needs privileges CI may lack)."""
    import errno

    from candle_port.rewriters import writeback

    def busy(*args):
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(writeback, "_exchange", busy)
    monkeypatch.setattr(writeback.os, "replace", busy)
    result = run(tree)
    assert result.exit_code == 4
    assert error_lines(result) == [
        f"error: {tree / 'model.py'}: not written: is a mount point (a file bind-mounted here), which cannot be "
        "replaced atomically; left unchanged (fix the file at its source)"
    ]
    assert (tree / "model.py").read_text() == SITE
