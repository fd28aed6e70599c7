"""af.gfile and af.io.gfile against the os module on tmp_path, and TF's error classes.

Behaviour and messages checked against TF 2.21's tf.compat.v1.gfile / tf.io.gfile on the same calls
(lazy GFile opening, byte counts in text mode, errors for missing and existing paths)."""

from __future__ import annotations

import os
import sys

import pytest

import asyncflow as af

g = af.gfile
E = af.errors


def test_files_and_directories(tmp_path):
    d = str(tmp_path)
    assert g.Exists(d) and g.IsDirectory(d) and not g.Exists(d + "/a")
    g.MakeDirs(d + "/x/y/z")
    g.MakeDirs(d + "/x/y/z")  # existing: fine
    g.MkDir(d + "/x/m")
    g.MkDir(d + "/x/m")  # existing: fine in TF 2.21
    assert sorted(os.listdir(d + "/x")) == ["m", "y"] and g.IsDirectory(d + "/x/y/z")
    with g.GFile(d + "/x/f.txt", "w") as f:
        f.write("one\n")
        f.write(b"two\n")
        assert f.tell() == 8
    assert open(d + "/x/f.txt").read() == "one\ntwo\n"
    assert g.ListDirectory(d + "/x") == ["f.txt", "m", "y"] == g.ListDirectory(d + "/x/")
    assert g.Glob(d + "/x/*") == [d + "/x/f.txt", d + "/x/m", d + "/x/y"]
    assert g.Glob([d + "/x/f*", d + "/x/y/*"]) == [d + "/x/f.txt", d + "/x/y/z"]
    assert g.Glob(d + "/nothing*") == []
    st = g.Stat(d + "/x/f.txt")
    assert (st.length, st.is_directory, st.mtime_nsec) == (8, False, os.stat(d + "/x/f.txt").st_mtime_ns)
    assert g.Stat(d + "/x").is_directory
    g.Copy(d + "/x/f.txt", d + "/x/g.txt")
    g.Copy(d + "/x/f.txt", d + "/x/g.txt", overwrite=True)
    g.Rename(d + "/x/g.txt", d + "/x/h.txt")
    assert open(d + "/x/h.txt").read() == "one\ntwo\n" and not os.path.exists(d + "/x/g.txt")
    g.Rename(d + "/x/h.txt", d + "/x/f.txt", overwrite=True)
    g.Remove(d + "/x/f.txt")
    assert not os.path.exists(d + "/x/f.txt")
    g.DeleteRecursively(d + "/x")
    assert os.listdir(d) == []


def test_walk(tmp_path):
    d = str(tmp_path)
    os.makedirs(d + "/w/a/b")
    for name in ["w/f1", "w/a/f2"]:
        open(os.path.join(d, name), "w").close()
    rel = [(os.path.relpath(top, d), dirs, files) for top, dirs, files in g.Walk(d + "/w")]
    assert rel == [("w", ["a"], ["f1"]), ("w/a", ["b"], ["f2"]), ("w/a/b", [], [])]
    rel = [os.path.relpath(top, d) for top, _, _ in g.Walk(d + "/w", in_order=False)]
    assert rel == ["w/a/b", "w/a", "w"]
    assert list(g.Walk(d + "/missing")) == []
    errors_seen = []
    assert list(af.io.gfile.walk(d + "/missing", onerror=errors_seen.append)) == []
    assert [type(e) for e in errors_seen] == [E.NotFoundError]


def test_gfile_reading(tmp_path):
    path = str(tmp_path / "a.txt")
    with open(path, "wb") as f:
        f.write("héllo\nworld\nbytes\n".encode())
    f = g.GFile(path)
    assert f.read(3) == "hé" and f.tell() == 3  # n counts bytes, in text mode too (TF)
    assert f.readline() == "llo\n"
    assert f.readlines() == ["world\n", "bytes\n"]
    assert f.readline() == ""
    f.seek(0)
    assert list(f) == ["héllo\n", "world\n", "bytes\n"]
    f.seek(-3, 2)
    assert f.read() == "es\n"
    f.seek(2)
    f.seek(1, 1)
    assert f.tell() == 3 and f.read(2) == "ll"
    assert f.size() == 19 and f.name == path and f.mode == "r" and f.seekable()
    f.close()
    assert f.read(1) == "h"  # a closed GFile reopens at the start, as TF's
    with g.GFile(path, "rb") as fb:
        assert fb.read(4) == b"h\xc3\xa9l" and fb.readline() == b"lo\n"
    assert g.FastGFile(path, "rb").read(2) == b"h\xc3"
    assert g.Open(path).read(1) == "h"


def test_gfile_writing_modes(tmp_path):
    path = str(tmp_path / "w.txt")
    with g.GFile(path, "w"):
        pass
    assert not os.path.exists(path)  # nothing written, no file: TF opens lazily
    with g.GFile(path, "w") as f:
        f.write("ab")
        f.flush()
        assert open(path).read() == "ab"
    with g.GFile(path, "a") as f:
        f.write("cd")
    assert open(path).read() == "abcd"
    with g.GFile(path, "wb") as f:
        f.write(b"\x00\x01")
    assert open(path, "rb").read() == b"\x00\x01"


