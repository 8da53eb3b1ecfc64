"""port-fix loses nothing when it writes: encodings, newlines, mode, owner, links, concurrent edits, faults.

Each test is one promise of README "What port-fix guarantees when it writes". Exit codes: 3 a file
could not be read or written, 4 a file was left untouched to protect it (the highest code wins).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

import candle_port.rewriters.fixer as fixer
from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command
from candle_port.rewriters import writeback
from candle_port.rewriters.writeback import WritePolicy, WriteRefused, take_snapshot, write_back

SITE = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
FIXED = (  # F's only use was the site: its import goes too (issue 36)
    "import candle_port.runtime as candle_runtime\n"
    "y = candle_runtime.interpolate(x, scale_factor=2, mode='bilinear')\n"
)
OTHER_WRITER = "# the user's own edit, made while port-fix ran\n" + SITE
APP = single_command_app(fix_command, "port-fix")


def run(*args):
    return CliRunner().invoke(APP, ["--jobs", "1", *map(str, args)])


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob(f"*{writeback.TEMP_SUFFIX}"))


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(SITE)
    return tmp_path


# --- bytes kept -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(SITE.replace("\n", "\r\n").encode(), FIXED.replace("\n", "\r\n").encode(), id="crlf"),
        pytest.param(b"\xef\xbb\xbf" + SITE.encode(), b"\xef\xbb\xbf" + FIXED.encode(), id="utf8-bom"),
        pytest.param(
            "# -*- coding: latin-1 -*-\n".encode() + SITE.encode() + "s = 'été'\n".encode("latin-1"),
            "# -*- coding: latin-1 -*-\n".encode() + FIXED.encode() + "s = 'été'\n".encode("latin-1"),
            id="latin1-cookie",
        ),
        pytest.param(
            b"import torch.nn.functional as F\r\n\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\r\nz = F.relu\n",
            b"import torch.nn.functional as F\r\nimport candle_port.runtime as candle_runtime\r\n\n"
            b"y = candle_runtime.interpolate(x, scale_factor=2, mode='bilinear')\r\nz = F.relu\n",  # F still read: kept
            id="mixed-newlines",
        ),
    ],
)
def test_encoding_bom_and_newlines_are_kept_on_disk(tmp_path: Path, before: bytes, after: bytes):
    (tmp_path / "m.py").write_bytes(before)
    result = run(tmp_path)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "m.py").read_bytes() == after
    assert temp_files(tmp_path) == []


@pytest.mark.parametrize("mode", [0o755, 0o640, 0o600, 0o2775], ids=oct)
def test_mode_bits_are_kept(tree: Path, mode: int):
    os.chmod(tree / "model.py", mode)
    assert run(tree).exit_code == 0
    assert (tree / "model.py").read_text() == FIXED
    assert stat.S_IMODE((tree / "model.py").stat().st_mode) == mode


def test_owner_and_group_are_kept(tree: Path):
    path = tree / "model.py"
    if os.geteuid() == 0:
        os.chown(path, 1234, 5678)  # as root: a real foreign owner, as in the report
    before = path.stat()
    assert run(tree).exit_code == 0
    after = path.stat()
    assert path.read_text() == FIXED
    assert (after.st_uid, after.st_gid) == (before.st_uid, before.st_gid)


def test_an_owner_that_cannot_be_kept_refuses_the_write(tree: Path, monkeypatch):
    """Without the right to chown (not root), a foreign-owned but writable file is left alone."""
    real_fstat = os.fstat

    def fstat_foreign_owner(fd):
        info = real_fstat(fd)
        if os.path.realpath(f"/proc/self/fd/{fd}") == str((tree / "model.py").resolve()):
            return os.stat_result((info.st_mode, info.st_ino, info.st_dev, info.st_nlink, 1234, 5678, *info[6:]))
        return info

    def fchown_denied(fd, uid, gid):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(writeback.os, "fstat", fstat_foreign_owner)
    monkeypatch.setattr(writeback.os, "fchown", fchown_denied)
    result = run(tree)
    assert result.exit_code == 4
    assert (tree / "model.py").read_text() == SITE
    assert "owned by 1234:5678" in result.stderr
    assert temp_files(tree) == []


# --- files port-fix protects: exit 4 ----------------------------------------------------------

def test_read_only_file_is_refused_unless_forced(tree: Path):
    path = tree / "model.py"
    os.chmod(path, 0o444)
    result = run(tree)
    assert result.exit_code == 4
    assert path.read_text() == SITE
    assert error_lines(result) == [f"error: {path}: not written: read-only; left unchanged (pass --force-read-only to rewrite read-only files)"]
    forced = run("--force-read-only", tree)
    assert forced.exit_code == 0, forced.output
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_concurrent_edit_is_kept_and_reported(tree: Path, monkeypatch):
    """An edit made between port-fix's read and its write survives; port-fix says so, exit 4."""
    path = tree / "model.py"
    real_fix_text = fixer.fix_text

    def edit_while_fixing(text, **kwargs):
        result = real_fix_text(text, **kwargs)
        if kwargs["path"] == str(path):
            path.write_text(OTHER_WRITER)  # same inode, new content: caught by size, mtime and hash
        return result

    monkeypatch.setattr(fixer, "fix_text", edit_while_fixing)
    (tree / "other.py").write_text(SITE)
    result = run(tree)
    assert result.exit_code == 4
    assert path.read_text() == OTHER_WRITER
    assert (tree / "other.py").read_text() == FIXED  # the other file is still fixed
    assert error_lines(result) == [f"error: {path}: not written: changed on disk since port-fix read it; your edit is kept, rerun port-fix"]


