"""Round three of the write path (issue 32): a save in the last moment before the replace, --vendor
over a user's file or through a symlink, extended attributes and ACLs, 255-byte file names.

Each test names the promise docs/reliability.md lists for it (letter W3 there).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner

from candle_port.cli.entry import single_command_app
from candle_port.cli.fix import fix_command
from candle_port.rewriters import writeback
from candle_port.rewriters.writeback import WriteRefused, take_snapshot, write_back

SITE = "import torch.nn.functional as F\ny = F.interpolate(x, scale_factor=2, mode='bilinear')\n"
FIXED = (  # F's only use was the site: its import goes too (issue 36)
    "import candle_port.runtime as candle_runtime\n"
    "y = candle_runtime.interpolate(x, scale_factor=2, mode='bilinear')\n"
)
EDITOR_SAVE = "# saved by the user's editor while port-fix wrote\n" + SITE
APP = single_command_app(fix_command, "port-fix")


def run(*args):
    return CliRunner().invoke(APP, ["--jobs", "1", *map(str, args)])


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob(f"*{writeback.TEMP_SUFFIX}"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(SITE)
    return tmp_path


def _editor_rename_save(path: Path) -> None:
    """What vim/VS Code do: write a temporary file, rename it over the original (a new inode)."""
    saved = path.with_name(path.name + ".editor-swp")
    saved.write_text(EDITOR_SAVE)
    os.replace(saved, path)


def _in_place_save(path: Path) -> None:
    with open(path, "w") as handle:  # same inode, new bytes
        handle.write(EDITOR_SAVE)


def _save_after_the_last_check(monkeypatch, path: Path, save) -> None:
    """The edit lands after port-fix's last comparison with what it read, right before its replace."""
    real_unchanged = writeback._unchanged
    done = []

    def check_then_save(snapshot, fd, real):
        same = real_unchanged(snapshot, fd, real)
        if not done and real == os.path.realpath(path):
            done.append(True)
            save(path)
        return same

    monkeypatch.setattr(writeback, "_unchanged", check_then_save)


@pytest.mark.parametrize("save", [_editor_rename_save, _in_place_save], ids=["rename-over", "in-place"])
def test_a_save_in_the_write_window_is_kept_and_refused(tree: Path, monkeypatch, save):
    path = tree / "model.py"
    (tree / "other.py").write_text(SITE)
    _save_after_the_last_check(monkeypatch, path, save)
    result = run(tree)
    assert result.exit_code == 4, result.output
    assert path.read_text() == EDITOR_SAVE
    assert (tree / "other.py").read_text() == FIXED
    assert f"error: {path}: not written: changed on disk since port-fix read it; your edit is kept" in result.stderr
    assert temp_files(tree) == []


def test_a_save_in_the_write_window_through_the_library_call(tree: Path, monkeypatch):
    path = tree / "model.py"
    snapshot = take_snapshot(str(path))
    _save_after_the_last_check(monkeypatch, path, _editor_rename_save)
    with pytest.raises(WriteRefused, match="changed on disk"):
        write_back(snapshot, FIXED.encode())
    assert path.read_text() == EDITOR_SAVE and temp_files(tree) == []


