"""Where an output goes, and how it gets there without harming any other file.

Every writer of the package (``formats.atomic_path`` and the writers on it, the commands' ``--out`` /
``--per-query`` / data-folder writes, the out-of-core regroup's temporary copy) follows these rules:

- **Inputs are never outputs.** :func:`check_output` refuses, before any work is done, an output that is
  one of the command's inputs: the same file by device and inode, so a symlink, a hard link or
  ``./run.trec`` vs ``run.trec`` is caught too.
- **Symlinks are written through.** The file a symlink points to is replaced atomically; the link stays.
- **Special files are written into, never replaced.** A FIFO or a device (``/dev/null``) receives the
  bytes; it is not renamed over (atomicity does not apply to a stream). ``/dev/stdout``, ``/dev/stderr``
  and ``/dev/fd/N`` are this process's open descriptors, written at their current position, whatever they
  are open on (a pipe, a terminal, or a file the shell redirected to, which is not replaced either).
- **An existing directory is not a file**: refused before any work.
- **A write that fails is one line.** :func:`writing` turns an ``OSError`` (full disk, unwritable or missing
  folder, a path under a file, a name too long...) or a DuckDB I/O error into an
  :class:`~evalcore.errors.OutputError`: ``FILE: cannot write WHAT: REASON``, exit code 2 in the CLI.
"""
from __future__ import annotations

import errno as errno_codes
import os
import re
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from evalcore.errors import InputError, OutputError, one_line


@dataclass(frozen=True)
class Target:
    """The file a write to ``path`` lands in: ``file`` (symlinks followed) and whether it is a special
    file (FIFO, device, socket, an open descriptor ``fd``) to be written into rather than replaced."""

    path: Path
    file: Path
    special: bool
    fd: int | None = None


_OWN_DESCRIPTOR = re.compile(r"^/(?:dev/fd|proc/self/fd|proc/(\d+)/fd)/(\d+)$")


def _own_descriptor(path: Path) -> int | None:
    """N when ``path`` (or a symlink on the way, like /dev/stdout -> /proc/self/fd/1) names this
    process's descriptor N."""
    name = os.path.abspath(path)
    for _ in range(40):  # a symlink chain, as the kernel follows it
        found = _OWN_DESCRIPTOR.match(name)
        if found and (found.group(1) is None or int(found.group(1)) == os.getpid()):
            return int(found.group(2))
        if not os.path.islink(name):
            return None
        name = os.path.join(os.path.dirname(name), os.readlink(name))
        name = os.path.normpath(name)
    return None


def is_standard_output(path: str | Path | None) -> bool:
    """Whether ``path`` names this process's standard output (``/dev/stdout``, ``/dev/fd/1``...): a command
    writing its output there prints its own messages to stderr instead, so they do not end up in the data."""
    return path is not None and _own_descriptor(Path(path)) == 1


