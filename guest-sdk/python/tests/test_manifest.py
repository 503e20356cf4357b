"""Manifest loading through the real validator module, and the embedded manifest of a
component."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from atrium_sdk import (
    App,
    ManifestError,
    check_manifest,
    load_manifest,
    load_manifest_from_string,
)
from atrium_sdk import _embedded, _manifest

from conftest import FIXTURES

FINDING_KEYS = {"file", "path", "code", "severity", "message"}


def test_a_manifest_loads_with_its_names(manifest):
    assert manifest.app_id == "sdk-fixture"
    assert manifest.version == "0.1.0"
    assert manifest.required_scopes == ["notes.read"]
    assert manifest.tools[0]["scopes_required"] == ["notes.read"]
    assert manifest.tool_names == ["read_note", "ping_tool"]
    assert manifest.schedule_names == ["hourly"]
    assert manifest.routes[1] == {"method": "GET", "path": "/hook", "public": True}
    assert manifest.subscriptions == [
        {"emitter_app": "crm", "event_name": "contact_changed", "target_agent": "writer"}
    ]
    assert manifest.default_agent == "writer"
    assert manifest.egress_hosts == ["api.example.com"]
    assert manifest.text.startswith("apiVersion: platform/v2")
    # The normalised manifest has every default filled in.
    assert manifest["runtime"]["resources"]["memory_mb"] == 256
    assert manifest.data["lifecycle"]["on_inbound"] is False


def test_the_singular_agent_becomes_default(bare):
    text = (FIXTURES / "no-agents.yaml").read_text() + (
        "agent:\n  name: Helper\n  system_prompt: Helps.\n"
    )
    m = load_manifest_from_string(text)
    assert [(a["id"], a["is_default"]) for a in m.agents] == [("default", True)]
    assert bare.agents == []


def test_an_invalid_manifest_raises_manifest_error_with_the_findings():
    with pytest.raises(ManifestError) as err:
        load_manifest_from_string("apiVersion: platform/v2\napp_id: X\n")
    e = err.value
    assert str(e).startswith("invalid manifest: ")
    assert any(p.startswith("app_id:") for p in e.problems), e.problems
    assert all(FINDING_KEYS <= set(f) for f in e.findings)
    app_id = next(f for f in e.findings if f["path"] == "app_id" and f["code"] == "pattern")
    assert (app_id["file"], app_id["severity"], app_id["line"], app_id["column"]) == (
        "atrium.app.yaml",
        "error",
        2,
        9,
    )
    assert "app_id: `X` is not a valid app slug" in str(e)
    assert "[pattern] (line 2, column 9)" in str(e)


@pytest.mark.parametrize(
    ("fixture", "path", "code"),
    [
        ("broken.yaml", "app_id", "pattern"),
        ("broken.yaml", "tools[0].name", "length"),
        ("unknown-field.yaml", "colour", "unknown_field"),
        ("syntax.yaml", "", "syntax"),
    ],
)
def test_broken_manifests_name_the_field_and_rule(fixture, path, code):
    with pytest.raises(ManifestError) as err:
        load_manifest(FIXTURES / fixture)
    found = [(f["path"], f["code"]) for f in err.value.findings]
    assert (path, code) in found, found
    assert err.value.findings[0]["file"].endswith(fixture)


def test_the_findings_are_those_of_the_validator():
    text = (FIXTURES / "broken.yaml").read_text()
    answer = check_manifest(text, "broken.yaml")
    assert answer["valid"] is False and answer["manifest"] is None
    with pytest.raises(ManifestError) as err:
        load_manifest_from_string(text, "broken.yaml")
    assert err.value.findings == answer["findings"]


def test_a_json_manifest_is_read_as_json():
    m = load_manifest(FIXTURES / "manifest.json")
    assert (m.app_id, m.version) == ("sdk-json", "0.2.0")
    # The file name picks the format: YAML text named .json does not parse.
    with pytest.raises(ManifestError) as err:
        load_manifest_from_string((FIXTURES / "atrium.app.yaml").read_text(), "atrium.app.json")
    assert err.value.findings[0]["code"] == "syntax"


def test_a_missing_file_cannot_be_read():
    with pytest.raises(ManifestError) as err:
        load_manifest(FIXTURES / "nope.yaml")
    assert "cannot read" in err.value.problems[0]
    assert "nope.yaml" in err.value.problems[0]


def test_from_manifest_finds_the_file_beside_the_calling_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not where the manifest is
    app = App.from_manifest("fixtures/atrium.app.yaml")
    assert app.manifest.app_id == "sdk-fixture"
    with pytest.raises(ManifestError) as err:
        App.from_manifest("fixtures/broken.yaml")
    assert err.value.findings


def _run_without(env_value: str | None, code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("ATRIUM_MANIFEST_VALIDATOR", None)
    if env_value is not None:
        env["ATRIUM_MANIFEST_VALIDATOR"] = env_value
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )


def test_a_missing_validator_is_a_manifest_error_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.setattr(_manifest, "_validator", None)
    monkeypatch.setenv("ATRIUM_MANIFEST_VALIDATOR", str(tmp_path / "missing.wasm"))
    with pytest.raises(ManifestError) as err:
        load_manifest(FIXTURES / "atrium.app.yaml")
    message = str(err.value)
    assert message.startswith("cannot validate the manifest: the manifest validator module is not available")
    assert "ATRIUM_MANIFEST_VALIDATOR is set to" in message
    assert "missing.wasm, which is not a file" in message
    monkeypatch.delenv("ATRIUM_MANIFEST_VALIDATOR")
    if _manifest.validator_path() is None:  # a source tree ships no validator.wasm
        with pytest.raises(ManifestError) as err:
            load_manifest_from_string("apiVersion: platform/v2\n")
        assert "ATRIUM_MANIFEST_VALIDATOR is not set and the package has no validator.wasm" in str(err.value)


def test_a_broken_validator_module_is_a_manifest_error(monkeypatch, tmp_path):
    bogus = tmp_path / "validator.wasm"
    bogus.write_bytes(b"not wasm")
    monkeypatch.setattr(_manifest, "_validator", None)
    monkeypatch.setenv("ATRIUM_MANIFEST_VALIDATOR", str(bogus))
    with pytest.raises(ManifestError) as err:
        load_manifest(FIXTURES / "atrium.app.yaml")
    assert "cannot be loaded" in str(err.value)
    monkeypatch.setattr(_manifest, "_validator", None)


def test_wasmtime_is_imported_only_to_validate():
    done = _run_without(
        None,
        "import sys, atrium_sdk, atrium_sdk.testing; print('wasmtime' in sys.modules)",
    )
    assert done.stdout.strip() == "False", done.stderr


@pytest.fixture
def embedded(manifest):
    _embedded.install(
        {"atrium.app.yaml": {"text": manifest.text, "manifest": manifest.data}}
    )
    yield
    _embedded._MANIFESTS = None


def test_inside_a_component_the_embedded_manifest_is_used(embedded, manifest, monkeypatch):
    monkeypatch.setenv("ATRIUM_MANIFEST_VALIDATOR", "/nonexistent")  # never consulted
    for path in ("atrium.app.yaml", "./atrium.app.yaml", "/bundle/atrium.app.yaml"):
        m = App.from_manifest(path).manifest
        assert (m.app_id, m.text, m.data) == ("sdk-fixture", manifest.text, manifest.data)
    assert load_manifest_from_string(manifest.text).app_id == "sdk-fixture"


def test_inside_a_component_another_manifest_fails_clearly(embedded):
    with pytest.raises(ManifestError) as err:
        App.from_manifest("other.yaml")
    assert str(err.value) == (
        "cannot load the manifest: the manifest `other.yaml` was not embedded in this "
        "component: the build embedded atrium.app.yaml (`python -m atrium_sdk build "
        "--manifest FILE` chooses it)"
    )
    with pytest.raises(ManifestError) as err:
        load_manifest_from_string("apiVersion: platform/v2\n")
    assert "cannot be validated inside a component" in str(err.value)
