"""Generated git repositories with release tags, for tests of the versions index (real git, no network)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["TaggedRepo", "git", "write_tagged_repo"]

_ENV = {
    "GIT_AUTHOR_NAME": "lgrep tests",
    "GIT_AUTHOR_EMAIL": "tests@lgrep.invalid",
    "GIT_COMMITTER_NAME": "lgrep tests",
    "GIT_COMMITTER_EMAIL": "tests@lgrep.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **_ENV}
    out = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    return out.stdout.decode("utf-8", "replace")


@dataclass
class TaggedRepo:
    root: Path
    tags: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])  # tag -> (component, version)


def _agent_core(release: int) -> str:
    return (
        "class Agent:\n"
        '    """Runs tasks in a loop until the model says it is done."""\n\n'
        "    def run(self, task, max_steps=10):\n"
        '        """Plan the task, call tools, and stop after max_steps."""\n'
        "        steps = []\n"
        f"        for step in range(max_steps * {release}):\n"
        "            steps.append(self.plan(task, step))\n"
        "        return steps\n\n"
        "    def plan(self, task, step):\n"
        f"        return f'{{task}} step {{step}} of release {release}'\n"
    )


def _agent_tools(release: int) -> str:
    body = "def call_tool(name, arguments):\n    '''Call a registered tool by name with JSON arguments.'''\n"
    body += "    return REGISTRY[name](**arguments)\n\n\nREGISTRY = {}\n"
    if release >= 3:
        body += "\n\ndef retry_tool(name, arguments, attempts=3):\n    '''Call a tool again when it fails.'''\n"
        body += "    for _ in range(attempts):\n        try:\n            return call_tool(name, arguments)\n"
        body += "        except Exception:\n            continue\n"
    return body


def _server_http(release: int) -> str:
    return (
        "def serve(port):\n"
        '    """Serve the computer API over HTTP on this port."""\n'
        f"    return start_http_server(port, workers={release})\n\n\n"
        "def screenshot(display):\n"
        '    """Capture the screen of a display as PNG bytes."""\n'
        "    return display.capture(format='png')\n"
    )


def write_tagged_repo(
    root: Path, *, agent_releases: int = 5, server_releases: int = 4, stable_files: int = 6
) -> TaggedRepo:
    """A repository with two components and release tags: `agent/` tagged `agent-v0.<n>.0` (its
    core changes every release, its tools at release 3, its docs never), `server/` tagged
    `server-v1.<n>.0` (one file changes per release), and a bare `v<n>.0.0` tag every two agent
    releases (the whole tree: the root component). Most files are identical across tags."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    repo = TaggedRepo(root)
    (root / "agent").mkdir(exist_ok=True)
    (root / "server").mkdir(exist_ok=True)
    (root / "agent" / "README.md").write_text("# Agent\n\nThe agent runs tasks with tools.\n")
    (root / "server" / "README.md").write_text("# Computer server\n\nServes screenshots and input.\n")
    (root / "README.md").write_text("# Monorepo\n\nAgent and computer server.\n")
    # Files no release changes: most of a real repository.
    for i in range(stable_files):
        (root / "agent" / f"skill_{i}.py").write_text(
            f'def skill_{i}(context):\n    """Skill number {i}: look up step {i} of a plan."""\n'
            f"    return context.lookup('step-{i}')\n"
        )
        (root / "server" / f"handler_{i}.py").write_text(
            f'def handle_{i}(request):\n    """Handle request kind {i} from the agent."""\n'
            f"    return request.reply(status={200 + i})\n"
        )
    for n in range(1, max(agent_releases, server_releases) + 1):
        if n <= agent_releases:
            (root / "agent" / "core.py").write_text(_agent_core(n))
            (root / "agent" / "tools.py").write_text(_agent_tools(n))
        if n <= server_releases:
            (root / "server" / "http.py").write_text(_server_http(n))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"release {n}")
        if n <= agent_releases:
            tag = f"agent-v0.{n}.0"
            git(root, "tag", tag)
            repo.tags[tag] = ("agent", f"0.{n}.0")
        if n <= server_releases:
            tag = f"server-v1.{n}.0"
            git(root, "tag", "-a", tag, "-m", f"server {n}")  # annotated
            repo.tags[tag] = ("server", f"1.{n}.0")
        if n % 2 == 0:
            tag = f"v{n // 2}.0.0"
            git(root, "tag", tag)
            repo.tags[tag] = (root.name, f"{n // 2}.0.0")
    return repo
