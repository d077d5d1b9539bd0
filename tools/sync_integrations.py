"""Copy integrations/ (the human-edited source) into the lgrep-skill package, which ships it. The
skill has one source, integrations/skill/SKILL.md; the Claude Code plugin's copy of it is refreshed
(and checked) here too.

    uv run --frozen python tools/sync_integrations.py          # refresh the copy
    uv run --frozen python tools/sync_integrations.py --check  # exit 1, naming the files, if it is stale

packages/lgrep-skill/tests/test_assets.py runs the check too, so CI fails on a stale copy.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "integrations"
TARGET = ROOT / "packages" / "lgrep-skill" / "src" / "lgrep_skill" / "integrations"
SKILL = SOURCE / "skill" / "SKILL.md"
PLUGIN_SKILL = SOURCE / "claude-code" / "skills" / "lgrep" / "SKILL.md"


def files(folder: Path) -> dict[str, bytes]:
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def differences(source: Path = SOURCE, target: Path = TARGET) -> list[str]:
    want, have = files(source), files(target)
    stale = sorted(name for name in want.keys() | have.keys() if want.get(name) != have.get(name))
    if source == SOURCE and SKILL.read_bytes() != PLUGIN_SKILL.read_bytes():
        stale.append(PLUGIN_SKILL.relative_to(ROOT).as_posix())
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check that the copy is current")
    args = parser.parse_args(argv)
    stale = differences()
    if args.check:
        if stale:
            print(f"{TARGET.relative_to(ROOT)} differs from integrations/ in: {', '.join(stale)}", file=sys.stderr)
            print("run: uv run --frozen python tools/sync_integrations.py", file=sys.stderr)
            return 1
        return 0
    shutil.copyfile(SKILL, PLUGIN_SKILL)
    shutil.rmtree(TARGET, ignore_errors=True)
    shutil.copytree(SOURCE, TARGET)
    print(
        f"copied {len(files(SOURCE))} files to {TARGET.relative_to(ROOT)}"
        + (f" ({len(stale)} changed)" if stale else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
