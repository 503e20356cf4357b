"""Shared fixtures. The tests need the manifest validator module: ATRIUM_MANIFEST_VALIDATOR
names it (the lead's build writes it under the cache's wasm-guests directory)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from atrium_sdk import App, Manifest, load_manifest

FIXTURES = Path(__file__).parent / "fixtures"

os.environ.setdefault("ATRIUM_SDK_QUIET", "1")  # no tracebacks of expected handler failures


def pytest_report_header(config):  # noqa: ARG001
    return f"ATRIUM_MANIFEST_VALIDATOR={os.environ.get('ATRIUM_MANIFEST_VALIDATOR', '(unset)')}"


@pytest.fixture(scope="session")
def manifest() -> Manifest:
    return load_manifest(FIXTURES / "atrium.app.yaml")


@pytest.fixture(scope="session")
def bare() -> Manifest:
    return load_manifest(FIXTURES / "no-agents.yaml")


@pytest.fixture
def app(manifest: Manifest) -> App:
    return App(manifest)
