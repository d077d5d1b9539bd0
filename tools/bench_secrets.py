#!/usr/bin/env python3
"""Recall, false positives and throughput of the secret scanner (lgrep_core.domain.secrets).

Recall per form on the positives of tests/fixtures/secrets (a sample is found when none of its
secrets' characters is left by `redact`; paths go through `redact_path`, or `redact` for a scanner
that has none), the false-positive rate on the negatives (any finding, or a path changed), and the
throughput of `sanitize` over a tree of real files (default: this repository's packages/ tree).

    uv run --frozen python tools/bench_secrets.py                 # the scanner of this checkout
    git show main:packages/lgrep-core/src/lgrep_core/domain/secrets.py > /tmp/secrets_main.py
    uv run --frozen python tools/bench_secrets.py --scanner /tmp/secrets_main.py   # another one
    uv run --frozen python tools/bench_secrets.py --tree .venv/lib/python3.11/site-packages --list

`--list` prints each finding in the trees (kind, file, line and a masked excerpt) to check by hand
that they are secrets; `--misses` prints the samples a scanner misses and the negatives it flags.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

from lgrep_core.testing.secrets_corpus import load

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "secrets"
TEXT_SUFFIXES = frozenset(
    {".py", ".pyi", ".md", ".toml", ".yaml", ".yml", ".json", ".txt", ".cfg", ".ini", ".proto"}
    | {".js", ".ts", ".go", ".rs", ".java", ".sh", ".html", ".xml", ".properties"}
)
MAX_FILE_BYTES = 1 << 20


def _scanner(path: str | None) -> ModuleType:
    if path is None:
        import lgrep_core.domain.secrets

        return lgrep_core.domain.secrets
    spec = importlib.util.spec_from_file_location("scanner_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _redact_path(scanner: Any, path: str) -> str:
    fn = getattr(scanner, "redact_path", None)
    return fn(path) if fn is not None else scanner.redact(path)


def corpus(scanner: Any, *, misses: bool) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    positives, negatives = load(CORPUS)
    recall: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in positives:
        out = _redact_path(scanner, s.text) if s.form == "file_names" else scanner.redact(s.text)
        found = not any(secret in out for secret in s.secrets) and not any(
            part in out for secret in s.secrets for part in _tails(secret)
        )
        recall[s.form][0] += found
        recall[s.form][1] += 1
        if misses and not found:
            print(f"  miss {s.form}:{s.line}: {out!r}")
    false: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in negatives:
        flagged = _redact_path(scanner, s.text) != s.text if s.form == "file_names" else bool(scanner.scan(s.text))
        false[s.form][0] += flagged
        false[s.form][1] += 1
        if misses and flagged:
            print(f"  false positive {s.form}:{s.line}: {s.text!r}")
    return {k: (v[0], v[1]) for k, v in recall.items()}, {k: (v[0], v[1]) for k, v in false.items()}


def _tails(secret: str) -> list[str]:
    """Pieces a partial redaction leaves: the part after a `#`, `,` or `;` the scanner stopped at."""
    return [p for sep in "#,;" if sep in secret for p in secret.split(sep)[1:] if len(p) >= 4]


def _files(trees: list[Path]) -> list[tuple[str, Path, str]]:
    """(path relative to its tree, path, text) of every text file under the trees."""
    out: list[tuple[str, Path, str]] = []
    for tree in trees:
        for path in sorted(tree.rglob("*")):
            if path.suffix not in TEXT_SUFFIXES or not path.is_file() or path.is_symlink():
                continue
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            out.append((str(path.relative_to(tree)), path, path.read_text(encoding="utf-8", errors="replace")))
    return out


def throughput(scanner: Any, trees: list[Path], repeat: int, *, listing: bool) -> None:
    files = _files(trees)
    size = sum(len(t.encode("utf-8", "surrogatepass")) for _, _, t in files)
    runs: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _, _, text in files:
            scanner.sanitize(text)
        runs.append(time.perf_counter() - start)
    findings = 0
    with_findings = 0
    for _, path, text in files:
        found = scanner.scan(text)
        findings += len(found)
        with_findings += bool(found)
        if listing:
            for f in found:
                line = text.splitlines()[f.start_line - 1] if f.start_line <= len(text.splitlines()) else ""
                print(f"  {f.kind} {path}:{f.start_line}: {line.strip()[:100]}")
    paths_changed = sum(_redact_path(scanner, rel) != rel for rel, _, _ in files)
    best, median = min(runs), statistics.median(runs)
    print(
        f"throughput over {len(files)} files, {size / 1e6:.1f} MB ({', '.join(map(str, trees))}): "
        f"{size / 1e6 / best:.0f} MB/s best, {size / 1e6 / median:.0f} MB/s median of {repeat}; "
        f"{findings} findings in {with_findings} files; {paths_changed} paths changed by redact_path"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scanner", help="a secrets.py to load instead of lgrep_core.domain.secrets")
    parser.add_argument("--tree", action="append", type=Path, help="folder for the throughput run (repeatable)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--misses", action="store_true", help="print the misses and false positives")
    parser.add_argument("--list", action="store_true", help="print every finding in the trees")
    args = parser.parse_args()
    scanner = _scanner(args.scanner)
    print(f"scanner: {args.scanner or scanner.__file__}")
    recall, false = corpus(scanner, misses=args.misses)
    found = sum(a for a, _ in recall.values())
    total = sum(b for _, b in recall.values())
    print(f"recall: {found}/{total} = {found / total:.0%}")
    for form, (a, b) in sorted(recall.items()):
        print(f"  {form:<20} {a:>3}/{b:<3} {a / b:.0%}")
    flagged = sum(a for a, _ in false.values())
    samples = sum(b for _, b in false.values())
    print(f"false positives: {flagged}/{samples} = {flagged / samples:.0%}")
    for form, (a, b) in sorted(false.items()):
        print(f"  {form:<20} {a:>3}/{b:<3} {a / b:.0%}")
    throughput(scanner, args.tree or [ROOT / "packages"], args.repeat, listing=args.list)


if __name__ == "__main__":
    main()
