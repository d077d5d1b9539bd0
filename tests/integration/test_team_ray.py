"""`lgrep publish --ray`: a publication embedded on a Ray cluster (a head and two worker nodes on
127.0.0.1, real processes) equals the one a single process writes, vector for vector (ADR 0034).

Ray needs the `ray` extra (`uv sync --extra ray`); without it these tests are skipped. The cluster
keeps to the loopback interface (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes Ray use 127.0.0.1; its
multi-node check only guards `ray start`, which these tests do not use)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.storage.team import TeamStore
from lgrep_core.testing.repos import git

from tests.conftest import Lgrep

pytestmark = [pytest.mark.slow, pytest.mark.model]

_RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A head (no CPUs: it only coordinates) and two worker nodes of one CPU each; its address."""
    os.environ.update(_RAY_ENV)  # read when ray is imported
    pytest.importorskip("ray", reason="the ray extra is not installed (uv sync --extra ray)")
    from ray.cluster_utils import Cluster

    # Ray's unix sockets live under its temp dir, and a socket path has 107 bytes at most.
    temp = Path(tempfile.mkdtemp(prefix="lgrep-ray-", dir="/tmp"))
    # Cluster() records the head's address in "<RAY_TMPDIR or /tmp>/ray/ray_current_cluster" whatever
    # temp_dir says, and fails where that folder does not exist (a fresh machine): point it inside ours.
    saved = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = str(temp)
    (temp / "ray").mkdir()
    cluster = None
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": False,
                "node_ip_address": "127.0.0.1",
                "temp_dir": str(temp),
            },
        )
        for _ in range(2):
            cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        if cluster is not None:
            cluster.shutdown()
        if saved is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = saved
        shutil.rmtree(temp, ignore_errors=True)


def _ci(lgrep: Lgrep, tmp_path: Path, name: str, store: Path) -> Lgrep:
    cache = tmp_path / f"{name}-cache"
    cache.mkdir()
    (cache / "models").symlink_to((lgrep.cache / "models").resolve(), target_is_directory=True)
    home = tmp_path / f"{name}-home"
    home.mkdir()
    env = {**lgrep.env, **_RAY_ENV, "HOME": str(home), "LGREP_CACHE_DIR": str(cache), "LGREP_TEAM_STORE": str(store)}
    return Lgrep(cache, env)


def _manifest(store: Path) -> tuple[list[bytes], list[bytes]]:
    [repository] = [p.parent for p in store.rglob("publications.lance")]
    team = TeamStore(str(repository))
    [publication] = team.publications()
    manifest = team.manifest(publication)
    return manifest.keys.tolist(), manifest.checks.tolist()


def test_a_ray_publication_equals_a_single_process_one(
    lgrep: Lgrep, mini_repo: Path, tmp_path: Path, ray_cluster: str
) -> None:
    git(mini_repo, "init", "-q", "-b", "main")
    git(mini_repo, "add", "-A")
    git(mini_repo, "commit", "-qm", "first")
    alone = _ci(lgrep, tmp_path, "alone", tmp_path / "store-alone")("publish", str(mini_repo), "--json").json()
    spread = _ci(lgrep, tmp_path, "ray", tmp_path / "store-ray")(
        "publish", str(mini_repo), "--ray", ray_cluster, "--json", cwd=mini_repo
    ).json()
    assert spread["commit"] == alone["commit"]
    assert spread["vectors"] == alone["vectors"] == spread["vectors_embedded"] > 0
    keys, checks = _manifest(tmp_path / "store-ray")
    assert (keys, checks) == _manifest(tmp_path / "store-alone")  # every vector bit for bit


def test_ray_without_a_cluster_is_a_clear_error(lgrep: Lgrep, mini_repo: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the ray extra is not installed (uv sync --extra ray)")
    git(mini_repo, "init", "-q", "-b", "main")
    git(mini_repo, "add", "-A")
    git(mini_repo, "commit", "-qm", "first")
    ci = _ci(lgrep, tmp_path, "ci", tmp_path / "store")
    result = ci("publish", str(mini_repo), "--ray", "127.0.0.1:9", check=False, timeout=300)
    assert result.code != 0
    assert "cannot reach the Ray cluster at 127.0.0.1:9" in result.err
    assert "Traceback" not in result.err
