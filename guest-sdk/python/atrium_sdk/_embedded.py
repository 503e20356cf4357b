"""The manifests embedded in a component by `python -m atrium_sdk build`.

The generated entry module installs them before it imports the app, so `App.from_manifest`
finds them during pre-initialisation and in every call. Natively nothing is installed and the
SDK validates manifests with the validator module instead.
"""

from __future__ import annotations

import posixpath
from typing import Any

_MANIFESTS: dict[str, dict[str, Any]] | None = None


def install(manifests: dict[str, dict[str, Any]]) -> None:
    """Installs the embedded manifests: relative file name -> {"text", "manifest"}."""
    global _MANIFESTS
    _MANIFESTS = {
        _normal(name): {"file": name, "text": m["text"], "manifest": m["manifest"]}
        for name, m in manifests.items()
    }


def active() -> bool:
    """Whether the SDK runs inside a component built by the build tool."""
    return _MANIFESTS is not None


def files() -> list[str]:
    """The embedded manifests' file names."""
    return sorted(m["file"] for m in (_MANIFESTS or {}).values())


def _normal(path: str) -> str:
    path = path.replace("\\", "/")
    normal = posixpath.normpath(path)
    return normal[2:] if normal.startswith("./") else normal


def find(path: str) -> dict[str, Any] | None:
    """The embedded manifest named `path` (relative to the project), else the only one with
    the same file name (so a path built from `__file__` finds it too)."""
    if _MANIFESTS is None:
        return None
    normal = _normal(path)
    if normal in _MANIFESTS:
        return _MANIFESTS[normal]
    base = posixpath.basename(normal)
    same = [m for key, m in _MANIFESTS.items() if posixpath.basename(key) == base]
    return same[0] if len(same) == 1 else None


def find_by_text(text: str) -> dict[str, Any] | None:
    """The embedded manifest with exactly this text."""
    return next((m for m in (_MANIFESTS or {}).values() if m["text"] == text), None)
