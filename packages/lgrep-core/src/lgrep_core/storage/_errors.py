"""How every piece of `ProjectStore` reports failures: what LanceDB and SQLite raise on damaged or
vanished files (or a full disk) becomes the StorageError that says what to run."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from lgrep_core.domain.errors import LgrepError, StorageError

if TYPE_CHECKING:
    from lgrep_core.storage.store import ProjectStore

__all__ = ["StorePart", "storage_errors"]

_F = TypeVar("_F", bound=Callable[..., Any])


def storage_errors(method: _F) -> _F:
    """LanceDB and SQLite raise many types (ValueError, OSError, RuntimeError, ...) for damaged or
    vanished files: turn them into the StorageError that says what to run. Generators too.

    For methods of `ProjectStore` and of its parts (anything with a `damaged` method)."""
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def gen_wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                yield from method(self, *args, **kwargs)
            except LgrepError:
                raise
            except Exception as exc:
                raise self.damaged(exc) from exc

        return gen_wrapper  # type: ignore[return-value]

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except LgrepError:
            raise
        except Exception as exc:
            raise self.damaged(exc) from exc

    return wrapper  # type: ignore[return-value]


class StorePart:
    """One job of a `ProjectStore`, done on the store's open generation; reports errors as the store does."""

    def __init__(self, store: ProjectStore) -> None:
        self._store = store

    def damaged(self, exc: BaseException) -> StorageError:
        return self._store.damaged(exc)