def test_same_size_same_mtime_edit_is_caught_by_the_hash(tree: Path):
    path = tree / "model.py"
    snapshot = take_snapshot(str(path))
    info = path.stat()
    path.write_text(SITE.replace("x,", "z,"))  # same size
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # same mtime
    with pytest.raises(WriteRefused, match="changed on disk"):
        write_back(snapshot, FIXED.encode())
    assert path.read_text() == SITE.replace("x,", "z,")
    assert temp_files(tree) == []


def test_a_second_port_fix_run_meanwhile_wins_and_the_first_refuses(tree: Path, monkeypatch):
    path = tree / "model.py"
    real_fix_text = fixer.fix_text
    nested = tree / "nested-run.txt"  # on disk: fix_text runs in a worker process

    def another_run_meanwhile(text, **kwargs):
        result = real_fix_text(text, **kwargs)
        if not nested.exists():
            nested.write_text("running")
            nested.write_text(str(run(tree).exit_code))  # the other run replaces the file (new inode)
        return result

    monkeypatch.setattr(fixer, "fix_text", another_run_meanwhile)
    result = run(tree)
    assert nested.read_text() == "0" and result.exit_code == 4
    assert path.read_text() == FIXED
    assert "changed on disk" in result.stderr


def test_file_deleted_meanwhile_is_not_recreated(tree: Path, monkeypatch):
    path = tree / "model.py"
    real_fix_text = fixer.fix_text

    def delete_while_fixing(text, **kwargs):
        result = real_fix_text(text, **kwargs)
        path.unlink()
        return result

    monkeypatch.setattr(fixer, "fix_text", delete_while_fixing)
    result = run(tree)
    assert result.exit_code == 4
    assert not path.exists()
    assert "deleted since port-fix read it" in result.stderr


def test_hard_linked_file_is_left_alone(tree: Path):
    path = tree / "model.py"
    os.link(path, tree / "twin.txt")
    result = run(tree)
    assert result.exit_code == 4
    assert path.read_text() == SITE and (tree / "twin.txt").read_text() == SITE
    assert path.stat().st_nlink == 2
    assert "2 hard links" in result.stderr


def test_symlink_out_of_the_given_paths_is_not_followed(tmp_path: Path):
    inside, outside = tmp_path / "project", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    (outside / "target.py").write_text(SITE)
    (inside / "link.py").symlink_to(outside / "target.py")
    result = run(inside)
    assert result.exit_code == 4
    assert (outside / "target.py").read_text() == SITE
    assert "outside the given paths; not followed" in result.stderr
    # Naming the link itself is consent: its target is fixed and the link stays a link.
    assert run(inside / "link.py").exit_code == 0
    assert (outside / "target.py").read_text() == FIXED
    assert (inside / "link.py").is_symlink()


def test_symlink_inside_the_tree_fixes_the_target_and_stays_a_link(tree: Path):
    (tree / "alias.py").symlink_to(tree / "model.py")
    result = run(tree)
    assert result.exit_code == 0, result.output
    assert (tree / "model.py").read_text() == FIXED
    assert (tree / "alias.py").is_symlink()


# --- faults: the original stays intact, no temporary file remains -----------------------------

