# Developer shortcuts; `make check` runs exactly what CI runs (.ci/run).
.PHONY: install format lint typecheck imports proto proto-check proto-lint smoke-install test check ci

install:
	uv sync --locked --group dev --group lint --group codegen

format:
	uv run --frozen --group lint ruff format .
	uv run --frozen --group lint ruff check --fix .

lint:
	uv run --frozen --group lint ruff format --check .
	uv run --frozen --group lint ruff check .

typecheck:
	uv run --frozen --group lint pyright

imports:
	uv run --frozen --group lint lint-imports

proto:
	uv run --frozen --group codegen python tools/gen_proto.py

proto-check:
	uv run --frozen --group codegen python tools/gen_proto.py --check

proto-lint:
	npx --yes @bufbuild/buf@1.75.0 lint
	npx --yes @bufbuild/buf@1.75.0 breaking --against proto/released/lgrep-v1.binpb

smoke-install:
	tools/smoke_install.sh

test:
	uv run --frozen --group dev pytest

check ci:
	.ci/run
