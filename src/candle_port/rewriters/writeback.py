"""The one way port-fix writes a file, so that no edit, permission or owner is ever lost.

A file is read once into a Snapshot (its bytes, identity and a hash). Writing it back:

1. the new bytes must compile (with the file's own coding cookie or BOM), or nothing is written;
2. the file must still be the one that was read: same path target, inode, size, mtime and hash,
   checked right before the replace (under an advisory lock, so two port-fix runs cannot both
   win); an edit made meanwhile is kept and the write refused;
3. it must be a regular file with one link (replacing a hard-linked file would split the links:
   refused, not rewritten in place), not read-only (unless `force_read_only`), and, when it was
   reached through a symlink, the target must lie inside the paths port-fix was given;
4. the bytes go to a temporary file in the same directory, are fsynced, get the original's mode,
   owner, group, extended attributes and POSIX ACLs, and are swapped with the file atomically
   (renameat2's RENAME_EXCHANGE; os.replace where the system has no exchange). The file the swap
   took out is compared with the snapshot once more: an editor's save that landed between the
   last check and the swap goes back, untouched, and the write is refused. Any failure,
   KeyboardInterrupt included, leaves the original as it was and no temporary file. A worker
   killed meanwhile (SIGKILL) cannot clean up: its temporary file carries the run's tag, and the
   run removes it once its workers have exited (remove_temp_files).

WriteRefused means the file was left alone to protect it (exit 4); WriteFailed and OSError mean it
could not be written (exit 3).
"""

from __future__ import annotations

import ast
import errno
import hashlib
import os
import stat
import sys
import tempfile
from dataclasses import dataclass

try:
    import fcntl
except ImportError:  # Windows: no advisory lock; the identity and hash checks still apply
    fcntl = None

from candle_port.pipeline.findings import FileError
from candle_port.pipeline.sources import MAX_READ_BYTES, SourceError, read_regular_file

TEMP_SUFFIX = ".port-fix.tmp"


class WriteRefused(Exception):
    """The file was left untouched on purpose (changed meanwhile, read-only, linked); the message says why."""


class WriteFailed(Exception):
    """The file could not be written (the new text does not compile, a bad target)."""


class NotWritten(FileError):
    """A file port-fix would have changed but left untouched to protect it (exit 4)."""

    __slots__ = ()


@dataclass(frozen=True)
class WritePolicy:
    """What write_back may do beyond the safe default."""

    force_read_only: bool = False
    roots: tuple[str, ...] | None = None  # real paths a symlinked file's target must lie under; None: anywhere
    temp_tag: str = ""  # in temporary files' names: remove_temp_files finds those of a killed worker


@dataclass(frozen=True)
class Snapshot:
    """A file as it was read: what write_back compares against before replacing it."""

    path: str
    real: str
    data: bytes
    device: int
    inode: int
    size: int
    mtime_ns: int
    digest: str


def take_snapshot(path: str, max_bytes: int | None = MAX_READ_BYTES) -> Snapshot:
    """Read a regular file once, with its identity; SourceError with a one-line reason otherwise."""
    try:
        real = os.path.realpath(path)
    except OSError as exc:
        raise SourceError(exc.strerror or str(exc)) from None
    data, info = read_regular_file(path, max_bytes)
    return Snapshot(path, real, data, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, _digest(data))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _under(real: str, roots: tuple[str, ...]) -> bool:
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def check_compiles(data: bytes, path: str) -> None:
    """The bytes as Python will read them (cookie, BOM) must compile; WriteFailed otherwise."""
    try:
        compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        raise WriteFailed(f"the new text does not parse, file left unchanged: {exc}") from None


def check_rust_parses(data: bytes, before: bytes, path: str) -> None:
    """The new Rust text must parse with no more error nodes than the file had (tree-sitter's
    grammar lacks a few valid forms: candle_port/rust/parser.py); WriteFailed otherwise."""
    import codecs

    from candle_port.rust.parser import error_count

    strip = lambda b: b[len(codecs.BOM_UTF8) :] if b.startswith(codecs.BOM_UTF8) else b  # noqa: E731
    if error_count(strip(data)) > error_count(strip(before)):
        raise WriteFailed("the new text does not parse as Rust, file left unchanged")


def check_toml(data: bytes) -> None:
    """A manifest port-fix edits (Cargo.toml) must stay valid TOML; WriteFailed otherwise."""
    import tomllib

    try:
        tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise WriteFailed(f"the new manifest is not valid TOML, file left unchanged: {exc}") from None


