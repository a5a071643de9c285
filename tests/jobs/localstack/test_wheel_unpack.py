"""The pinned wheel: its digest is checked, and no member may land outside the server folder."""

from __future__ import annotations

import hashlib
import stat
import zipfile
from pathlib import Path

import pytest

from jobs.localstack.errors import StackError
from jobs.localstack.triton_server import _unpack, member_target, verify_wheel


def _wheel(path: Path, members: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | 0o755) << 16
            archive.writestr(info, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return path


def test_a_wheel_with_the_pinned_digest_passes(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "w.whl", {"pytriton/tritonserver/bin/tritonserver": b"x"})
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert verify_wheel(wheel, digest) == wheel


def test_a_wheel_with_another_digest_is_deleted(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "w.whl", {"pytriton/tritonserver/bin/tritonserver": b"x"})
    with pytest.raises(StackError, match="not the pinned"):
        verify_wheel(wheel, "0" * 64)
    assert not wheel.exists()


def test_server_parts_are_unpacked_in_place(tmp_path: Path) -> None:
    wheel = _wheel(
        tmp_path / "w.whl",
        {
            "pytriton/tritonserver/bin/tritonserver": b"server",
            "nvidia_pytriton.libs/libx.so": b"lib",
            "pytriton/client.py": b"skipped",
        },
    )
    home = tmp_path / "home"
    _unpack(wheel, home)
    assert (home / "bin" / "tritonserver").read_bytes() == b"server"
    assert (home / "lib" / "libx.so").read_bytes() == b"lib"
    assert not (home / "client.py").exists()


@pytest.mark.parametrize(
    "name",
    [
        "pytriton/tritonserver/bin/../../../../escaped",
        "nvidia_pytriton.libs/../../escaped",
        "pytriton/tritonserver/backends/..\\..\\..\\escaped",
    ],
)
def test_members_that_climb_out_are_refused(tmp_path: Path, name: str) -> None:
    wheel = _wheel(tmp_path / "w.whl", {name: b"evil"})
    (tmp_path / "a").mkdir()
    with pytest.raises(StackError, match="leaves the target folder"):
        _unpack(wheel, tmp_path / "a" / "home")
    assert not list(tmp_path.rglob("escaped"))
    assert not (tmp_path / "a" / "home").exists()


def test_absolute_and_foreign_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="leaves the target folder"):
        member_target(tmp_path, zipfile.ZipInfo("/pytriton/tritonserver/bin/x"))
    with pytest.raises(StackError, match="not a part of the server"):
        member_target(tmp_path, zipfile.ZipInfo("etc/passwd"))


def test_symbolic_links_are_refused(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "w.whl", {}, {"pytriton/tritonserver/bin/tritonserver": "/etc"})
    with pytest.raises(StackError, match="symbolic link"):
        _unpack(wheel, tmp_path / "home")