def test_errors_are_tfs(tmp_path):
    d = str(tmp_path)
    missing = d + "/a.txt"
    with pytest.raises(E.NotFoundError, match=f"^{missing}; No such file or directory$"):
        g.Remove(missing)
    with pytest.raises(E.NotFoundError, match=f"^{missing}; No such file or directory$"):
        g.Stat(missing)
    with pytest.raises(E.NotFoundError, match=f"^{d}/nodir not found$"):
        g.DeleteRecursively(d + "/nodir")
    with pytest.raises(E.NotFoundError, match=f"^Could not find directory {d}/nodir$"):
        g.ListDirectory(d + "/nodir")
    f = g.GFile(missing)  # no error yet
    with pytest.raises(E.NotFoundError, match="No such file or directory"):
        f.read()
    with pytest.raises(E.NotFoundError):
        g.MkDir(d + "/q/r")
    with pytest.raises(E.NotFoundError):
        g.Copy(missing, d + "/b")
    with pytest.raises(E.NotFoundError):
        g.Rename(missing, d + "/b")
    assert not g.Exists(missing) and not g.IsDirectory(missing)
    with open(missing, "w") as out:
        out.write("x")
    with pytest.raises(E.PermissionDeniedError, match="^File isn't open for writing$"):
        g.GFile(missing, "r").write("a")
    with pytest.raises(E.PermissionDeniedError, match="^File isn't open for reading$"):
        g.GFile(missing, "a").read()
    with pytest.raises(E.InvalidArgumentError, match=r"^mode is not 'r' or 'w' or 'a' or 'r\+' or 'w\+' or 'a\+'$"):
        g.GFile(missing, "x")
    with pytest.raises(E.InvalidArgumentError, match="^Invalid whence argument: 5. Valid values are 0, 1, or 2.$"):
        g.GFile(missing).seek(0, 5)
    with pytest.raises(E.NotFoundError, match=f"^Could not find directory {missing}$"):
        g.ListDirectory(missing)
    with pytest.raises(E.FailedPreconditionError, match=f"^{missing} is not a directory$"):
        g.MakeDirs(missing + "/sub")
    with pytest.raises(E.AlreadyExistsError, match="^file already exists$"):
        g.Copy(missing, missing)
    with pytest.raises(E.AlreadyExistsError, match="^file already exists$"):
        g.Rename(missing, missing)
    os.mkdir(d + "/dir")
    with pytest.raises(E.FailedPreconditionError, match="Is a directory"):
        g.Remove(d + "/dir")


def test_io_gfile_has_tf2s_lowercase_names(tmp_path):
    io = af.io.gfile
    names = ["GFile", "copy", "exists", "get_registered_schemes", "glob", "isdir", "join", "listdir", "makedirs",
             "mkdir", "remove", "rename", "rmtree", "stat", "walk"]  # TF 2.21's tf.io.gfile
    assert all(hasattr(io, n) for n in names)
    p = io.join(str(tmp_path), "a", "b")
    io.makedirs(p)
    assert io.isdir(p) and io.listdir(str(tmp_path)) == ["a"]
    with io.GFile(io.join(p, "f"), "w") as f:
        f.write("z")
    assert io.exists(io.join(p, "f")) and io.stat(io.join(p, "f")).length == 1
    io.rmtree(str(tmp_path / "a"))
    assert not io.exists(p)
    assert io.join("gs://bucket", "b") == "gs://bucket/b"


def test_other_schemes_need_fsspec(monkeypatch):
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if it were not installed
    with pytest.raises(E.UnimplementedError, match="File system scheme 'zz' not implemented .*fsspec"):
        g.Exists("zz://bucket/x")
    assert af.io.gfile.get_registered_schemes() == ["", "file"]


def test_fsspec_memory_file_system():
    pytest.importorskip("fsspec")
    root = "memory://af_gfile_test"
    g.MakeDirs(root + "/d")
    with g.GFile(root + "/d/a.txt", "w") as f:
        f.write("hi\nthere\n")
    assert g.Exists(root + "/d/a.txt") and g.ListDirectory(root + "/d") == ["a.txt"]
    assert g.GFile(root + "/d/a.txt").readlines() == ["hi\n", "there\n"]
    assert g.Stat(root + "/d/a.txt").length == 9
    g.Copy(root + "/d/a.txt", root + "/d/b.txt")
    g.Rename(root + "/d/b.txt", root + "/d/c.txt")
    assert [files for _, _, files in g.Walk(root + "/d")] == [["a.txt", "c.txt"]]
    assert [p.endswith("/d/c.txt") for p in g.Glob(root + "/d/c*")] == [True]
    with pytest.raises(E.NotFoundError):
        g.Remove(root + "/zz")
    g.DeleteRecursively(root)
    assert not g.Exists(root + "/d/a.txt")