def write_back(snapshot: Snapshot, data: bytes, policy: WritePolicy = WritePolicy(), check=None) -> None:
    """Replace the snapshot's file with `data`, or raise and leave it exactly as it is.

    `check(data, path)`, when given, decides whether the new bytes may be written (WriteFailed if
    not) instead of the default by file type (Rust parses, TOML loads, Python compiles).
    """
    if check is not None:
        check(data, snapshot.path)
    elif snapshot.path.endswith(".rs"):
        check_rust_parses(data, snapshot.data, snapshot.path)
    elif snapshot.path.endswith(".toml"):
        check_toml(data)
    else:
        check_compiles(data, snapshot.path)
    real = os.path.realpath(snapshot.path)
    if real != snapshot.real:
        raise WriteRefused("changed on disk since port-fix read it (the path now points elsewhere); rerun port-fix")
    if policy.roots is not None and not _under(real, policy.roots):
        raise WriteRefused(f"a symlink to {real}, outside the given paths; not followed (name the target to fix it)")
    try:
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise WriteRefused("deleted since port-fix read it; not recreated") from None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        info = os.fstat(fd)
        _check_writable(info, policy)
        _replace(snapshot, real, fd, info, data, policy.temp_tag)
    finally:
        os.close(fd)


def _check_writable(info: os.stat_result, policy: WritePolicy) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused("no longer a regular file")
    if info.st_nlink > 1:
        raise WriteRefused(
            f"has {info.st_nlink} hard links; replacing it would split them, so it is left alone "
            "(copy it to a file of its own to fix it)"
        )
    read_only = not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    if read_only and not policy.force_read_only:
        raise WriteRefused("read-only; left unchanged (pass --force-read-only to rewrite read-only files)")


def _unchanged(snapshot: Snapshot, fd: int, real: str) -> bool:
    """Whether the file at `real` is still, byte for byte, the one the snapshot read."""
    info = os.fstat(fd)
    try:
        now = os.stat(real, follow_symlinks=False)
    except FileNotFoundError:
        return False
    same_file = (info.st_dev, info.st_ino) == (now.st_dev, now.st_ino) == (snapshot.device, snapshot.inode)
    if not same_file or (info.st_size, info.st_mtime_ns) != (snapshot.size, snapshot.mtime_ns):
        return False
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return _digest(b"".join(chunks)) == snapshot.digest


