"""The folders and files under a folder, as the walk enters them: what both backends list when a
folder appears, and what the inotify backend walks to place its watches."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from lgrep_core.domain.pathnames import disk_path, display_name

from lgrep_index.walker import PathRules

__all__ = ["list_folder_tree"]

log = logging.getLogger(__name__)


def list_folder_tree(
    root: Path,
    rules: PathRules,
    folder: str,
    *,
    enter: Callable[[str], bool],
    on_file: Callable[[str], None] | None,
) -> None:
    """Visit `folder` and every folder under it that the walk enters, never through a symlink.

    `enter(folder)` runs before a folder is listed (the inotify backend places its watch there, so
    nothing created while it is listed goes unseen); False skips the folder. `on_file` gets every
    file (or symlink, or other non-folder) the walk would consider."""
    stack = [folder]
    while stack:
        current = stack.pop()
        if not enter(current):
            continue
        try:
            with os.scandir(disk_path(root, current) if current else root) as scan:
                entries = list(scan)
        except OSError as exc:
            log.debug("cannot list %s: %s", current or ".", exc)
            continue
        prefix = current + "/" if current else ""
        for entry in entries:
            child = prefix + display_name(entry.name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if rules.considers(child, is_dir=True):
                    stack.append(child)
            elif on_file is not None and rules.considers(child):
                on_file(child)
