"""How every lgrep command-line program ends: one line on stderr and an exit code, never a traceback.

`run_command` runs a click command and maps what can go wrong, once for all programs (`lgrep`,
`lgrep-index`, `lgrep-search`): a usage error exits 2 with click's message; an LgrepError exits 1
as `prog: error: <message>`; an OSError names the file; a closed pipe (`| head`) exits 141 quietly,
as grep and git do; Ctrl-C exits 130; anything else is a bug, reported in one line (run with -v, or
LGREP_LOG_LEVEL=DEBUG, for the traceback).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from lgrep_core.domain.errors import LgrepError

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "group",
    "run_command",
    "setup_logging",
    "terminal_safe",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for grep or git cut off by `head`

log = logging.getLogger("lgrep")

# C0 and C1 control characters, DEL, and the Unicode bidirectional controls ("Trojan Source"):
# in a file name or a line of code they could move the cursor, recolour or rewrite the terminal, or
# make code read differently from what it is. Human output shows them escaped; tabs in code stay.
_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str, *, keep_tabs: bool = False) -> str:
    """`text` with every character that a terminal would act on shown as an escape (\\x1b, \\n)."""
    out = _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)
    return out if keep_tabs else out.replace("\t", "\\t")


def setup_logging(level: str, verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else getattr(logging, level, logging.WARNING),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
        force=True,
    )


class PipeClosed(Exception):
    """stdout's reader went away. Not an OSError: click turns EPIPE into exit code 1 itself."""


def group(*, lazy: Mapping[str, str] | None = None, **kwargs: Any) -> Any:
    """`click.group` for lgrep programs: a closed stdout ends the command as `| head` expects (141).
    `lazy` names commands by `"module:attribute"`, imported only when that command runs or help
    lists it, so that the other commands do not pay for their imports."""
    import click

    later = dict(lazy or {})

    class LgrepGroup(click.Group):
        def invoke(self, ctx: click.Context) -> Any:
            try:
                return super().invoke(ctx)
            except BrokenPipeError:
                raise PipeClosed from None

        def list_commands(self, ctx: click.Context) -> list[str]:
            return sorted({*super().list_commands(ctx), *later})

        def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
            where = later.pop(cmd_name, None)
            if where is not None:
                import importlib

                module, _, attribute = where.partition(":")
                self.add_command(getattr(importlib.import_module(module), attribute), cmd_name)
            return super().get_command(ctx, cmd_name)

    return click.group(cls=LgrepGroup, **kwargs)


def run_command(command: Any, argv: Sequence[str] | None, *, prog: str) -> int:
    """Run a click command (group) as program `prog` and return its exit code (see the module docstring)."""
    import click

    try:
        try:
            result = command.main(args=list(argv) if argv is not None else None, prog_name=prog, standalone_mode=False)
        except click.exceptions.Exit as exc:
            return int(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            return EXIT_USAGE if isinstance(exc, click.UsageError) else EXIT_ERROR
        except click.exceptions.Abort:
            print(f"{prog}: interrupted", file=sys.stderr)
            return 130
        return int(result) if isinstance(result, int) else EXIT_OK
    except (BrokenPipeError, PipeClosed):
        # The reader went away (`lgrep search ... | head`): stop quietly, as grep and git do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except LgrepError as exc:
        print(f"{prog}: error: {terminal_safe(exc.message)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:
        log.debug("file system error", exc_info=True)
        where = f": {exc.filename}" if exc.filename else ""
        print(f"{prog}: error: {terminal_safe(str(exc.strerror or exc))}{terminal_safe(where)}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        # A bug, not bad input: say so in one line; -v logs the traceback for a report.
        log.debug("unexpected error", exc_info=True)
        print(
            f"{prog}: internal error: {type(exc).__name__}: {terminal_safe(str(exc))[:300]} "
            "(run with -v for details and report it)",
            file=sys.stderr,
        )
        return EXIT_ERROR