def _replace(snapshot: Snapshot, real: str, fd: int, info: os.stat_result, data: bytes, tag: str = "") -> None:
    directory = os.path.dirname(real)
    tmp_fd, tmp = tempfile.mkstemp(prefix=temp_prefix(real, tag), suffix=TEMP_SUFFIX, dir=directory)
    ours = os.fstat(tmp_fd).st_ino  # the new file's inode: which name holds it tells what an exchange did
    try:
        with os.fdopen(tmp_fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            _keep_owner(handle.fileno(), info)
            os.chmod(tmp, stat.S_IMODE(info.st_mode))
            _keep_xattrs(fd, handle.fileno())  # after chmod: a POSIX ACL sets the group bits to its mask
        if not _unchanged(snapshot, fd, real):
            raise WriteRefused(CHANGED_MEANWHILE)
        if _swap_in(tmp, real) and not _unchanged(snapshot, fd, tmp):
            # An edit saved in the window between the check and the exchange (an editor's rename
            # over the file, a write into it) is what came out: it goes back, untouched.
            raise WriteRefused(CHANGED_MEANWHILE)
    except BaseException:
        _undo(tmp, real, ours)
        raise
    _remove(tmp)  # the file as it was read, swapped out (nothing there after os.replace)
    _sync_directory(directory)


def _swap_in(tmp: str, real: str) -> bool:
    """Put the new file at `real`: exchanged (True: the old one is now at `tmp`) or, where the
    system cannot exchange (not Linux, or the filesystem lacks it), replaced (False)."""
    try:
        if _exchange(tmp, real):
            return True
        os.replace(tmp, real)
        return False
    except OSError as exc:
        if exc.errno == errno.EBUSY:  # a file bind-mounted over this path cannot be renamed over
            raise WriteRefused(
                "is a mount point (a file bind-mounted here), which cannot be replaced atomically; left unchanged "
                "(fix the file at its source)"
            ) from None
        raise


def _undo(tmp: str, real: str, ours: int) -> None:
    """After a failure or an interrupt at any point: the original back at `real`, no temporary file.

    Decided by where the new file is, not by how far the code got (an interrupt may land between
    the exchange and the next line): when `tmp` no longer holds it, the exchange happened and the
    file that came out goes back.
    """
    try:
        at_tmp = os.lstat(tmp).st_ino
    except FileNotFoundError:
        return  # replaced by os.replace: the write is complete
    if at_tmp == ours:
        _remove(tmp)
    else:
        _swap_back(tmp, real)


CHANGED_MEANWHILE = "changed on disk since port-fix read it; your edit is kept, rerun port-fix"

# renameat2(2)'s RENAME_EXCHANGE: swap two names atomically, so the file that was replaced is
# still there to compare (and to put back), unlike os.replace, which unlinks it.
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2 = None


def _exchange(a: str, b: str) -> bool:
    """Swap the files named `a` and `b` atomically; False where the system cannot (then nothing moved)."""
    global _renameat2
    if _renameat2 is None:
        _renameat2 = _load_renameat2()
    if not _renameat2:
        return False
    import ctypes

    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False  # this filesystem or kernel cannot exchange: the caller replaces instead
    raise OSError(code, os.strerror(code), b)


def _load_renameat2():
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc before 2.28, musl without it
        return False
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def _swap_back(tmp: str, real: str) -> None:
    """Undo an exchange (interrupted, or the file changed meanwhile): the file that was there returns."""
    try:
        if _exchange(tmp, real):
            _remove(tmp)
            return
    except OSError:
        pass
    # Cannot swap back: keep the file that came out under a name no run removes, and say where.
    kept = real + ".port-fix-kept"
    os.replace(tmp, kept)
    raise WriteRefused(f"changed on disk meanwhile and could not be put back: your version is in {kept}")


# A file name may use up to 255 bytes: the temporary file's prefix keeps the start of the name,
# enough to recognise it, and leaves room for the run's tag, mkstemp's letters and the suffix.
_NAME_MAX = 255
_PREFIX_NAME_BYTES = 120


def temp_prefix(real: str, tag: str = "") -> str:
    """The prefix of a temporary file for `real`: short enough for a 255-byte file name."""
    name = os.fsencode(os.path.basename(real))[:_PREFIX_NAME_BYTES]
    while name:
        try:
            name.decode("utf-8")
            break
        except UnicodeDecodeError:
            name = name[:-1]  # do not cut a character in two
    return f".{os.fsdecode(name)}.{tag + '.' if tag else ''}"


def _keep_xattrs(source_fd: int, tmp_fd: int) -> None:
    """Copy the original's extended attributes (POSIX ACLs among them) to the new file.

    One that cannot be kept (another user's `trusted.*`, a security label this user may not set)
    refuses the write, as an owner that cannot be kept does: the rewrite must not widen access.
    """
    if not hasattr(os, "listxattr"):
        return  # not Linux: no xattr API in os
    try:
        names = os.listxattr(source_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return
        raise
    for name in names:
        try:
            value = os.getxattr(source_fd, name)
        except OSError as exc:
            if exc.errno == errno.ENODATA:
                continue  # removed meanwhile
            raise
        try:
            if os.getxattr(tmp_fd, name) == value:
                continue  # set already (a default ACL inherited from the directory, a label)
        except OSError:
            pass
        try:
            os.setxattr(tmp_fd, name, value)
        except OSError as exc:
            raise WriteRefused(
                f"has the extended attribute {name}, which port-fix cannot keep ({exc.strerror}); left unchanged"
            ) from None


def remove_temp_files(directories, tag: str) -> int:
    """Remove the temporary files named with `tag` (a run's, once its workers have exited).

    A worker killed between creating its temporary file and the replace (SIGKILL, the OOM killer)
    cannot remove it; the file it was writing is untouched. Returns how many were removed.
    """
    if not tag:
        return 0
    removed = 0
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if name.startswith(".") and name.endswith(TEMP_SUFFIX) and f".{tag}." in name:
                try:
                    os.unlink(os.path.join(directory, name))
                    removed += 1
                except OSError:
                    pass
    return removed


def _keep_owner(tmp_fd: int, info: os.stat_result) -> None:
    if not hasattr(os, "fchown"):
        return  # Windows: no POSIX owner to keep
    now = os.fstat(tmp_fd)
    if (now.st_uid, now.st_gid) == (info.st_uid, info.st_gid):
        return
    try:
        os.fchown(tmp_fd, info.st_uid, info.st_gid)
    except PermissionError:
        raise WriteRefused(
            f"owned by {info.st_uid}:{info.st_gid}, which port-fix cannot keep as this user; left unchanged"
        ) from None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _sync_directory(directory: str) -> None:
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def create_or_replace(path: str, data: bytes, owned=None) -> bool:
    """Write a file port-fix owns (the vendored runtime): create it, or replace it when different.

    Created atomically and never over a file that appeared meanwhile (os.link refuses); an existing
    one goes through write_back, and only when `owned(existing_bytes)` says port-fix wrote it (a
    user's own file of that name is refused, never replaced). A symlink at `path` is never
    followed: its target may lie anywhere. Returns whether anything was written.
    """
    check_compiles(data, path)
    if os.path.islink(path):
        raise WriteRefused(f"{path} is a symlink; port-fix does not write through it (remove it, or choose another directory)")
    try:
        snapshot = take_snapshot(path)
    except SourceError:
        if os.path.lexists(path):
            raise WriteFailed(f"{path} exists and is not a regular file") from None
        snapshot = None
    if snapshot is not None:
        if snapshot.data == data:
            return False
        if owned is not None and not owned(snapshot.data):
            raise WriteRefused(f"{path} exists and was not written by port-fix; left as it is (move it, or choose another directory)")
        write_back(snapshot, data, WritePolicy(roots=(os.path.dirname(snapshot.real),)))
        return True
    directory = os.path.dirname(os.path.abspath(path))
    tmp_fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path), suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(tmp_fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise WriteRefused(f"{path} appeared while port-fix was writing it; left as it is") from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            os.replace(tmp, path)  # a filesystem without hard links
    finally:
        _remove(tmp)
    _sync_directory(directory)
    return True
