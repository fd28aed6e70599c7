"""`af.gfile` (TF1's names) and `af.io.gfile` (TF2's lowercase names): files on the local disk, and on
any other URL scheme (`s3://`, `gs://`, `memory://`, ...) through fsspec when it is installed.

Behaviour and errors follow TF (checked against TF 2.21): a missing file is `NotFoundError`
("path; No such file or directory"), an existing target of `Copy`/`Rename` without `overwrite`
is `AlreadyExistsError`, `Remove` of a directory and `MakeDirs` through a file are
`FailedPreconditionError`, a scheme nobody serves is `UnimplementedError`. `GFile` opens its file
lazily, as TF's: a missing file raises at the first read, a file opened for writing appears at
the first write; `read(n)` counts bytes in text mode too (and decodes them as UTF-8), `tell` and
`seek` are byte offsets. `ListDirectory`, `Glob` and `Walk` list entries sorted by name.
"""

from __future__ import annotations

import errno
import glob as _glob
import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

from asyncflow import errors

# -- where a path lives: the local disk, or an fsspec file system ---------------------------------------------


def _scheme(path: str) -> str:
    head, sep, _ = path.partition("://")
    return head if sep and head.isidentifier() else ""


def _fs(path: str) -> Any:
    """The fsspec file system for a URL path, or None for a local one."""
    scheme = _scheme(path)
    if scheme in ("", "file"):
        return None
    try:
        import fsspec
    except ImportError:
        raise errors.UnimplementedError(
            None, None, f"File system scheme '{scheme}' not implemented (file: '{path}'): asyncflow reads URL paths "
                        f"through fsspec, which is not installed (pip install fsspec, plus the scheme's package, "
                        f"e.g. s3fs or gcsfs)") from None
    try:
        return fsspec.filesystem(scheme)
    except (ImportError, ValueError) as e:
        raise errors.UnimplementedError(None, None, f"File system scheme '{scheme}' not implemented (file: '{path}'): "
                                                    f"{e}") from None


def _local(path: Any) -> str:
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = path.decode()
    return path[len("file://"):] if path.startswith("file://") else path


def _os_error(e: OSError, path: str) -> errors.OpError:
    """TF's error class for an OSError, with TF's "path; reason" message."""
    reason = e.strerror or str(e)
    message = f"{path}; {reason}"
    if isinstance(e, FileNotFoundError):
        return errors.NotFoundError(None, None, message)
    if isinstance(e, FileExistsError):
        return errors.AlreadyExistsError(None, None, message)
    if isinstance(e, PermissionError):
        return errors.PermissionDeniedError(None, None, message)
    if e.errno in (errno.EISDIR, errno.ENOTDIR, errno.ENOTEMPTY):
        return errors.FailedPreconditionError(None, None, message)
    return errors.UnknownError(None, None, message)


# -- TF1's functions ---------------------------------------------------------------------------------------


def Exists(filename: Any) -> bool:  # noqa: N802 - TF's names
    """True when the file or directory exists."""
    path = _local(filename)
    fs = _fs(path)
    return fs.exists(path) if fs is not None else os.path.exists(path)


def IsDirectory(dirname: Any) -> bool:  # noqa: N802
    path = _local(dirname)
    fs = _fs(path)
    return fs.isdir(path) if fs is not None else os.path.isdir(path)


def Remove(filename: Any) -> None:  # noqa: N802
    """Deletes a file; NotFoundError when missing, FailedPreconditionError for a directory."""
    path = _local(filename)
    fs = _fs(path)
    if fs is not None:
        if not fs.exists(path):
            raise errors.NotFoundError(None, None, f"{path}; No such file or directory")
        fs.rm_file(path)
        return
    try:
        os.remove(path)
    except IsADirectoryError as e:
        raise _os_error(e, path) from None
    except OSError as e:
        # Linux reports EISDIR, macOS EPERM for unlink() of a directory: say it as TF does, either way.
        if os.path.isdir(path):
            raise errors.FailedPreconditionError(None, None, f"{path}; Is a directory") from None
        raise _os_error(e, path) from None


