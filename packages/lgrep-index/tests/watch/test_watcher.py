"""Tests of the file watcher: real file system events in temporary folders, real threads.

Nothing here sleeps to make a race pass: a test waits for the batch it expects on a queue, with a
generous timeout. To show that something is NOT reported, it changes it, then writes a sentinel file,
and checks the batches up to the one carrying the sentinel (events are handled in order).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import queue
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lgrep_core.domain.errors import NotFoundError
from lgrep_index.changes import ChangeBatch
from lgrep_index.walker import WalkOptions
from lgrep_index.watch import watcher
from lgrep_index.watch.watcher import ProjectWatcher

if sys.platform.startswith("linux"):  # watchdog's inotify module does not import elsewhere
    from lgrep_index.watch import inotify

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="the inotify backend and these timings are Linux's"
    ),
]

WAIT_S = 20.0  # generous: a loaded machine can stall a thread for seconds
FAST = {"debounce_s": 0.1, "max_delay_s": 1.0}
# watchdog's recursive inotify observer warns "Callback with id ... already exists" whenever it
# watches a new folder twice (harmless, but an error under this suite's warning filter). On Linux the
# watcher uses its own inotify backend; the observer backend (for other platforms) is tested here
# through watchdog's Linux observer, for its event handling.
BACKENDS = [
    "inotify",
    pytest.param("observer", marks=pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")),
]


class Batches:
    """`on_batch` for tests: a queue of batches, and ways to wait for them."""

    def __init__(self) -> None:
        self.queue: queue.Queue[ChangeBatch] = queue.Queue()
        self.threads: set[str] = set()

    def __call__(self, batch: ChangeBatch) -> None:
        self.threads.add(threading.current_thread().name)
        self.queue.put(batch)

    def until(self, done: Callable[[list[ChangeBatch]], bool], timeout: float = WAIT_S) -> list[ChangeBatch]:
        got: list[ChangeBatch] = []
        deadline = time.monotonic() + timeout
        while not done(got):
            try:
                got.append(self.queue.get(timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"timed out waiting; batches so far: {got}") from None
        return got

    def until_changed(self, *paths: str) -> list[ChangeBatch]:
        return self.until(lambda got: set(paths) <= changed(got))

    def next(self) -> ChangeBatch:
        return self.until(lambda got: len(got) == 1)[0]


def changed(batches: list[ChangeBatch]) -> set[str]:
    return {p for b in batches for p in b.changed}


def removed(batches: list[ChangeBatch]) -> set[str]:
    return {p for b in batches for p in b.removed_prefixes}


def write(root: Path, rel: str, text: str = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture(autouse=True)
def no_thread_left_behind() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not left, f"threads still running: {left}"


@pytest.fixture
def watch() -> Iterator[Callable[..., tuple[ProjectWatcher, Batches]]]:
    """Start a watcher (stopped at teardown whatever happens)."""
    started: list[ProjectWatcher] = []

    def make(root: Path, options: WalkOptions | None = None, **kwargs: object) -> tuple[ProjectWatcher, Batches]:
        batches = Batches()
        w = ProjectWatcher(root, options, batches, **{**FAST, **kwargs})  # type: ignore[arg-type]
        started.append(w)
        w.start()
        return w, batches

    yield make
    for w in started:
        w.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root, "src/app.py", "def main():\n    return 1\n")
    write(root, "src/util/helpers.py", "def helper():\n    return 2\n")
    write(root, "README.md", "# project\n")
    write(root, ".gitignore", "*.log\ngenerated/\n")
    write(root, ".git/HEAD", "ref: refs/heads/main\n")
    write(root, ".git/info/exclude", "# nothing\n")
    write(root, "node_modules/pkg/index.js", "module.exports = 1\n")
    write(root, "build/out.py", "x = 1\n")
    return root


# --- one change, many changes ------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_edit_gives_one_batch(project: Path, watch, backend: str) -> None:
    w, batches = watch(project, backend=backend)
    write(project, "src/app.py", "def main():\n    return 2\n")
    got = batches.until_changed("src/app.py")
    assert len(got) == 1 and got[0] == ChangeBatch(changed=frozenset({"src/app.py"}))
    assert got[0].first_event_at > 0
    assert batches.threads == {w._thread.name}  # never called from watchdog's threads
    write(project, "sentinel.py")
    after = batches.until_changed("sentinel.py")
    assert "src/app.py" not in changed(after)  # the edit was reported once


@pytest.mark.parametrize("backend", BACKENDS)
def test_quick_edits_of_one_file_are_coalesced(project: Path, watch, backend: str) -> None:
    _, batches = watch(project, backend=backend, debounce_s=0.5, max_delay_s=5.0)
    for i in range(50):
        write(project, "src/app.py", f"x = {i}\n")
    got = batches.until_changed("src/app.py")
    assert got == [ChangeBatch(changed=frozenset({"src/app.py"}))]


# --- editors, folders ----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_atomic_save_reports_the_target(project: Path, watch, backend: str) -> None:
    _, batches = watch(project, backend=backend)
    temp = write(project, "src/.app.py.swp", "def main():\n    return 3\n")
    temp.replace(project / "src" / "app.py")
    write(project, "sentinel.py")
    got = batches.until_changed("src/app.py", "sentinel.py")
    assert all(not b.rescan and not b.removed_prefixes for b in got)
    if backend == "inotify":
        # created and renamed away within the batch: the temp file never appears
        assert changed(got) == {"src/app.py", "sentinel.py"}


def test_temp_files_that_come_and_go_leave_nothing(project: Path, watch) -> None:
    _, batches = watch(project, backend="inotify")
    for name in ["4913", "src/.#app.py", "src/app.py.tmp.123"]:
        write(project, name).unlink()
    write(project, "sentinel.py")
    assert changed(batches.until_changed("sentinel.py")) == {"sentinel.py"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_new_folder_with_files(project: Path, watch, backend: str) -> None:
    w, batches = watch(project, backend=backend)
    new = project / "pkg" / "sub"
    new.mkdir(parents=True)  # files written right after: watchdog synthesizes `created`, sometimes twice
    write(project, "pkg/sub/a.py")
    write(project, "pkg/b.py")
    expected = {"pkg/sub/a.py", "pkg/b.py"}
    if backend == "inotify":
        # A folder created inside a folder that was itself just created, before anyone could watch it:
        # watchdog's recursive inotify observer misses the files of such a folder now and then.
        write(project, "pkg/sub/deeper/c.py")
        expected.add("pkg/sub/deeper/c.py")
    got = batches.until_changed(*expected)
    assert changed(got) == expected  # files only, no folders
    if backend == "inotify":
        assert {"pkg", "pkg/sub", "pkg/sub/deeper"} <= set(w.watched_folders())
    write(project, "pkg/sub/d.py")  # the new folders are watched
    batches.until_changed("pkg/sub/d.py")


@pytest.mark.parametrize("backend", BACKENDS)
def test_folder_renamed(project: Path, watch, backend: str) -> None:
    w, batches = watch(project, backend=backend)
    (project / "src" / "util").rename(project / "src" / "tools")
    got = batches.until(lambda got: "src/util" in removed(got) and "src/tools/helpers.py" in changed(got))
    assert not any(p.startswith("src/util/") for p in changed(got) if backend == "inotify")
    assert all(not b.rescan for b in got)
    if backend == "inotify":
        assert "src/tools" in w.watched_folders() and "src/util" not in w.watched_folders()
    write(project, "src/tools/more.py")
    batches.until_changed("src/tools/more.py")


@pytest.mark.parametrize("backend", BACKENDS)
def test_folder_deleted(project: Path, watch, backend: str) -> None:
    w, batches = watch(project, backend=backend)
    shutil.rmtree(project / "src")
    got = batches.until(lambda got: "src" in removed(got))
    assert removed(got) == {"src"}
    assert not any(p.startswith("src/") for p in changed(got))
    if backend == "inotify":
        assert not [f for f in w.watched_folders() if f.startswith("src")]


def test_folder_moved_in_from_outside_and_out_again(project: Path, tmp_path: Path, watch) -> None:
    write(tmp_path, "elsewhere/lib/mod.py")
    _, batches = watch(project, backend="inotify")
    (tmp_path / "elsewhere" / "lib").rename(project / "lib")
    batches.until_changed("lib/mod.py")
    (project / "lib").rename(tmp_path / "lib-back")
    assert "lib" in removed(batches.until(lambda got: "lib" in removed(got)))
    write(tmp_path, "lib-back/after.py")  # no longer inside: not reported
    write(project, "sentinel.py")
    assert "lib/after.py" not in changed(batches.until_changed("sentinel.py"))


def test_folders_renamed_into_and_out_of_ignored_names(project: Path, watch) -> None:
    w, batches = watch(project, backend="inotify")
    (project / "build").rename(project / "buildinfo")  # `build` is ignored, `buildinfo` is not
    batches.until_changed("buildinfo/out.py")
    (project / "src" / "util").rename(project / "dist")  # into an ignored name: gone from the index
    got = batches.until(lambda got: "src/util" in removed(got))
    assert not any(p.startswith("dist/") for p in changed(got))
    assert "buildinfo" in w.watched_folders() and "dist" not in w.watched_folders()
    write(project, "dist/helpers.py", "x = 4\n")
    write(project, "sentinel.py")
    assert "dist/helpers.py" not in changed(batches.until_changed("sentinel.py"))


def test_names_that_are_not_utf8(project: Path, watch) -> None:
    _, batches = watch(project, backend="inotify")
    with open(os.fsencode(project / "src") + b"/caf\xe9.py", "wb") as f:  # noqa: PTH123 - a bytes path
        f.write(b"x = 1\n")
    batches.until_changed("src/caf\\xe9.py")


# --- what is ignored -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_ignored_paths_never_reach_a_batch(project: Path, watch, backend: str) -> None:
    options = WalkOptions(extra_ignore_patterns=("secret-notes/",))
    write(project, "venv2/pyvenv.cfg", "home = /usr\n")  # a virtualenv from the start (creating one is a rescan)
    w, batches = watch(project, options, backend=backend)
    ignored = [
        "node_modules/pkg/index.js",
        "node_modules/other/new.js",
        ".git/objects/ab/cdef",
        ".git/index",
        "build/out.py",
        "debug.log",
        "src/trace.log",
        "generated/api.py",
        "yarn.lock",
        "secret-notes/todo.md",
        "src/__pycache__/app.cpython-311.pyc",
        "venv2/lib/site.py",
    ]
    for rel in ignored:
        write(project, rel)
    write(project, "sentinel.py")
    got = batches.until_changed("sentinel.py")
    assert not changed(got) & set(ignored)
    assert not any(b.rescan for b in got)
    if backend == "inotify":
        for folder in w.watched_folders():
            assert folder.split("/")[0] not in {"node_modules", ".git", "build", "generated", "secret-notes"} or (
                folder == ".git/info"
            ), folder
        assert ".git/info" in w.watched_folders()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rule_file", [".gitignore", "src/.gitignore", "src/util/.lgrepignore", ".git/info/exclude"])
def test_a_changed_ignore_file_asks_for_a_rescan(project: Path, watch, backend: str, rule_file: str) -> None:
    _, batches = watch(project, backend=backend)
    write(project, rule_file, "helpers.py\n")
    got = batches.until(lambda got: any(b.rescan for b in got))
    rescan = next(b for b in got if b.rescan)
    assert rescan.reasons == (f"{rule_file} changed",) and not rescan.changed and not rescan.config_changed


def test_ignore_rules_that_change_move_the_watches(project: Path, watch) -> None:
    w, batches = watch(project, backend="inotify")
    assert "src/util" in w.watched_folders()
    write(project, ".gitignore", "util/\n")
    batches.until(lambda got: any(b.rescan for b in got))
    assert "src/util" not in w.watched_folders()  # placed before the rescan batch was handed over
    write(project, "src/util/helpers.py", "x = 2\n")
    write(project, "sentinel.py")
    assert "src/util/helpers.py" not in changed(batches.until_changed("sentinel.py"))
    (project / ".gitignore").unlink()
    batches.until(lambda got: any(b.rescan for b in got))
    assert "src/util" in w.watched_folders()
    write(project, "src/util/helpers.py", "x = 3\n")
    batches.until_changed("src/util/helpers.py")


def test_a_folder_that_becomes_a_cache_or_a_virtualenv_asks_for_a_rescan(project: Path, watch) -> None:
    w, batches = watch(project, backend="inotify")
    write(project, "src/util/pyvenv.cfg", "home = /usr\n")
    assert any(b.rescan for b in batches.until(lambda got: any(b.rescan for b in got)))
    assert "src/util" not in w.watched_folders()


def test_project_config_change(project: Path, watch) -> None:
    _, batches = watch(project, backend="inotify")
    write(project, ".lgrep.yaml", "index:\n  ignore_patterns: ['docs/']\n")
    batch = batches.until(lambda got: any(b.config_changed for b in got))[-1]
    assert batch.config_changed and batch.rescan and batch.reasons == (".lgrep.yaml changed",)


# --- the root ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["deleted", "moved", "parent-moved", "replaced"])
def test_root_gone_stops_the_watcher(project: Path, watch, backend: str, how: str) -> None:
    w, batches = watch(project, backend=backend)
    if how == "deleted":
        shutil.rmtree(project)
    elif how == "moved":
        project.rename(project.with_name("moved"))
    elif how == "parent-moved":
        project.parent.rename(project.parent.with_name(project.parent.name + "-moved"))
    else:
        shutil.rmtree(project)
        project.mkdir()
    got = batches.until(lambda got: any(b.root_gone for b in got))
    assert got[-1] == ChangeBatch(root_gone=True, reasons=got[-1].reasons) and got[-1].reasons
    w._thread.join(WAIT_S)  # it stops itself
    assert not w.running and not w._thread.is_alive()
    w.stop()  # and stopping it again is harmless


def test_start_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        ProjectWatcher(tmp_path / "missing", None, lambda b: None).start()
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotFoundError):
        ProjectWatcher(tmp_path / "file", None, lambda b: None).start()
    with pytest.raises(ValueError):
        ProjectWatcher(tmp_path, None, lambda b: None, debounce_s=2.0, max_delay_s=1.0)


# --- nothing outside the root ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_symlinks_lead_nowhere_outside(project: Path, tmp_path: Path, watch, backend: str) -> None:
    outside = tmp_path / "outside"
    write(outside, "etc/passwd", "root:x:0:0\n")
    (project / "etc").symlink_to(outside / "etc", target_is_directory=True)
    (project / "src" / "loop").symlink_to("..", target_is_directory=True)
    (project / "self").symlink_to(".", target_is_directory=True)
    (project / "up").symlink_to(project.parent, target_is_directory=True)
    started = time.monotonic()
    w, batches = watch(project, backend=backend)
    assert time.monotonic() - started < WAIT_S  # no endless descent down loop/loop/loop
    if backend == "inotify":
        assert set(w.watched_folders()) == {"", ".git/info", "src", "src/util"}
    write(outside, "etc/passwd", "changed\n")
    write(outside, "etc/new.conf")
    (project / "src" / "late").symlink_to(outside, target_is_directory=True)  # appears while watching
    write(outside, "after-link.py")
    write(project, "sentinel.py")
    got = batches.until_changed("sentinel.py")
    reported = changed(got)
    assert reported <= {"src/late", "sentinel.py"}  # the link itself, a path inside the root
    assert all(not b.rescan for b in got)
    if backend == "inotify":
        assert set(w.watched_folders()) == {"", ".git/info", "src", "src/util"}


def test_a_new_folder_with_a_symlink_loop_inside(project: Path, tmp_path: Path, watch) -> None:
    staging = tmp_path / "staging" / "pkg"
    write(staging, "a.py")
    (staging / "loop").symlink_to("..", target_is_directory=True)
    (staging / "out").symlink_to(tmp_path, target_is_directory=True)
    w, batches = watch(project, backend="inotify")
    staging.rename(project / "pkg")
    got = batches.until_changed("pkg/a.py")
    assert changed(got) <= {"pkg/a.py", "pkg/loop", "pkg/out"}
    assert "pkg" in w.watched_folders() and not [f for f in w.watched_folders() if f.startswith("pkg/")]


# --- load, errors and stopping ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_burst_of_2000_files_gives_few_batches(project: Path, watch, backend: str) -> None:
    _, batches = watch(project, backend=backend)
    names = {f"burst/f{i:04d}.py" for i in range(2000)}
    started = time.monotonic()
    (project / "burst").mkdir()
    for name in sorted(names):
        (project / name).write_text("x = 1\n")
    took = time.monotonic() - started
    got = batches.until(lambda got: names <= changed(got))
    # Every batch is handed over at the latest 1 s after its first event.
    assert len(got) <= took / 1.0 + 3, (len(got), took)
    assert all(not b.rescan for b in got)


def test_a_burst_past_the_threshold_is_a_rescan(project: Path, watch) -> None:
    _, batches = watch(project, backend="inotify", max_batch_paths=100)
    for i in range(300):
        write(project, f"burst/f{i:04d}.py")
    got = batches.until(lambda got: any(b.rescan for b in got))
    assert got[-1].reasons == ("more than 100 paths changed at once",) and not got[-1].changed


@pytest.mark.parametrize("backend", BACKENDS)
def test_stop_while_events_are_flowing(project: Path, watch, backend: str, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="lgrep_index")
    w, batches = watch(project, backend=backend)
    flowing = threading.Event()
    done = threading.Event()

    def churn() -> None:
        i = 0
        while not done.is_set():
            write(project, f"churn/d{i % 7}/f{i % 50}.py", f"x = {i}\n")
            if i % 20 == 0:
                shutil.rmtree(project / "churn" / f"d{(i // 20) % 7}", ignore_errors=True)
            i += 1
            if i == 200:
                flowing.set()

    writer = threading.Thread(target=churn, name="test-churn")
    writer.start()
    try:
        assert flowing.wait(WAIT_S)
        batches.until(lambda got: len(got) >= 1)
        w.stop()
        assert not w.running and not w._thread.is_alive()
        w.stop()
    finally:
        done.set()
        writer.join()
    assert not [r for r in caplog.records if r.name.startswith("lgrep_index")], caplog.text


def test_a_failing_on_batch_is_logged_and_watching_goes_on(project: Path, caplog) -> None:
    calls: queue.Queue[ChangeBatch] = queue.Queue()

    def on_batch(batch: ChangeBatch) -> None:
        calls.put(batch)
        if "src/app.py" in batch.changed:
            raise RuntimeError("the writer is broken")

    with ProjectWatcher(project, None, on_batch, **FAST) as w:  # type: ignore[arg-type]
        write(project, "src/app.py", "x = 2\n")
        assert "src/app.py" in calls.get(timeout=WAIT_S).changed
        write(project, "sentinel.py")
        assert "sentinel.py" in calls.get(timeout=WAIT_S).changed
        assert w.running
    assert "the writer is broken" in caplog.text


def test_stop_from_inside_on_batch(project: Path) -> None:
    done = threading.Event()
    holder: list[ProjectWatcher] = []

    def on_batch(batch: ChangeBatch) -> None:
        holder[0].stop()
        done.set()

    w = ProjectWatcher(project, None, on_batch, **FAST)  # type: ignore[arg-type]
    holder.append(w)
    w.start()
    w.start()  # idempotent
    write(project, "src/app.py", "x = 2\n")
    assert done.wait(WAIT_S)
    w._thread.join(WAIT_S)
    assert not w._thread.is_alive()
    w.stop()
    with pytest.raises(RuntimeError):
        w.start()


def test_watch_limit_reached_degrades_then_recovers(project: Path, watch, monkeypatch, caplog) -> None:
    real = inotify._Reader.add_callback
    limit = {"on": True}

    def add_callback(self, path: bytes, *args: object):
        if limit["on"] and path.endswith(b"/util"):
            raise OSError(errno.ENOSPC, "inotify watch limit reached")
        return real(self, path, *args)

    monkeypatch.setattr(inotify._Reader, "add_callback", add_callback)
    w, batches = watch(project, backend="inotify", degraded_rescan_s=0.5)
    assert w.degraded is not None and "max_user_watches" in w.degraded
    assert "inotify watch limit is reached" in caplog.text
    first = batches.until(lambda got: any(b.rescan for b in got))
    assert "max_user_watches" in first[-1].reasons[0]
    again = batches.until(lambda got: any(b.rescan for b in got))  # periodic rescans while degraded
    assert any("degraded" in r for r in again[-1].reasons)
    limit["on"] = False
    # The next periodic attempt places the watch; from then on an edit there arrives as an event.
    deadline = time.monotonic() + WAIT_S
    seen = False
    while not seen and time.monotonic() < deadline:
        write(project, "src/util/helpers.py", f"x = {time.monotonic()}\n")
        with contextlib.suppress(queue.Empty):
            seen = "src/util/helpers.py" in batches.queue.get(timeout=0.5).changed
    assert seen and w.degraded is None and "src/util" in w.watched_folders()
    assert "watching" in caplog.text and "again" in caplog.text


def test_no_inotify_instance_left_degrades(project: Path, watch, monkeypatch) -> None:
    def refuse(self, *args: object) -> None:
        raise OSError(errno.EMFILE, "inotify instance limit reached")

    monkeypatch.setattr(inotify._Reader, "__init__", refuse)
    w, batches = watch(project, backend="inotify", degraded_rescan_s=0.3)
    assert w.degraded is not None and "max_user_instances" in w.degraded
    batches.until(lambda got: sum(b.rescan for b in got) >= 2)
    assert w.running


def test_an_unreadable_folder_is_not_watched(project: Path, watch, monkeypatch, caplog) -> None:
    real = inotify._Reader.add_callback

    def add_callback(self, path: bytes, *args: object):
        # what watchdog does when inotify_add_watch fails with EACCES: no exception, watch descriptor -1
        return -1 if path.endswith(b"/util") else real(self, path, *args)

    monkeypatch.setattr(inotify._Reader, "add_callback", add_callback)
    monkeypatch.setattr(inotify._Reader, "remove_callbacks", lambda self, pairs: None)
    w, batches = watch(project, backend="inotify")
    assert "src/util" not in w.watched_folders() and w.degraded is None
    assert "cannot watch src/util: permission denied" in caplog.text
    write(project, "sentinel.py")
    assert not any(b.rescan for b in batches.until_changed("sentinel.py"))


def test_a_kernel_queue_overflow_asks_for_a_rescan(project: Path, watch) -> None:
    w, batches = watch(project, backend="inotify")
    w._backend._forward.on_queue_overflow()  # what watchdog's reader calls on IN_Q_OVERFLOW
    got = batches.until(lambda got: any(b.rescan for b in got))
    assert "overflowed" in got[-1].reasons[0]
    write(project, "src/util/after.py")  # the watches were renewed
    batches.until_changed("src/util/after.py")


def test_a_failing_reader_degrades_without_a_traceback(project: Path, watch, monkeypatch) -> None:
    hooked: list[object] = []
    monkeypatch.setattr(threading, "excepthook", hooked.append)
    w, batches = watch(project, backend="inotify", degraded_rescan_s=0.3)

    def broken(self, **kwargs: object):
        raise OSError(errno.EIO, "input/output error")

    monkeypatch.setattr(inotify._Reader, "read_events", broken)
    write(project, "src/app.py", "x = 9\n")  # wakes the reader, which now fails
    got = batches.until(lambda got: any(b.rescan and "reader" in " ".join(b.reasons) for b in got))
    assert w.degraded is not None and "input/output error" in w.degraded
    assert not hooked and got


def test_no_events_means_no_batches(project: Path, watch) -> None:
    _, batches = watch(project, backend="inotify")
    (project / "src" / "app.py").read_text()  # reads are not changes
    write(project, "sentinel.py")
    assert changed(batches.until_changed("sentinel.py")) == {"sentinel.py"}


def test_watcher_exports() -> None:
    assert {"ProjectWatcher", "ChangeBatch", "MAX_BATCH_PATHS"} <= set(watcher.__all__)
