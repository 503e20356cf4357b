"""`python -m atrium_sdk build`: its errors, and a real build when componentize-py is there."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES

SDK = Path(__file__).resolve().parent.parent
WIT = SDK.parent.parent / "wit"

APP = '''from atrium_sdk import App

app = App.from_manifest("atrium.app.yaml")


@app.tool("ping_tool")
async def ping_tool(ctx):
    return "pong"
'''

BROKEN_REGISTRATION = '''from atrium_sdk import App

app = App.from_manifest("atrium.app.yaml")


@app.tool("write_note")
def write_note(ctx):
    return None
'''


def project(tmp_path: Path, manifest: str = "atrium.app.yaml", app: str = APP) -> Path:
    dir = tmp_path / "proj"
    dir.mkdir()
    shutil.copy(FIXTURES / manifest, dir / "atrium.app.yaml")
    (dir / "app.py").write_text(app)
    return dir


def build(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atrium_sdk", "build", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(SDK), os.environ.get("PYTHONPATH", "")]), **(env or {})},
        **kw,
    )


def test_an_invalid_manifest_is_exit_1_with_the_findings(tmp_path):
    dir = project(tmp_path, "broken.yaml")
    done = build("--project", str(dir))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert "atrium.app.yaml:2:9: error[pattern] app_id: `Bad_Slug` is not a valid app slug: " \
        "lowercase letters, digits and hyphens, starting with a letter, 3 to 64 characters" in lines
    assert any(line.startswith("atrium.app.yaml:") and "error[length] tools[0].name:" in line for line in lines)
    assert lines[-1].startswith(f"error: the manifest {dir / 'atrium.app.yaml'} is invalid (")
    assert lines[-1].endswith("errors); nothing was built")
    assert done.stdout == ""
    assert not (dir / "build").exists()


def test_a_missing_validator_is_exit_1_naming_the_variable(tmp_path):
    dir = project(tmp_path)
    done = build("--project", str(dir), env={"ATRIUM_MANIFEST_VALIDATOR": str(tmp_path / "none.wasm")})
    assert done.returncode == 1
    assert done.stderr.startswith("error: the manifest validator module is not available: ")
    assert "ATRIUM_MANIFEST_VALIDATOR" in done.stderr


def test_a_missing_entry_module_is_exit_1(tmp_path):
    dir = project(tmp_path)
    (dir / "app.py").unlink()
    done = build("--project", str(dir))
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: the project {dir} has no app.py: ")


def test_a_missing_project_is_exit_1(tmp_path):
    done = build("--project", str(tmp_path / "nowhere"))
    assert done.returncode == 1
    assert "does not exist" in done.stderr


def test_a_missing_wit_is_exit_1(tmp_path):
    dir = project(tmp_path)
    done = build("--project", str(dir), "--wit", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.startswith("error: no WIT directory with world `app` of atrium:app: tried ")
    done = build("--project", str(dir), env={"ATRIUM_WIT": str(tmp_path)})
    assert "(ATRIUM_WIT)" in done.stderr


def test_a_missing_componentize_py_is_exit_1(tmp_path):
    import wasmtime

    dir = project(tmp_path)
    only = tmp_path / "site"
    only.mkdir()
    (only / "wasmtime").symlink_to(Path(wasmtime.__file__).parent)
    done = build("--project", str(dir), env={"PYTHONPATH": f"{only}{os.pathsep}{SDK}"})
    assert done.returncode == 1
    assert done.stderr.startswith("error: componentize-py is not importable by this Python")


def test_the_wit_is_found_in_the_source_tree():
    from atrium_sdk._build import find_wit

    assert find_wit(None) == WIT.resolve()


def test_the_componentize_py_command_line(tmp_path):
    from atrium_sdk._build import componentize_command

    command = componentize_command(WIT, tmp_path / "stage", tmp_path / "proj", tmp_path / "out.wasm")
    assert command[:2] == [sys.executable, "-c"]
    assert command[3:] == [
        "-d", str(WIT), "-w", "app",
        "--import-interface-name", "atrium:app/types@0.1.0=atrium_types",
        "--import-interface-name", "wasi:http/types@0.2.12=types",
        "componentize", "_atrium_entry",
        "-p", str(tmp_path / "stage"), "-p", str(tmp_path / "proj"), "-p", str(SDK),
        *site_packages_flags(),
        "-o", str(tmp_path / "out.wasm"),
    ]


def site_packages_flags():
    """The `-p` flags an interpreter outside a virtual environment adds: its site-packages."""
    import site

    if sys.prefix != sys.base_prefix:
        return []
    found = [site.getusersitepackages(), *site.getsitepackages()]
    return [flag for p in found if Path(p).is_dir() for flag in ("-p", p)]


def test_componentize_py_bundles_this_environment_and_never_the_machines(tmp_path, monkeypatch):
    """componentize-py takes its packages from `$VIRTUAL_ENV`, else from `python3` on PATH: the
    build names this interpreter's environment, or an empty one beside its own `-p` flags."""
    from atrium_sdk import _build

    monkeypatch.setenv("VIRTUAL_ENV", "/somewhere/else")
    monkeypatch.setattr(_build.sys, "prefix", "/project/.venv")
    monkeypatch.setattr(_build.sys, "base_prefix", "/usr")
    assert _build.componentize_env(tmp_path)["VIRTUAL_ENV"] == "/project/.venv"
    command = _build.componentize_command(WIT, tmp_path, tmp_path, tmp_path / "out.wasm")
    assert command.count("-p") == 3

    monkeypatch.setattr(_build.sys, "prefix", "/usr")
    env = _build.componentize_env(tmp_path)
    empty = Path(env["VIRTUAL_ENV"])
    assert empty.parent == tmp_path
    assert list((empty / "lib" / "site-packages").iterdir()) == []


