"""How long recording receipts takes when every call comes from a client of another name (a buggy
or hostile MCP client can send any `clientInfo.name`): N records, N distinct names, into a fresh
receipts ledger, and the size of what is left on disk (issue 36).

    uv run --frozen python tools/bench_receipt_names.py 6898
    uv run --frozen python tools/bench_receipt_names.py 2000 --module /tmp/old_receipts.py   # another version

`--module` loads `ReceiptLedger` from that file instead (e.g. `git show b629df2:packages/lgrep-core/src/
lgrep_core/receipts.py > /tmp/old_receipts.py`), to compare two versions on one machine in one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _ledger_class(module: str | None) -> Any:
    if module is None:
        from lgrep_core.storage.receipts import ReceiptLedger

        return ReceiptLedger
    spec = importlib.util.spec_from_file_location("receipts_under_test", module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = loaded
    spec.loader.exec_module(loaded)
    return loaded.ReceiptLedger


def main() -> int:
    parser = argparse.ArgumentParser(description="receipts recorded from many client names, timed")
    parser.add_argument("records", type=int)
    parser.add_argument("--module", help="a receipts.py to load ReceiptLedger from")
    args = parser.parse_args()
    ledger_class = _ledger_class(args.module)
    with tempfile.TemporaryDirectory() as cache:
        ledger = ledger_class(Path(cache))
        started = time.perf_counter()
        for n in range(args.records):
            ledger.record("/p", f"client-{n}", tokens_returned=10, file_tokens=100, files=1)
        took = time.perf_counter() - started
        folder = Path(cache) / "receipts"
        size = sum(p.stat().st_size for p in folder.iterdir() if p.suffix in (".json", ".log"))
        print(f"{args.records} records, {args.records} names: {took:.2f} s, {size / 1024:.1f} KiB on disk")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
