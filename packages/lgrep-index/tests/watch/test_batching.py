"""Tests of the pending batch (lgrep_index.watch.batching): debounce, maximum delay and coalescing per
path, on a clock the test drives."""

from __future__ import annotations

import pytest
from lgrep_index.changes import ChangeBatch
from lgrep_index.watch.batching import PendingBatch
from lgrep_index.watch.events import FileEvent


def test_a_continuous_stream_still_flushes() -> None:
    """Debounce and maximum delay, on a clock the test drives."""
    pending = PendingBatch()
    assert pending.due_at(0.25, 1.0) is None
    pending.file("a.py", FileEvent.CHANGED, now=10.0)
    assert pending.due_at(0.25, 1.0) == pytest.approx(10.25)
    pending.file("a.py", FileEvent.CHANGED, now=10.2)
    assert pending.due_at(0.25, 1.0) == pytest.approx(10.45)
    for step in range(3, 30):  # an event every 0.1 s: the quiet time never comes
        pending.file("b.py", FileEvent.CHANGED, now=10.0 + step / 10)
    assert pending.due_at(0.25, 1.0) == pytest.approx(11.0)
    batch = pending.take()
    assert batch.changed == {"a.py", "b.py"} and batch.first_event_at == 10.0
    assert pending.due_at(0.25, 1.0) is None and pending.take().path_count == 0


def test_pending_batch_coalesces_per_path() -> None:
    pending = PendingBatch(max_paths=5)
    pending.file("tmp.swp", FileEvent.CREATED, 1.0)
    pending.file("tmp.swp", FileEvent.CHANGED, 1.0)
    pending.file("tmp.swp", FileEvent.GONE, 1.0)  # born and gone within the batch: nothing
    pending.file("old.py", FileEvent.GONE, 1.0)  # existed before: to be dropped from the index
    pending.file("new.py", FileEvent.CREATED, 1.0)
    pending.file("new.py", FileEvent.GONE, 1.0)
    pending.file("new.py", FileEvent.CREATED, 1.0)  # re-created: reported
    pending.file("saved.py", FileEvent.CHANGED, 1.0)  # renamed over: may have existed
    pending.file("saved.py", FileEvent.GONE, 1.0)
    pending.file("dir/a.py", FileEvent.CHANGED, 1.0)
    pending.folder_removed("dir/sub", 1.0)
    pending.folder_removed("dir", 1.0)  # covers dir/a.py and dir/sub
    pending.folder_removed("dir/sub/deeper", 1.0)  # covered by dir
    pending.file("dir/again.py", FileEvent.CREATED, 1.0)  # the folder came back
    batch = pending.take()
    assert batch.changed == {"old.py", "new.py", "saved.py", "dir/again.py"}
    assert batch.removed_prefixes == {"dir"}
    assert not batch.rescan

    for i in range(6):
        pending.file(f"f{i}.py", FileEvent.CHANGED, 2.0)
    batch = pending.take()
    assert batch.rescan and batch.path_count == 0 and batch.reasons == ("more than 5 paths changed at once",)
    pending.set_rescan("rules", 3.0)
    pending.file("later.py", FileEvent.CHANGED, 3.5)
    assert pending.take() == ChangeBatch(rescan=True, reasons=("rules",))