def test_an_interrupt_right_after_the_exchange_puts_the_original_back(tree: Path, monkeypatch):
    path = tree / "model.py"
    snapshot = take_snapshot(str(path))
    real_exchange = writeback._exchange
    calls = []

    def exchange_then_interrupt(a, b):
        swapped = real_exchange(a, b)
        calls.append(swapped)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return swapped

    monkeypatch.setattr(writeback, "_exchange", exchange_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_back(snapshot, FIXED.encode())
    assert calls == [True, True]  # swapped, then swapped back
    assert path.read_text() == SITE and temp_files(tree) == []


def test_without_an_atomic_exchange_the_write_still_happens(tree: Path, monkeypatch):
    """A filesystem or system without renameat2's exchange: checked, then os.replace (as before)."""
    monkeypatch.setattr(writeback, "_exchange", lambda a, b: False)
    assert run(tree).exit_code == 0
    assert (tree / "model.py").read_text() == FIXED and temp_files(tree) == []


# --- --vendor never overwrites what it did not write ---------------------------------------------

def test_vendor_refuses_a_users_own_runtime_module(tree: Path):
    vendor = tree / "third_party"
    vendor.mkdir()
    own = vendor / "candle_port_runtime.py"
    own.write_text("# my own module of that name\nVALUE = 1\n")
    result = run("--vendor", vendor, tree)
    assert result.exit_code == 2, result.output
    assert "was not written by port-fix" in result.stderr and str(own) in result.stderr
    assert own.read_text() == "# my own module of that name\nVALUE = 1\n"
    assert (tree / "model.py").read_text() == SITE


def test_vendor_does_not_follow_a_symlink_out_of_the_tree(tmp_path: Path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "model.py").write_text(SITE)
    target = outside / "precious.py"
    target.write_text('"""candle-port runtime, vendored by `port-fix --vendor`: old"""\n')  # even one that looks like ours
    vendor = project / "third_party"
    vendor.mkdir()
    (vendor / "candle_port_runtime.py").symlink_to(target)
    result = run("--vendor", vendor, project)
    assert result.exit_code == 2, result.output
    assert "is a symlink" in result.stderr
    assert target.read_text() == '"""candle-port runtime, vendored by `port-fix --vendor`: old"""\n'
    assert (vendor / "candle_port_runtime.py").is_symlink()
    assert (project / "model.py").read_text() == SITE


def test_vendor_still_regenerates_its_own_module(tree: Path):
    vendor = tree / "third_party"
    assert run("--vendor", vendor, tree).exit_code == 0
    module = vendor / "candle_port_runtime.py"
    fresh = module.read_text()
    module.write_text(fresh.replace("def ", "def _stale_", 1))
    assert run("--vendor", vendor, tree).exit_code == 0
    assert module.read_text() == fresh


# --- extended attributes and POSIX ACLs --------------------------------------------------------

ACL_UNDEFINED_ID = 0xFFFFFFFF


def _acl(entries) -> bytes:
    """system.posix_acl_access's value: version 2, then (tag, permissions, id) per entry."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, ident) for tag, perm, ident in entries)


# owner rw, user 1234 rw, owning group r, mask r (so user 1234 effectively r), others nothing
ACL = _acl([(0x01, 6, ACL_UNDEFINED_ID), (0x02, 6, 1234), (0x04, 4, ACL_UNDEFINED_ID), (0x10, 4, ACL_UNDEFINED_ID), (0x20, 0, ACL_UNDEFINED_ID)])


def test_extended_attributes_and_the_acl_are_kept(tree: Path):
    path = tree / "model.py"
    os.chmod(path, 0o640)
    os.setxattr(path, "user.origin", b"downloaded from the model zoo")
    os.setxattr(path, "system.posix_acl_access", ACL)
    before = path.stat().st_mode
    result = run(tree)
    assert result.exit_code == 0, result.output
    assert path.read_text() == FIXED
    assert os.getxattr(path, "user.origin") == b"downloaded from the model zoo"
    assert os.getxattr(path, "system.posix_acl_access") == ACL
    assert path.stat().st_mode == before  # group bits = the mask (read), not write


def test_an_attribute_that_cannot_be_kept_refuses_the_write(tree: Path, monkeypatch):
    path = tree / "model.py"
    os.setxattr(path, "user.origin", b"zoo")
    real_setxattr = os.setxattr

    def setxattr_denied(target, name, value, *args, **kwargs):
        if isinstance(target, int):
            raise PermissionError(1, "Operation not permitted")
        return real_setxattr(target, name, value, *args, **kwargs)

    monkeypatch.setattr(writeback.os, "setxattr", setxattr_denied)
    result = run(tree)
    assert result.exit_code == 4, result.output
    assert "extended attribute user.origin, which port-fix cannot keep" in result.stderr
    assert path.read_text() == SITE and temp_files(tree) == []


# --- file names --------------------------------------------------------------------------------

@pytest.mark.parametrize("length", [220, 255])
def test_a_file_name_of_up_to_255_bytes_is_fixed(tmp_path: Path, length: int):
    stem = "m" * (length - len("é.py") - 1) + "é"  # a two-byte character where the prefix may cut
    path = tmp_path / f"{stem}.py"
    assert len(os.fsencode(path.name)) == length
    path.write_text(SITE)
    result = run(tmp_path)
    assert result.exit_code == 0, result.output
    assert path.read_text() == FIXED and temp_files(tmp_path) == []


def test_another_languages_writer_passes_its_own_check(tmp_path: Path):
    """A writer of another kind of file brings its own check of the new bytes (the default is by
    file type: .rs parses as Rust, .toml loads, anything else compiles as Python)."""
    path = tmp_path / "notes.txt"
    path.write_text("plain text\n")
    with pytest.raises(writeback.WriteFailed, match="does not parse"):
        write_back(take_snapshot(str(path)), b"fn main() { let x = 1; }\n")
    assert path.read_text() == "plain text\n"
    seen = []
    write_back(take_snapshot(str(path)), b"fn main() { let x = 1; }\n", check=lambda data, name: seen.append(name))
    assert path.read_text() == "fn main() { let x = 1; }\n" and seen == [str(path)]
