"""The file watcher (ADR 0008) and the registry of watched projects (ADR 0024), one subject a module.

From the top down (each imports only the ones below it; an import-linter contract keeps it so):

- `registry`: `Watches`, the projects an index server keeps fresh and why, saved in `watched.json`.
- `watcher`: `ProjectWatcher`, the thread that ties a backend to the pending batch and hands batches on.
- `inotify` (Linux: one inotify watch per folder the walk enters), `observer` (elsewhere: watchdog's
  recursive observer): the backends, which turn the OS's events into path events.
- `batching` (debounce, maximum delay, coalescing per path into a `ChangeBatch`), `listing` (the
  folders and files under a folder, as the walk enters them).
- `events`: what a backend reports (`FileEvent`) and to whom (`Sink`), and what a backend is
  (`WatchBackend`).
"""