def DeleteRecursively(dirname: Any) -> None:  # noqa: N802
    """Deletes a directory tree (or a file); NotFoundError when missing."""
    path = _local(dirname)
    fs = _fs(path)
    if fs is not None:
        if not fs.exists(path):
            raise errors.NotFoundError(None, None, f"{path} not found")
        fs.rm(path, recursive=True)
        return
    if not os.path.lexists(path):
        raise errors.NotFoundError(None, None, f"{path} not found")
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    except OSError as e:
        raise _os_error(e, path) from None


def MkDir(dirname: Any) -> None:  # noqa: N802
    """Creates one directory; its parent must exist (NotFoundError); an existing path is fine (TF 2.21)."""
    path = _local(dirname)
    fs = _fs(path)
    if fs is not None:
        fs.mkdir(path, create_parents=False)
        return
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except OSError as e:
        raise _os_error(e, path) from None


def MakeDirs(dirname: Any) -> None:  # noqa: N802
    """Creates a directory and its missing parents; FailedPreconditionError when a parent is a file."""
    path = _local(dirname)
    fs = _fs(path)
    if fs is not None:
        fs.makedirs(path, exist_ok=True)
        return
    parent = path.rstrip("/") or "/"
    while parent and not os.path.exists(parent):  # the nearest existing ancestor must be a directory
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise errors.FailedPreconditionError(None, None, f"{parent} is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise _os_error(e, path) from None


def ListDirectory(dirname: Any) -> list[str]:  # noqa: N802
    """The names (not paths) in a directory, sorted; NotFoundError when it is not a directory."""
    path = _local(dirname)
    fs = _fs(path)
    if fs is not None:
        if not fs.isdir(path):
            raise errors.NotFoundError(None, None, f"Could not find directory {path}")
        return sorted(os.path.basename(p.rstrip("/")) for p in fs.ls(path, detail=False))
    if not os.path.isdir(path):
        raise errors.NotFoundError(None, None, f"Could not find directory {path}")
    return sorted(os.listdir(path))


def Glob(filename: Any) -> list[str]:  # noqa: N802
    """The paths matching a pattern (or any of a list of patterns), sorted per pattern; [] when none match."""
    patterns = [filename] if isinstance(filename, (str, bytes, os.PathLike)) else list(filename)
    found: list[str] = []
    for pattern in patterns:
        path = _local(pattern)
        fs = _fs(path)
        if fs is not None:
            found += sorted(p if _scheme(p) else fs.unstrip_protocol(p) for p in fs.glob(path))
        else:
            found += sorted(_glob.glob(path))
    return found


def _copy_or_rename(src: str, dst: str, overwrite: bool, move: bool) -> None:
    fs = _fs(src)
    if (fs is None) != (_fs(dst) is None) or (fs is not None and _scheme(src) != _scheme(dst)):
        if move:
            raise errors.UnimplementedError(None, None, f"Rename of {src} to {dst}: the paths are on different "
                                                        f"file systems")
        if not overwrite and Exists(dst):
            raise errors.AlreadyExistsError(None, None, "file already exists")
        with GFile(src, "rb") as f_in, GFile(dst, "wb") as f_out:
            f_out.write(f_in.read())
        return
    exists = fs.exists if fs is not None else os.path.exists
    if not exists(src):
        raise errors.NotFoundError(None, None, f"{src}; No such file or directory")
    if not overwrite and exists(dst):
        raise errors.AlreadyExistsError(None, None, "file already exists")
    if fs is not None:
        (fs.mv if move else fs.copy)(src, dst)
        return
    try:
        if move:
            os.replace(src, dst)  # atomic, replacing dst: overwrite was checked above
        else:
            tmp = f"{dst}.tmp{os.getpid()}"
            shutil.copyfile(src, tmp)  # written aside and renamed: a reader never sees half a file
            os.replace(tmp, dst)
    except OSError as e:
        raise _os_error(e, src) from None


def Copy(oldpath: Any, newpath: Any, overwrite: bool = False) -> None:  # noqa: N802
    """Copies a file; AlreadyExistsError when `newpath` exists and not `overwrite`."""
    _copy_or_rename(_local(oldpath), _local(newpath), overwrite, move=False)


def Rename(oldname: Any, newname: Any, overwrite: bool = False) -> None:  # noqa: N802
    """Renames a file or directory; AlreadyExistsError when `newname` exists and not `overwrite`."""
    _copy_or_rename(_local(oldname), _local(newname), overwrite, move=True)


class FileStatistics:
    """What `Stat` returns: `length` (bytes), `mtime_nsec` and `is_directory`, as TF's."""

    def __init__(self, length: int = 0, mtime_nsec: int = 0, is_directory: bool = False):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self) -> str:
        return f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, is_directory={self.is_directory})"


