#!/usr/bin/env python3
"""Index this repository through the voyage and openai providers against stand-in servers (50 ms
latency per request), via the real CLI, and time a search through the daemon.

`uv run --frozen python tools/bench_cloud.py REPO`"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lgrep_core.testing.standins import EmbeddingStandIn

repo = Path(sys.argv[1])
for flavor, dim in (("voyage", 1024), ("openai", 1536)):
    with EmbeddingStandIn(flavor, dimension=dim, latency=0.05) as s:
        cache = Path(tempfile.mkdtemp(prefix="lgb-", dir="/tmp"))
        env = {
            **os.environ,
            "LGREP_CACHE_DIR": str(cache),
            "LGREP_EMBEDDING_PROVIDER": flavor,
            "LGREP_EMBEDDING_BASE_URL": s.base_url,
            "VOYAGE_API_KEY": "test-key",
            "OPENAI_API_KEY": "test-key",
        }
        t = time.time()
        out = subprocess.run(
            ["uv", "run", "--frozen", "lgrep", "index", str(repo), "--yes", "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        took = time.time() - t
        summary = json.loads(out.stdout)
        lat = []
        for q in [
            "how are files split into chunks",
            "retry with backoff on rate limits",
            "spend ledger warnings",
            "where is the socket created",
            "parse a tag into component and version",
        ]:
            t = time.time()
            subprocess.run(
                ["uv", "run", "--frozen", "lgrep", "search", q, str(repo), "--json"],
                env=env,
                capture_output=True,
                check=True,
            )
            lat.append(time.time() - t)
        subprocess.run(["uv", "run", "--frozen", "lgrep", "serve", "--stop"], env=env, capture_output=True, check=False)
        print(
            flavor,
            f"index {took:.1f}s files={summary['files']} vectors={summary['vectors_embedded']} "
            f"tokens={summary['tokens_billed']} requests={len(s.requests)} max_in_flight={s.max_in_flight}; "
            f"search CLI s: {sorted(round(x, 2) for x in lat)}",
        )