@pytest.mark.parametrize(
    ("target", "exc"),
    [
        pytest.param("replace", OSError(errno.ENOSPC, "No space left on device"), id="replace-fails"),
        pytest.param("fsync", OSError(errno.EIO, "Input/output error"), id="fsync-fails"),
        pytest.param("chmod", OSError(errno.EPERM, "Operation not permitted"), id="chmod-fails"),
    ],
)
def test_a_crash_mid_write_leaves_the_original_and_no_temp_file(tree: Path, monkeypatch, target, exc):
    def boom(*args, **kwargs):
        raise exc

    (tree / "second.py").write_text(SITE)
    monkeypatch.setattr(writeback.os, target, boom)
    if target == "replace":  # the replace is an atomic exchange where the system has one
        monkeypatch.setattr(writeback, "_exchange", boom)
    result = run(tree)
    assert result.exit_code == 3
    assert (tree / "model.py").read_text() == SITE and (tree / "second.py").read_text() == SITE
    assert len(error_lines(result)) == 2 and all("cannot write" in line for line in error_lines(result))
    assert temp_files(tree) == []


def test_an_interrupt_mid_write_leaves_the_original_and_no_temp_file(tree: Path, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    path = tree / "model.py"
    snapshot = take_snapshot(str(path))
    monkeypatch.setattr(writeback.os, "replace", interrupted)
    monkeypatch.setattr(writeback, "_exchange", interrupted)  # the replace, where the system can exchange
    with pytest.raises(KeyboardInterrupt):
        write_back(snapshot, FIXED.encode())
    assert path.read_text() == SITE
    assert temp_files(tree) == []


def test_a_rewrite_that_does_not_parse_is_never_written(tree: Path, monkeypatch):
    real_fix_text = fixer.fix_text

    def broken(text, **kwargs):
        result = real_fix_text(text, **kwargs)
        result.text = result.text.replace("candle_runtime.interpolate(", "candle_runtime.interpolate((")
        return result

    monkeypatch.setattr(fixer, "fix_text", broken)
    result = run(tree)
    assert result.exit_code == 3
    assert (tree / "model.py").read_text() == SITE
    assert "the new text does not parse, file left unchanged" in result.stderr


def test_write_back_checks_the_bytes_with_their_own_coding_cookie(tmp_path: Path):
    path = tmp_path / "m.py"
    path.write_bytes(b"# -*- coding: ascii -*-\nx = 1\n")
    with pytest.raises(writeback.WriteFailed, match="does not parse"):
        write_back(take_snapshot(str(path)), "# -*- coding: ascii -*-\nx = 'é'\n".encode("utf-8"))
    assert path.read_bytes() == b"# -*- coding: ascii -*-\nx = 1\n"


# --- one bad file never stops the others ------------------------------------------------------

def test_bad_files_each_get_one_line_and_the_good_one_is_fixed(tree: Path):
    (tree / "undecodable.py").write_bytes(b"x = '\xff' # interpolate\n")
    (tree / "syntax.py").write_text("import torch.nn.functional as F\ndef f(:\n    F.interpolate(x)\n")
    os.mkfifo(tree / "pipe.py")  # would hang a plain open(); must be skipped with a reason
    result = run(tree, tree / "vanished.py")
    assert result.exit_code == 3
    assert (tree / "model.py").read_text() == FIXED
    lines = error_lines(result)
    assert len(lines) == 4
    for name, reason in (
        ("undecodable.py", "not valid utf-8"),
        ("syntax.py", "syntax"),
        ("pipe.py", "not a regular file (a FIFO)"),
        ("vanished.py", "no such file or directory"),
    ):
        assert any(str(tree / name) in line and reason.lower() in line.lower() for line in lines), (name, lines)


def test_unreadable_file_is_exit_3_and_others_fixed(tree: Path, monkeypatch):
    real_read = writeback.read_regular_file
    denied = tree / "denied.py"
    denied.write_text(SITE)

    def read(path, *limit):
        if Path(path) == denied:  # chmod 000 does not stop root, so deny the read here
            from candle_port.pipeline.sources import SourceError

            raise SourceError("Permission denied")
        return real_read(path, *limit)

    monkeypatch.setattr(writeback, "read_regular_file", read)
    result = run(tree)
    assert result.exit_code == 3
    assert error_lines(result) == [f"error: {denied}: Permission denied"]
    assert (tree / "model.py").read_text() == FIXED and denied.read_text() == SITE


def test_the_highest_exit_code_wins_and_json_marks_not_written(tree: Path):
    (tree / "undecodable.py").write_bytes(b"x = '\xff' # interpolate\n")
    (tree / "locked.py").write_text(SITE)
    os.chmod(tree / "locked.py", 0o444)
    result = run("--output-format", "json", tree)
    assert result.exit_code == 4
    data = json.loads(result.stdout)
    flags = {Path(e["path"]).name: e["not_written"] for e in data["errors"]}
    assert flags == {"undecodable.py": False, "locked.py": True}
    assert data["files_changed"] == [str(tree / "model.py")]


# --- configuration and --vendor ---------------------------------------------------------------

def test_broken_pyproject_is_exit_2_naming_file_and_line(tree: Path):
    (tree / "pyproject.toml").write_text('[tool.candle-port]\nexclude = ["model.py"\nstrategy = "nearest"\n')
    result = run(tree)
    assert result.exit_code == 2
    assert (tree / "model.py").read_text() == SITE  # its exclude is not silently dropped
    lines = error_lines(result)
    assert len(lines) == 1
    assert str(tree / "pyproject.toml") in lines[0] and "invalid TOML" in lines[0] and "line 3" in lines[0]


def test_vendor_at_an_existing_file_is_refused_up_front(tree: Path):
    (tree / "vendor.py").write_text("x = 1\n")
    result = run("--vendor", tree / "vendor.py", tree)
    assert result.exit_code == 2
    assert "expects a directory" in result.stderr
    assert (tree / "model.py").read_text() == SITE


def test_vendor_dir_that_is_not_an_identifier_is_refused_up_front(tree: Path):
    (tree / "__init__.py").write_text("")
    result = run("--vendor", tree / "my-vendor", tree)
    assert result.exit_code == 2
    assert "'my-vendor' is not a Python identifier" in result.stderr
    assert (tree / "model.py").read_text() == SITE and not (tree / "my-vendor").exists()


def test_vendor_on_a_full_disk_touches_no_model_file(tree: Path, monkeypatch):
    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writeback.os, "fsync", full)
    result = run("--vendor", tree / "third_party", tree)
    assert result.exit_code == 2
    assert "no file was changed: No space left on device" in result.stderr
    assert (tree / "model.py").read_text() == SITE
    assert not (tree / "third_party" / "candle_port_runtime.py").exists()
    assert temp_files(tree) == []