needs_componentize_py = pytest.mark.skipif(
    importlib.util.find_spec("componentize_py") is None,
    reason="componentize-py is not installed (PYTHONPATH)",
)

COMPONENT_MAGIC = b"\x00asm\x0d\x00\x01\x00"


@needs_componentize_py
def test_a_project_builds_into_a_component(tmp_path):
    dir = project(tmp_path)
    done = build("--project", str(dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = dir / "build" / "app.wasm"
    assert done.stdout.strip() == str(out)
    assert out.read_bytes()[:8] == COMPONENT_MAGIC
    assert "built " in done.stderr
    # componentize-py imported copies: nothing was written beside the sources or the SDK.
    assert not any(dir.rglob("__pycache__")), sorted(dir.rglob("__pycache__"))
    sdk = Path(__import__("atrium_sdk").__file__).parent
    assert not any(
        p.name.endswith(".cpython-314.pyc") for p in sdk.rglob("*.pyc")
    ), "the build's interpreter wrote into the SDK package"


@needs_componentize_py
def test_a_broken_registration_builds_and_warns(tmp_path):
    dir = project(tmp_path, app=BROKEN_REGISTRATION)
    out = tmp_path / "broken.wasm"
    done = build("--project", str(dir), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert (
        "warning: registration error: cannot register tool `write_note`: it is not in the "
        "manifest's tools (declared: read_note, ping_tool) (the component was built; its health "
        "check and every call fail with this message)"
    ) in done.stderr
    assert out.read_bytes()[:8] == COMPONENT_MAGIC


@needs_componentize_py
def test_an_app_that_fails_at_import_does_not_build(tmp_path):
    dir = project(tmp_path, app=APP + "\nraise RuntimeError('no')\n")
    done = build("--project", str(dir), "--out", str(tmp_path / "x.wasm"))
    assert done.returncode == 1
    assert done.stderr.startswith("error: componentize-py failed")
    assert "RuntimeError: no" in done.stderr