def Stat(filename: Any) -> FileStatistics:  # noqa: N802
    path = _local(filename)
    fs = _fs(path)
    if fs is not None:
        if not fs.exists(path):
            raise errors.NotFoundError(None, None, f"{path}; No such file or directory")
        info = fs.info(path)
        mtime = info.get("mtime") or info.get("LastModified") or 0
        mtime_ns = int(mtime.timestamp() * 1e9) if hasattr(mtime, "timestamp") else int(float(mtime) * 1e9)
        return FileStatistics(int(info.get("size") or 0), mtime_ns, info.get("type") == "directory")
    try:
        st = os.stat(path)
    except OSError as e:
        raise _os_error(e, path) from None
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(path))


def _walk(top: str, topdown: bool, onerror: Callable[[Exception], Any] | None) -> Iterator[tuple]:
    try:
        names = ListDirectory(top)
    except errors.NotFoundError as e:
        if onerror is not None:
            onerror(e)
        return
    subdirs, files = [], []
    for name in names:
        (subdirs if IsDirectory(join(top, name)) else files).append(name)
    here = (top, subdirs, files)
    if topdown:
        yield here
    for name in subdirs:
        yield from _walk(join(top, name), topdown, onerror)
    if not topdown:
        yield here


def Walk(top: Any, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:  # noqa: N802
    """(dirname, subdirectory names, file names) for `top` and every directory under it: parents first
    when `in_order`, else children first; nothing when `top` does not exist."""
    return _walk(_local(top), in_order, None)


# -- files ---------------------------------------------------------------------------------------------------


class GFile:
    """`af.gfile.GFile(name, mode="r")`: a file with TF's methods; modes r, w, a, r+, w+, a+, with b for bytes."""

    def __init__(self, name: Any, mode: str = "r"):
        self._name = name
        self._mode = mode
        self._binary = "b" in mode
        base = mode.replace("b", "")
        if base not in ("r", "w", "a", "r+", "w+", "a+"):
            raise errors.InvalidArgumentError(None, None, "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self._readable = base in ("r", "r+", "a+", "w+")
        self._writable = base in ("a", "w", "r+", "a+", "w+")
        self._base = base
        self._file: Any = None
        self._opened_once = False  # "w" truncates only at the first open, not after close() and reuse

    name = property(lambda self: self._name)
    mode = property(lambda self: self._mode)

    def _open(self) -> Any:
        if self._file is None:
            path = _local(self._name)
            fs = _fs(path)
            base = self._base
            if self._opened_once and base.startswith("w"):
                base = "r+" if "+" in base else "a"
            try:
                self._file = (fs.open(path, base + "b") if fs is not None else open(path, base + "b"))  # noqa: SIM115
            except OSError as e:
                raise _os_error(e, path) from None
            self._opened_once = True
        return self._file

    def _for_reading(self) -> Any:
        if not self._readable:
            raise errors.PermissionDeniedError(None, None, "File isn't open for reading")
        return self._open()

    def _for_writing(self) -> Any:
        if not self._writable:
            raise errors.PermissionDeniedError(None, None, "File isn't open for writing")
        return self._open()

    def _value(self, data: bytes) -> Any:
        return data if self._binary else data.decode("utf-8")

    def size(self) -> int:
        return Stat(self._name).length

    def write(self, file_content: Any) -> None:
        """Appends `file_content` (str, encoded as UTF-8, or bytes) at the end of what was written."""
        data = file_content.encode("utf-8") if isinstance(file_content, str) else bytes(file_content)
        self._for_writing().write(data)

    def read(self, n: int = -1) -> Any:
        """`n` bytes from the current position (all to the end with -1), as bytes or decoded text."""
        return self._value(self._for_reading().read(n if n >= 0 else -1))

    def readline(self) -> Any:
        """The next line with its newline; '' at the end."""
        return self._value(self._for_reading().readline())

    def readlines(self) -> list[Any]:
        return [self._value(line) for line in self._for_reading().readlines()]

    def seek(self, offset: int | None = None, whence: int = 0, position: int | None = None) -> None:
        f = self._for_reading()
        if offset is None and position is None:
            raise TypeError("seek(): offset argument required")
        if offset is not None and position is not None:
            raise TypeError("seek(): offset and position may not be set simultaneously.")
        if whence not in (0, 1, 2):
            raise errors.InvalidArgumentError(None, None,
                                              f"Invalid whence argument: {whence}. Valid values are 0, 1, or 2.")
        f.seek(offset if offset is not None else position, whence)

    def tell(self) -> int:
        return (self._for_reading() if self._readable else self._for_writing()).tell()

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self) -> GFile:
        return self

    def __next__(self) -> Any:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__


FastGFile = GFile
Open = GFile


# -- TF2's lowercase names (af.io.gfile) ----------------------------------------------------------------------


def join(path: Any, *paths: Any) -> str:
    """Joins path components with '/', keeping a URL's scheme (TF's `io.gfile.join`)."""
    return os.path.join(os.fspath(path), *(os.fspath(p) for p in paths))


def walk(top: Any, topdown: bool = True, onerror: Callable[[Exception], Any] | None = None) -> Iterator[tuple]:
    """TF2's `io.gfile.walk`: as `Walk`, and `onerror(error)` is called when `top` cannot be listed."""
    return _walk(_local(top), topdown, onerror)


def get_registered_schemes() -> list[str]:
    """The schemes served: the local file system, and fsspec's when it is installed."""
    try:
        import fsspec
    except ImportError:
        return ["", "file"]
    return ["", "file", *sorted(fsspec.available_protocols())]


class _IoGfile:
    """The namespace `af.io.gfile`: TF2's lowercase names over the same functions."""

    GFile = GFile
    copy = staticmethod(Copy)
    exists = staticmethod(Exists)
    get_registered_schemes = staticmethod(get_registered_schemes)
    glob = staticmethod(Glob)
    isdir = staticmethod(IsDirectory)
    join = staticmethod(join)
    listdir = staticmethod(ListDirectory)
    makedirs = staticmethod(MakeDirs)
    mkdir = staticmethod(MkDir)
    remove = staticmethod(Remove)
    rename = staticmethod(Rename)
    rmtree = staticmethod(DeleteRecursively)
    stat = staticmethod(Stat)
    walk = staticmethod(walk)

    def __repr__(self) -> str:
        return "<af.io.gfile>"


io_gfile = _IoGfile()

__all__ = ["Copy", "DeleteRecursively", "Exists", "FastGFile", "FileStatistics", "GFile", "Glob", "IsDirectory",
           "ListDirectory", "MakeDirs", "MkDir", "Open", "Remove", "Rename", "Stat", "Walk", "join", "walk",
           "get_registered_schemes"]