def test_vendored_module_is_never_rewritten_or_reported(tree: Path):
    assert run("--vendor", tree / "third_party", tree).exit_code == 0
    vendored = tree / "third_party" / "candle_port_runtime.py"
    data = vendored.read_bytes()
    assert "import candle_port_runtime as candle_runtime" in (tree / "model.py").read_text()
    result = run("--output-format", "json", tree)  # a later plain run, without --vendor
    assert result.exit_code == 0
    assert vendored.read_bytes() == data
    assert str(vendored) not in result.stdout


def test_vendor_regenerates_a_stale_module_even_when_no_model_changes(tree: Path):
    assert run("--vendor", tree / "third_party", tree).exit_code == 0
    vendored = tree / "third_party" / "candle_port_runtime.py"
    data = vendored.read_bytes()
    vendored.write_bytes(data.replace(b"def ", b"def  ", 1))
    assert run("--vendor", tree / "third_party", tree).exit_code == 0
    assert vendored.read_bytes() == data


def test_write_policy_default_allows_symlinks_anywhere(tmp_path: Path):
    (tmp_path / "t.py").write_text("x = 1\n")
    (tmp_path / "l.py").symlink_to(tmp_path / "t.py")
    write_back(take_snapshot(str(tmp_path / "l.py")), b"x = 2\n", WritePolicy())
    assert (tmp_path / "t.py").read_text() == "x = 2\n" and (tmp_path / "l.py").is_symlink()


def test_port_check_does_not_report_the_vendored_module(tree: Path):
    from candle_port.pipeline.engine import check_paths
    from candle_port.config import Config
    from candle_port.pipeline.prefilter import VENDORED_RUNTIME_MARK
    from candle_port.rewriters.vendor import HEADER

    assert HEADER.startswith(VENDORED_RUNTIME_MARK)
    assert run("--vendor", tree / "third_party", tree).exit_code == 0
    report = check_paths([str(tree)], Config(), jobs=1)
    assert not report.errors and not report.findings
