"""Which folders and lock files lgrep accepts to keep sockets, locks and indexes in."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from lgrep_core.domain.errors import ConfigError
from lgrep_core.runtime.locks import (
    acquire_pid_lock,
    check_private_dir,
    ensure_private_dir,
    lock_holder_pids,
    release_pid_lock,
)


def test_a_new_cache_dir_is_created_private(tmp_path: Path) -> None:
    cache = tmp_path / "a" / "cache"
    ensure_private_dir(cache)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_folder_others_may_write_is_refused(tmp_path: Path, mode: int) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(mode)
    with pytest.raises(ConfigError, match=f"can be written by other users \\(mode {mode:04o}\\).*chmod go-w"):
        check_private_dir(cache)


def test_a_folder_above_that_others_may_write_is_refused_unless_sticky(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    (shared / "cache").mkdir(parents=True, mode=0o700)
    shared.chmod(0o777)  # anyone could rename cache away and put their own in its place
    with pytest.raises(ConfigError, match="another user can change"):
        check_private_dir(shared / "cache")
    shared.chmod(0o1777)  # sticky, like /tmp: only the owner may rename it
    check_private_dir(shared / "cache")


def test_a_symlink_to_a_private_folder_is_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    check_private_dir(tmp_path / "link")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_another_users_folder_and_lock_are_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    with pytest.raises(ConfigError, match="belongs to user id 65534"):
        check_private_dir(cache)
    lock = tmp_path / "x.lock"
    lock.write_text("1")
    os.chown(lock, 65534, 65534)
    with pytest.raises(ConfigError, match="belongs to user id 65534"):
        acquire_pid_lock(lock)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads /proc/locks")
def test_the_kernel_names_the_holder_of_a_lock(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    fd, _ = acquire_pid_lock(lock)
    assert fd is not None
    assert lock_holder_pids(lock) == {os.getpid()}
    release_pid_lock(fd)
    assert lock_holder_pids(lock) == set()
