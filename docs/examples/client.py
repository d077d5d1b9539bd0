"""Search a project through a running lgrep daemon (`lgrep serve`) with the Python client.

    uv run python docs/examples/client.py "where are tokens verified?" --root ~/src/myproject

The daemon listens on `lgrep.sock` in the cache directory ($LGREP_CACHE_DIR, default ~/.cache/lgrep);
`--socket` names another socket. Over TCP use `LgrepClient.connect(port=..., token_file=...)` instead
(docs/grpc.md). Every failure is an LgrepError with a message meant for people: print it, exit 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from lgrep_core.domain.errors import LgrepError
from lgrep_core.domain.models import SearchRequest
from lgrep_core.rpc.client import LgrepClient
from lgrep_core.rpc.grpc_support import default_socket_path


def main() -> int:
    parser = argparse.ArgumentParser(description="search a project through the lgrep daemon")
    parser.add_argument("query")
    parser.add_argument("--root", default=".", help="project root (default: the current directory)")
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--socket", help="the daemon's unix socket (default: lgrep.sock in the cache directory)")
    args = parser.parse_args()

    cache_dir = Path(os.environ.get("LGREP_CACHE_DIR") or Path.home() / ".cache" / "lgrep")
    socket_path = args.socket or default_socket_path(cache_dir)
    try:
        with LgrepClient.connect(socket_path=socket_path, timeout=30) as client:
            server = client.server_info()  # the handshake: same contract revision, or a clear error
            print(f"lgrep {server.version} (pid {server.pid}, model {server.embedding_model})", file=sys.stderr)
            response = client.call(SearchRequest(query=args.query, project_root=args.root, limit=args.limit))
    except LgrepError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    for hit in response.results:
        kind = hit.kind.value if hit.kind is not None else "?"
        print(f"{hit.path}:{hit.start_line}-{hit.end_line}  {hit.symbol or '-'} ({kind})  score={hit.score:.3f}")
        for line in hit.content.splitlines()[:3]:
            print(f"    {line}")
    if not response.results:
        print("no results", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
