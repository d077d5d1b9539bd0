"""The versions index on S3-compatible object storage: a real S3 server (moto's server mode, its own
process on 127.0.0.1), one writer job (`lgrep index --tags`) and a reader on "another machine" (a
daemon with its own cache dir and no checkout of the repository) answering from the same tables."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from lgrep_core.testing.repos import git, write_tagged_repo

from tests.conftest import moto_server

pytestmark = [pytest.mark.slow, pytest.mark.model]

BUCKET = "lgrep-releases"


@pytest.fixture
def s3_server(tmp_path: Path) -> Iterator[str]:
    """`moto_server` on a free port of 127.0.0.1, stopped afterwards; its endpoint URL."""
    with moto_server(tmp_path / "moto.log") as endpoint:
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        ).create_bucket(Bucket=BUCKET)
        yield endpoint


def _s3_env(endpoint: str) -> dict[str, str]:
    options = {
        "aws_endpoint": endpoint,
        "allow_http": "true",
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
        "aws_region": "us-east-1",
    }
    return {
        "LGREP_VERSIONS_STORE": f"s3://{BUCKET}/lgrep",
        "LGREP_VERSIONS_STORAGE_OPTIONS": json.dumps(options),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _objects(endpoint: str) -> list[str]:
    import boto3

    client = boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test", region_name="us-east-1"
    )
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def test_one_writer_job_and_a_reader_elsewhere_share_the_store(lgrep, daemon, s3_server: str, tmp_path: Path) -> None:
    repo = write_tagged_repo(tmp_path / "mono", agent_releases=3, server_releases=2)
    config = tmp_path / "config.yaml"
    config.write_text("versions:\n  scopes:\n    agent: [agent]\n    server: [server]\n")
    lgrep.env.update({**_s3_env(s3_server), "LGREP_CONFIG": str(config)})

    summary = lgrep("index", "--tags", str(repo.root), "--json").json()
    assert summary["tags_indexed"] == len(repo.tags)
    assert summary["store"] == f"s3://{BUCKET}/lgrep/mono"
    keys = _objects(s3_server)
    assert any(k.startswith("lgrep/mono/tags.lance/") for k in keys)
    assert any(k.startswith("lgrep/mono/vectors.lance/") for k in keys)
    assert not list(lgrep.cache.rglob("*.lance")), "the writer kept tables on local disk"

    # The reader: another cache dir, the same store, and no checkout (the path only names the repository).
    daemon.lgrep.env.update({**_s3_env(s3_server), "LGREP_CONFIG": str(config)})
    elsewhere = tmp_path / "elsewhere" / "mono"
    assert not elsewhere.exists()
    components = daemon.lgrep("components", str(elsewhere), "--json").json()["components"]
    assert {c["name"] for c in components} == {"agent", "server", "mono"}
    found = daemon.lgrep("search", "retry a failing tool", str(elsewhere), "--component", "agent", "--json").json()
    assert found["release"]["version"] == "0.3.0" and found["results"][0]["symbol"] == "retry_tool"
    piece = daemon.lgrep(
        "file", "server/http.py", "--project", str(elsewhere), "--component", "server", "--version", "1.1.0", "--json"
    ).json()
    assert "workers=1" in piece["content"]

    # The next scheduled run adds a release; the running reader sees it without a restart.
    (repo.root / "agent" / "core.py").write_text("def run(task):\n    '''Run one task: the 0.4 rewrite.'''\n")
    git(repo.root, "commit", "-qam", "0.4")
    git(repo.root, "tag", "agent-v0.4.0")
    again = lgrep("index", "--tags", str(repo.root), "--json").json()
    assert (again["tags_indexed"], again["blobs_read"]) == (1, 1)
    versions = daemon.lgrep("versions", "agent", str(elsewhere), "--json").json()["versions"]
    assert versions[0]["version"] == "0.4.0"


def test_an_unreachable_store_is_a_clear_error(lgrep, tmp_path: Path) -> None:
    repo = write_tagged_repo(tmp_path / "mono", agent_releases=1, server_releases=1)
    # A closed port on loopback: nothing listens there.
    lgrep.env.update(_s3_env("http://127.0.0.1:9"))
    lgrep.env["LGREP_VERSIONS_STORAGE_OPTIONS"] = json.dumps(
        {**json.loads(lgrep.env["LGREP_VERSIONS_STORAGE_OPTIONS"]), "client_max_retries": "0", "timeout": "5s"}
    )
    result = lgrep("index", "--tags", str(repo.root), check=False, timeout=300)
    assert result.code == 1
    assert "versions index" in result.err and "Traceback" not in result.err
