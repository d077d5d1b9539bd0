"""The team index's speed and size goals (issue 38, ADR 0034), measured as a user sees them.

    uv run --frozen python tools/bench_team.py --mirror /work/.mirror/ktorio+ktor/repo --work /tmp/bt \\
        [--cold] [--out result.json]

From a git repository (a bare mirror is fine) it makes a "CI" clone at HEAD~1 and a member's clone at
HEAD with a few local edits (three files changed, one added, one deleted), each with its own HOME
and cache dir, a folder as the team store, and then times, with the `lgrep` command:

  publish     CI publishes HEAD~1 from a fresh cache (a cold build of that tree, plus the upload)
  seed        the member's `lgrep seed` from a fresh cache: until the index has every vector
              (the first answer with complete vectors), with what it copied and embedded
  cold        (--cold) the member's tree built locally from a fresh cache with no store
  republish   CI commits a one-file change and publishes again (its cache kept, as a CI cache does)

and reports the publication's size on disk beside the bytes the seed read. Without --cold, the cold
build is estimated by the publish (the same tree but one commit), which the report says.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "bench"}
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def _machine(work: Path, name: str, **extra: str) -> dict[str, str]:
    home, cache = work / f"{name}-home", work / f"{name}-cache"
    home.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LGREP_")}
    env.update(HOME=str(home), LGREP_CACHE_DIR=str(cache), LGREP_SERVER__AUTOSTART="0", **extra)
    return env


def _lgrep(env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "lgrep_cli", *args, "--json"], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"lgrep {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds, json.loads(proc.stdout)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _edit(member: Path) -> list[str]:
    """Three files changed, one added, one deleted: a member's working tree a few edits away."""
    tracked = [p for p in _git(member, "ls-files").splitlines() if p.endswith((".kt", ".py", ".ts", ".go", ".java"))]
    tracked.sort()
    changed = tracked[len(tracked) // 4 :: max(1, len(tracked) // 3)][:3]
    for rel in changed:
        path = member / rel
        path.write_text(path.read_text(errors="replace") + "\n// a local edit: retry the handshake twice\n")
    (member / "local_notes.py").write_text("def retry_handshake(conn, attempts=2):\n    return conn.open(attempts)\n")
    gone = tracked[len(tracked) // 2]
    (member / gone).unlink()
    return [*changed, "local_notes.py", gone]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", type=Path, required=True, help="a git repository (bare is fine)")
    parser.add_argument("--work", type=Path, required=True, help="a scratch folder (emptied)")
    parser.add_argument("--cold", action="store_true", help="also build the member's tree locally from scratch")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work: Path = args.work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    store = work / "store"
    ci_repo, member_repo = work / "ci", work / "member"
    for target, ref in ((ci_repo, "HEAD~1"), (member_repo, "HEAD")):
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(args.mirror), str(target)], check=True)
        # A snapshot may lack its largest blobs (binaries, never indexed): check out what is there.
        subprocess.run(
            ["git", "-C", str(target), "checkout", "-q", "-f", "-B", "main", ref], check=False, capture_output=True
        )
    edits = _edit(member_repo)
    ci = _machine(work, "ci", LGREP_TEAM_STORE=str(store))
    member = _machine(work, "member", LGREP_TEAM_STORE=str(store))
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "repository": str(args.mirror),
        "edits": edits,
    }

    t, out = _lgrep(ci, "publish", str(ci_repo))
    result["publish"] = {
        "seconds": round(t, 1),
        **{k: out[k] for k in ("files", "chunks", "vectors", "vectors_embedded")},
    }
    result["publication_bytes"] = _size(store)
    print(f"publish (cold, HEAD~1): {t:.1f} s, {out['chunks']} chunks", file=sys.stderr)

    t, out = _lgrep(member, "seed", str(member_repo))
    seed = out["seed"] or {}
    result["seed"] = {
        "seconds": round(t, 1),
        "chunks": out["chunks_total"],
        "vectors_copied": seed.get("vectors_copied"),
        "vectors_embedded": out["vectors_embedded"],
        "vectors_pending": out["vectors_pending"],
        "bytes_copied": seed.get("bytes_copied"),
        "files_overlaid": seed.get("files_overlaid"),
        "refused": seed.get("refused"),
    }
    print(f"seed: {t:.1f} s, {out['vectors_embedded']} embedded, {seed.get('vectors_copied')} copied", file=sys.stderr)

    if args.cold:
        cold = _machine(work, "cold")
        t, out = _lgrep(cold, "index", "--no-daemon", str(member_repo))
        result["cold"] = {
            "seconds": round(t, 1),
            "chunks": out["chunks_total"],
            "vectors_embedded": out["vectors_embedded"],
        }
        print(f"cold local build: {t:.1f} s", file=sys.stderr)
    base = result.get("cold", result["publish"])["seconds"]
    result["seed_over_cold"] = round(result["seed"]["seconds"] / base, 3)
    result["cold_measured"] = bool(args.cold)

    target = sorted(p for p in _git(ci_repo, "ls-files").splitlines() if p.endswith((".kt", ".py", ".ts", ".go")))[0]
    path = ci_repo / target
    path.write_text(path.read_text(errors="replace") + "\n// one more line in one file\n")
    _git(ci_repo, "commit", "-qam", "one file")
    t, out = _lgrep(ci, "publish", str(ci_repo))
    result["republish"] = {
        "seconds": round(t, 1),
        **{k: out[k] for k in ("vectors_uploaded", "bytes_uploaded", "vectors_embedded", "vectors_from_store")},
    }
    print(f"republish after a one-file commit: {t:.1f} s, {out['vectors_uploaded']} uploaded", file=sys.stderr)

    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
