"""What every `lgrep` command shares to reach lgrep: the engine it uses (the daemon, or this
process), lgrep's application API over it (lgrep_core.app.api.Lgrep), and the way a command asks before
a cloud provider spends money (the API's spend gate, at a terminal)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from lgrep_core.rpc.endpoints import ClientSettings

if TYPE_CHECKING:
    from lgrep_core.app.api import Lgrep
    from lgrep_core.rpc.client import LgrepClient
    from lgrep_core.rpc.lite_client import LiteClient
    from lgrep_core.settings.config import LgrepSettings

__all__ = ["ask_to_spend", "connect", "connect_lite", "make_app", "note", "settings_for", "spend_gate"]


def note(text: str) -> None:
    from .output import printable

    print(f"lgrep: {printable(text)}", file=sys.stderr)


def settings_for(root: Path | None) -> LgrepSettings:
    from lgrep_core.settings.config import load_settings

    return load_settings(root).settings


def connect(cs: ClientSettings, *, start: bool) -> LgrepClient | None:
    from lgrep_core.rpc.daemon_client import connect_daemon

    return connect_daemon(cs, start=start, notice=note)


def connect_lite(cs: ClientSettings, *, start: bool) -> LiteClient | None:
    from lgrep_core.rpc.daemon_client import connect_daemon_lite

    return connect_daemon_lite(cs, start=start, notice=note)


def make_app(
    cs: ClientSettings,
    *,
    no_daemon: bool,
    start: bool,
    lock_timeout_s: float | None = None,
    fill_behind: bool = True,
    lite: bool = False,
) -> Lgrep:
    """lgrep's application API over the engine this command uses: the daemon (started first when
    `start`), or this process when --no-daemon or no daemon can be used (`lock_timeout_s` and
    `fill_behind` configure an index run here: see lgrep_cli.local.LocalEngine). With `lite`, the
    daemon's client is lgrep_core.rpc.lite_client's, whose handshake and search import no grpcio
    (`lgrep search`, ADR 0027)."""
    from lgrep_core.app.api import Lgrep
    from lgrep_core.domain.engine import Engine

    engine: Engine | None = None
    if not no_daemon:
        engine = connect_lite(cs, start=start) if lite else connect(cs, start=start)
    if engine is None:
        from .local import LocalEngine

        engine = LocalEngine(settings_for(None), lock_timeout_s=lock_timeout_s, fill_behind=fill_behind)
    return Lgrep(engine, Path(cs.cache_dir), spend_gate=spend_gate, notice=note)


def spend_gate(root: Path, force: bool) -> None:
    """lgrep_core.app.api.SpendGate for a command: always yes with the local model; with a cloud
    provider, yes when the plan's estimate is within spend.confirm_above_usd or the user says yes at
    the terminal. Without a terminal to ask, a run above it is refused (an agent or a script never
    hangs on a prompt)."""
    settings = settings_for(root)
    if settings.embedding.provider == "local":
        return

    from . import local, output

    the_plan = local.plan(settings, root, force=force, remote_only=True)
    if the_plan is None or not the_plan.tokens:
        return
    cost = the_plan.cost_usd
    if cost is not None and cost <= settings.spend.confirm_above_usd:
        return
    output.print_plan(the_plan, as_json=False, file=sys.stderr)
    chunks = the_plan.chunks_to_embed - the_plan.chunks_withheld
    ask_to_spend(settings, the_plan.provider, the_plan.model, chunks, the_plan.tokens, cost)


def ask_to_spend(
    settings: LgrepSettings,
    provider: str,
    model: str,
    chunks: int,
    tokens: int,
    cost: float | None,
    *,
    command: str = "lgrep index",
) -> None:
    """The question the spend gate asks (and `lgrep index --tags` before it embeds): yes within
    spend.confirm_above_usd, else the user's answer at a terminal; without one, no.

    Raises:
        SpendDeclinedError: saying why nothing was sent and what to run.
    """
    from lgrep_core.app.api import SpendDeclinedError
    from lgrep_core.storage.spend import format_usd

    limit = settings.spend.confirm_above_usd
    if cost is not None and cost <= limit:
        return
    what = f"about {format_usd(cost)}" if cost is not None else f"an unknown cost (no price for {model})"
    ask = f"send {chunks:,} chunks (~{tokens:,} tokens, {what}) to {provider}"
    if not sys.stdin.isatty():
        raise SpendDeclinedError(
            f"this run would {ask}, above spend.confirm_above_usd ({format_usd(limit)}), and there is "
            f"no terminal to ask: run `{command} --yes` to go ahead (`lgrep index --plan` shows the estimate)"
        )
    if not click.confirm(f"{ask[0].upper()}{ask[1:]}?", default=False, err=True):
        raise SpendDeclinedError("nothing was sent")