def write_target(path: str | Path) -> Target:
    """Where writing ``path`` lands (see the module docstring); OutputError for an existing directory."""
    path = Path(path)
    descriptor = _own_descriptor(path)
    if descriptor is not None:
        return Target(path, path, True, descriptor)
    try:
        info = os.stat(path)  # follows symlinks, /dev/stdout's /proc magic link included
    except FileNotFoundError:  # a new file, or a symlink to one that does not exist yet
        info = None
    except OSError as exc:  # a path under a file, a name too long, a link loop...
        raise OutputError(f"cannot write file: {_reason(exc)}", path) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise OutputError("cannot write file: expected a file path, found a directory", path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        return Target(path, path, True)  # written into by path: open() follows the /proc magic links
    file = Path(os.path.realpath(path)) if os.path.islink(path) else path
    return Target(path, file, False)


def check_output(path: str | Path | None, inputs: Iterable[str | Path | None] = (), what: str = "output") -> None:
    """Refuse, before any work, an output that is one of ``inputs`` (same device and inode) or an
    existing directory. ``None`` entries are skipped."""
    if path is None:
        return
    target = write_target(path)
    try:
        output_info = os.stat(target.file)
    except OSError:
        return  # does not exist yet: it cannot be an input
    for source in inputs:
        if source is None:
            continue
        try:
            source_info = os.stat(source)
        except OSError:
            continue  # a missing input is reported by its reader
        if (source_info.st_dev, source_info.st_ino) == (output_info.st_dev, output_info.st_ino) \
                and stat.S_ISREG(output_info.st_mode):
            raise OutputError(f"the {what} is the input {source}: writing it would destroy the input; "
                              "choose another path", path)


def check_output_folder(path: str | Path, what: str = "folder") -> None:
    """Refuse, before any work, a folder to write into that cannot be one: an existing file, a path under a
    file, a name too long. A missing folder is fine (it is created when written); whether it is writable
    shows at the write, as one line from :func:`writing`."""
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        parent = path.parent
        while parent != parent.parent and not parent.exists():
            parent = parent.parent
        if parent.exists() and not parent.is_dir():
            raise OutputError(f"cannot write {what}: {parent} is a file, not a folder", path) from None
        return
    except OSError as exc:
        raise OutputError(f"cannot write {what}: {_reason(exc)}", path) from None
    if not stat.S_ISDIR(info.st_mode):
        raise OutputError(f"cannot write {what}: expected a folder, found a file", path)


@contextmanager
def writing(path: str | Path, what: str = "file", duckdb_errors: bool = True) -> Iterator[None]:
    """Run the block; an I/O failure inside it becomes ``OutputError`` naming ``path`` (``cannot write
    WHAT: REASON``). Other exceptions pass unchanged. ``duckdb_errors=False`` leaves DuckDB's I/O errors
    alone, for a block where DuckDB also reads an input."""
    try:
        yield
    except (InputError, BrokenPipeError):  # a reader that stopped early (| head) is no failure: the CLI exits 0
        raise
    except OSError as exc:
        raise OutputError(f"cannot write {what}: {_reason(exc)}", path) from None
    except Exception as exc:  # DuckDB's I/O errors (COPY TO, spilling) are not OSErrors
        if not duckdb_errors or not _is_duckdb_io_error(exc):
            raise
        raise OutputError(f"cannot write {what}: {one_line(exc)}", path) from None


def copy_into(source: Path, target: Target) -> None:
    """Write ``source``'s bytes into the special file ``target`` (a FIFO, /dev/stdout...) without replacing it."""
    if target.fd is not None:
        for stream in (sys.stdout, sys.stderr):  # what was printed before goes first
            stream.flush()
        with open(source, "rb") as data:
            while block := data.read(1 << 20):
                view = memoryview(block)
                while view:
                    view = view[os.write(target.fd, view):]
        return
    handle = os.open(target.file, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(handle, "wb") as written, open(source, "rb") as data:
        shutil.copyfileobj(data, written, 1 << 20)


def staged_file(target: Target) -> Path:
    """An empty temporary file to write ``target``'s new content into before it lands (:func:`put_in_place`):
    hidden beside the file it replaces (``.NAME.XXXXXXXX.tmp``, so globs like ``*.parquet`` never see it and
    :func:`sweep_temporaries` finds a killed writer's), its folder created if missing; in TMPDIR for a
    special file, which is written into, never replaced."""
    if target.special:
        handle, name = tempfile.mkstemp(prefix="evalcore-output-", suffix=".tmp")
    else:
        target.file.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{target.file.name[:200]}.", suffix=".tmp", dir=target.file.parent)
    os.close(handle)
    return Path(name)


def put_in_place(staged: Path, target: Target) -> None:
    """The written ``staged`` file (:func:`staged_file`) in place: renamed over ``target``'s file in one atomic
    step (through a symlink: its target is replaced, the link stays), or copied into a special file and removed."""
    if target.special:
        copy_into(staged, target)
        staged.unlink()
    else:
        os.replace(staged, target.file)


def _reason(exc: OSError) -> str:
    """The OS's words for an error (``No space left on device``), without Arrow's or Python's decoration."""
    if exc.errno in errno_codes.errorcode:
        return os.strerror(exc.errno)
    return one_line(exc.strerror or exc)


def _is_duckdb_io_error(exc: Exception) -> bool:
    duckdb = sys.modules.get("duckdb")
    return duckdb is not None and isinstance(exc, (duckdb.IOException, duckdb.OutOfMemoryException))


STALE_TEMPORARY_SECONDS = 3600.0
"""A hidden ``.….tmp`` file untouched for longer than this is the leftover of a killed writer, not a write in
progress (:func:`sweep_temporaries`)."""


def _is_stale_temporary(item: os.DirEntry, now: float) -> bool:
    return (item.name.startswith(".") and item.name.endswith(".tmp") and item.is_file(follow_symlinks=False)
            and now - item.stat(follow_symlinks=False).st_mtime > STALE_TEMPORARY_SECONDS)


def sweep_temporaries(folder: Path) -> int:
    """Delete the hidden ``.….tmp`` files (what :func:`staged_file` makes for
    :func:`evalcore.formats.atomic_path`) directly in ``folder`` that are older than
    :data:`STALE_TEMPORARY_SECONDS`; returns how many. Errors are ignored: another process may be sweeping too."""
    import time

    removed = 0
    try:
        with os.scandir(folder) as listing:
            for item in listing:
                try:
                    if _is_stale_temporary(item, time.time()):
                        os.unlink(item.path)
                        removed += 1
                except OSError:
                    continue
    except OSError:
        pass
    return removed
