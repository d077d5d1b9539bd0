"""lancedb is imported without the REST client of Lance's namespace service (lgrep_core.storage.engine),
and that client still works in full when something reads it."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_opening_an_index_does_not_build_the_namespace_rest_client() -> None:
    code = (
        "import sys, tempfile\n"
        "from lgrep_core.storage.engine import lancedb\n"
        "db = lancedb().connect(tempfile.mkdtemp())\n"
        "db.create_table('t', data=[{'a': 1}])\n"
        "print(db.open_table('t').count_rows(), sorted(m for m in sys.modules if '_urllib3_client.api' in m))"
    )
    assert _run(code) == "1 []"


def test_the_deferred_package_runs_its_init_when_read() -> None:
    code = (
        "import sys\n"
        "from lgrep_core.storage.engine import lancedb\n"
        "lancedb()\n"
        "import lance_namespace_urllib3_client as client\n"
        "print(client.TableApi.__name__, client.__version__, client.__name__ + '.api.table_api' in sys.modules)"
    )
    assert _run(code).split() == [
        "TableApi",
        _run("import importlib.metadata as m; print(m.version('lance_namespace_urllib3_client'))"),
        "True",
    ]
