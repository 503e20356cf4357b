"""Loading the manifest: strict validation by the project's own validator.

There is one manifest validator, the Rust one of `atrium lint`, compiled to a WebAssembly
module with no imports (guest-sdk/manifest-wasm). Natively the SDK runs it with the `wasmtime`
package (imported here, lazily, and nowhere else). The module is found at the path in
`ATRIUM_MANIFEST_VALIDATOR`, else at `validator.wasm` inside this package.

Inside a component nothing can run it, so `python -m atrium_sdk build` validates the manifest
natively and embeds its text and the validated, normalised manifest (`_embedded`);
`App.from_manifest` inside the component reads the embedded one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import _embedded
from ._errors import ManifestError

#: The environment variable naming the validator module.
VALIDATOR_ENV = "ATRIUM_MANIFEST_VALIDATOR"

_MASK64 = (1 << 64) - 1


class Manifest:
    """A validated manifest: `text` as written, `data` the normalised manifest (the JSON of
    `atrium_manifest::Manifest`: defaults filled in, singular `agent` turned into `agents`
    with id `default`, route methods upper-case), and the names the SDK checks
    registrations against."""

    def __init__(self, text: str, data: dict[str, Any], file: str = "atrium.app.yaml") -> None:
        self.text = text
        self.data = data
        self.file = file

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        """A top-level field of the normalised manifest."""
        return self.data.get(key, default)

    def __repr__(self) -> str:
        return f"Manifest({self.app_id}@{self.version})"

    @property
    def app_id(self) -> str:
        return self.data["app_id"]

    @property
    def version(self) -> str:
        return self.data["version"]

    @property
    def name(self) -> str:
        return self.data.get("name", "")

    @property
    def required_scopes(self) -> list[str]:
        return list(self.data.get("required_scopes", []))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.data.get("tools", []))

    @property
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.tools]

    @property
    def lifecycle(self) -> dict[str, Any]:
        return dict(self.data.get("lifecycle", {}))

    @property
    def schedule_names(self) -> list[str]:
        return [s["name"] for s in self.lifecycle.get("schedules", [])]

    @property
    def agents(self) -> list[dict[str, Any]]:
        return list(self.data.get("agents", []))

    @property
    def default_agent(self) -> str | None:
        return next((a["id"] for a in self.agents if a.get("is_default")), None)

    @property
    def emits(self) -> list[str]:
        return list(self.data.get("emits", []))

    @property
    def subscriptions(self) -> list[dict[str, Any]]:
        """`subscribes_to`, each with `emitter_app`, `event_name` and `target_agent` (None
        when the subscription wakes a heartbeat)."""
        out = []
        for s in self.data.get("subscribes_to", []):
            target = s.get("target") or {}
            out.append(
                {
                    "emitter_app": s["emitter_app"],
                    "event_name": s["event_name"],
                    "target_agent": target.get("agent") if isinstance(target, dict) else None,
                }
            )
        return out

    @property
    def routes(self) -> list[dict[str, Any]]:
        """`http_routes`, each with `method` (upper-case), `path` and `public`."""
        return [
            {"method": r["method"].upper(), "path": r["path"], "public": bool(r.get("public"))}
            for r in self.data.get("http_routes", [])
        ]

    @property
    def settings(self) -> list[str]:
        return [s["id"] for s in self.data.get("install_settings", [])]

    @property
    def egress_hosts(self) -> list[str]:
        return list((self.data.get("network") or {}).get("egress_hosts", []))


# --- the validator ----------------------------------------------------------------------

_validator: Any = None


def validator_path() -> Path | None:
    """Where the validator module is: `ATRIUM_MANIFEST_VALIDATOR`, else `validator.wasm` in
    the package; None when neither exists."""
    env = os.environ.get(VALIDATOR_ENV)
    if env:
        path = Path(env)
        return path if path.is_file() else None
    shipped = Path(__file__).with_name("validator.wasm")
    return shipped if shipped.is_file() else None


def _missing_validator() -> ManifestError:
    env = os.environ.get(VALIDATOR_ENV)
    where = (
        f"{VALIDATOR_ENV} is set to {env}, which is not a file"
        if env
        else f"{VALIDATOR_ENV} is not set and the package has no validator.wasm "
        f"({Path(__file__).with_name('validator.wasm')})"
    )
    return ManifestError(
        [
            f"the manifest validator module is not available: {where}. Set {VALIDATOR_ENV} "
            "to the path of atrium_manifest_wasm.wasm (built from guest-sdk/manifest-wasm for "
            "wasm32-unknown-unknown), or install an atrium-sdk package that ships validator.wasm"
        ],
        summary="cannot validate the manifest",
    )


class _Validator:
    """The validator module instantiated once per process (it has no imports)."""

    def __init__(self, path: Path) -> None:
        try:
            import wasmtime  # noqa: PLC0415 - native only; never imported in a component
        except ImportError:
            raise ManifestError(
                [
                    "the manifest validator needs the `wasmtime` package natively: "
                    "pip install wasmtime"
                ],
                summary="cannot validate the manifest",
            ) from None
        self.path = path
        self.wasmtime = wasmtime
        engine = wasmtime.Engine()
        self.module = wasmtime.Module.from_file(engine, str(path))
        self.engine = engine

        self._sandbox: tuple[Any, Any] | None = None

    def _call(self, store: Any, exports: Any, function: str, request: dict[str, Any]) -> Any:
        memory = exports["memory"]
        data = json.dumps(request).encode("utf-8")
        ptr = exports["atrium_alloc"](store, len(data))
        memory.write(store, data, ptr)
        packed = exports[function](store, ptr, len(data)) & _MASK64
        answer_ptr, answer_len = packed >> 32, packed & 0xFFFFFFFF
        answer = bytes(memory.read(store, answer_ptr, answer_ptr + answer_len))
        exports["atrium_free"](store, answer_ptr, answer_len)
        return json.loads(answer)

    def check(self, file: str, text: str) -> dict[str, Any]:
        # A fresh store per check: a validator bug cannot leak state into the next check.
        store = self.wasmtime.Store(self.engine)
        exports = self.wasmtime.Instance(store, self.module, []).exports(store)
        return self._call(store, exports, "atrium_check", {"file": file, "text": text})

    def sandbox(self, request: dict[str, Any]) -> dict[str, Any]:
        # One instance for the sandbox checks: it keeps the last manifest parsed, and a test
        # client asks many checks of one manifest.
        if self._sandbox is None:
            store = self.wasmtime.Store(self.engine)
            exports = self.wasmtime.Instance(store, self.module, []).exports(store)
            try:
                exports["atrium_sandbox"]
            except KeyError:
                raise ManifestError(
                    [
                        f"the validator module {self.path} has no atrium_sandbox function (it "
                        "was built from an older source tree): rebuild guest-sdk/manifest-wasm"
                    ],
                    summary="cannot run the sandbox checks",
                ) from None
            self._sandbox = (store, exports)
        store, exports = self._sandbox
        return self._call(store, exports, "atrium_sandbox", request)


def check_manifest(text: str, file: str = "atrium.app.yaml") -> dict[str, Any]:
    """Runs the validator: `{"valid", "manifest", "findings"}` exactly as it answers.
    Raises `ManifestError` when the validator is not available."""
    return _module().check(file, text)


def sandbox_check(request: dict[str, Any]) -> dict[str, Any]:
    """Runs one of the host's sandbox checks in the validator module (`atrium_sandbox`, for
    the test client): `{"ok": ...}`, `{"tool_refusal": ...}`, `{"agent_refusal": ...}`,
    `{"refusal": "..."}` or `{"error": "..."}`."""
    return _module().sandbox(request)


def _module() -> _Validator:
    global _validator
    path = validator_path()
    if path is None:
        raise _missing_validator()
    if _validator is None or _validator.path != path:
        try:
            _validator = _Validator(path)
        except ManifestError:
            raise
        except Exception as e:  # noqa: BLE001 - a broken module file
            raise ManifestError(
                [f"the manifest validator module {path} cannot be loaded: {e}"],
                summary="cannot validate the manifest",
            ) from None
    return _validator


def load_manifest_from_string(text: str, file: str = "atrium.app.yaml") -> Manifest:
    """Loads and strictly validates a manifest from text (`loadManifestFromString`);
    `ManifestError` with the findings when it is invalid. `file` names it in findings and
    picks the format (`.json` is JSON, anything else YAML)."""
    if _embedded.active():
        found = _embedded.find_by_text(text)
        if found is not None:
            return Manifest(found["text"], found["manifest"], found["file"])
        raise ManifestError(
            [
                "a manifest cannot be validated inside a component: only the manifest "
                "embedded by `python -m atrium_sdk build` can be loaded "
                f"({', '.join(_embedded.files()) or 'none'})"
            ],
            summary="cannot load the manifest",
        )
    answer = check_manifest(text, file)
    findings = answer.get("findings") or []
    if not answer.get("valid") or answer.get("manifest") is None:
        if not findings:
            findings = [
                {
                    "file": file,
                    "path": "",
                    "code": "syntax",
                    "severity": "error",
                    "message": answer.get("error", "the validator rejected the manifest"),
                }
            ]
        raise ManifestError.from_findings(findings)
    return Manifest(text, answer["manifest"], file)


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Loads and strictly validates a manifest file (`loadManifest`)."""
    if _embedded.active():
        found = _embedded.find(os.fspath(path))
        if found is None:
            raise ManifestError(
                [
                    f"the manifest `{os.fspath(path)}` was not embedded in this component: the "
                    f"build embedded {', '.join(_embedded.files()) or 'none'} "
                    "(`python -m atrium_sdk build --manifest FILE` chooses it)"
                ],
                summary="cannot load the manifest",
            )
        return Manifest(found["text"], found["manifest"], found["file"])
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ManifestError([f"cannot read {p}: {e.strerror or e}"]) from None
    except UnicodeDecodeError as e:
        raise ManifestError([f"cannot read {p}: it is not UTF-8 ({e})"]) from None
    return load_manifest_from_string(text, os.fspath(path))
