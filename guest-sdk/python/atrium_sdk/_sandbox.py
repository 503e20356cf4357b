"""The host's sandbox rules, for the native test backend only.

In a component every call goes to the host, which checks it with `atrium_manifest::sandbox`.
The test client must refuse the same inputs with the same decision and the same words, so it
runs those very rules: the validator module exports them as `atrium_sandbox`
(guest-sdk/manifest-wasm/src/sandbox.rs), and each function here is one check of it; none of
the rules is written here a second time. Nothing here is used inside a component.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ._errors import AgentCallError, HandlerFailure, ToolCallError
from ._manifest import Manifest, sandbox_check


@dataclass
class Chain:
    """The call a check is made in: the chain's depth and visited agents, and whether the call
    serves a public route."""

    depth: int = 1
    visited: list[str] = field(default_factory=list)
    public_route: bool = False


def _run(m: Manifest, chain: Chain | None, check: dict[str, Any]) -> Any:
    chain = chain or Chain()
    outcome = sandbox_check(
        {
            "manifest": m.text,
            "chain": {"depth": chain.depth, "visited": list(chain.visited)},
            "public_route": chain.public_route,
            "check": check,
        }
    )
    if "ok" in outcome:
        return outcome["ok"]
    if "tool_refusal" in outcome:
        r = outcome["tool_refusal"]
        raise ToolCallError(r["tool_name"], r["decision"], r["message"], r["needed_scopes"])
    if "agent_refusal" in outcome:
        raise AgentCallError(outcome["agent_refusal"]["reason"])
    if "refusal" in outcome:
        raise HandlerFailure(outcome["refusal"])
    raise RuntimeError(f"the sandbox checks failed: {outcome.get('error', outcome)}")


def tool_arguments(m: Manifest, tool: str, args: str) -> Any:
    """`tools.call`: the arguments must be a JSON object; answers it."""
    return _run(m, None, {"kind": "tool_arguments", "tool": tool, "args": args})


def tool_scopes(m: Manifest, tool: str, needs: list[str], granted: set[str]) -> None:
    """`tools.call`: the install must hold every scope the tool needs."""
    _run(
        m,
        None,
        {"kind": "tool_scopes", "tool": tool, "needs": list(needs), "granted": sorted(granted)},
    )


def room_post(
    m: Manifest, from_agent: str, content: str, metadata: str | None, granted: set[str]
) -> tuple[str, str, dict[str, Any]]:
    """`rooms.post`: answers (sender_ref, sender_display, metadata object); the install must
    hold `rooms.write`."""
    ok = _run(
        m,
        None,
        {
            "kind": "room_post",
            "from_agent": from_agent,
            "content": content,
            "metadata": metadata,
            "granted": sorted(granted),
        },
    )
    return ok["sender_ref"], ok["sender_display"], ok["metadata"]


def commitment(
    m: Manifest, title: str, content: str, from_agent: str, due_at: str | None
) -> None:
    """`commitments.add`."""
    _run(
        m,
        None,
        {
            "kind": "commitment",
            "title": title,
            "content": content,
            "from_agent": from_agent,
            "due_at": due_at,
        },
    )


def delegate(m: Manifest, chain: Chain, target: str, from_agent: str) -> None:
    """`team.delegate`."""
    _run(m, chain, {"kind": "delegate", "target": target, "from_agent": from_agent})


def invoke(m: Manifest, chain: Chain, app: str, agent: str) -> None:
    """`apps.invoke`."""
    _run(m, chain, {"kind": "invoke", "app": app, "agent": agent})


def fetch(m: Manifest, chain: Chain, path: str, method: str) -> str:
    """`apps.fetch`: answers the normalised method."""
    return _run(m, chain, {"kind": "fetch", "path": path, "method": method})["method"]


def emit(m: Manifest, chain: Chain, name: str, payload: str) -> Any:
    """`events.emit`: answers the payload as a value."""
    return _run(m, chain, {"kind": "emit", "name": name, "payload": payload})["payload"]


def ask(m: Manifest, chain: Chain, agent: str | None) -> str:
    """`agent.ask`: answers the agent's slug."""
    return _run(m, chain, {"kind": "ask", "agent": agent})["agent"]


def not_available(m: Manifest, capability: str) -> None:
    """Raises what a host that does not offer `capability` answers: `ToolCallError` or
    `AgentCallError` with decision `not_available`."""
    _run(m, None, {"kind": "not_available", "capability": capability})


def public_callback_path(m: Manifest, path: str) -> None:
    """`context.public-callback-url`: `HandlerFailure` with the host's words when `path`
    matches no public route."""
    _run(m, None, {"kind": "public_callback_path", "path": path})


def secret_key(m: Manifest, key: str) -> str | None:
    """`secrets.get`: None when the key has the secret key format, else the warning the host
    logs (the key then reads as unset)."""
    try:
        _run(m, None, {"kind": "secret_key", "key": key})
    except HandlerFailure as refusal:
        return refusal.message
    return None


def extract_mentions(m: Manifest, content: str) -> list[str]:
    """The `@<app>:<slug>` and `@user:<uuid>` mentions of a message, as the host finds them."""
    return list(_run(m, None, {"kind": "extract_mentions", "content": content}))


def egress_allows(m: Manifest, host: str) -> bool:
    """Outbound HTTP: whether the manifest's `network.egress_hosts` allow `host` (exact names,
    case-insensitive, or `*.example.com` for the subdomains of example.com)."""
    return bool(_run(m, None, {"kind": "egress", "host": host}))


def url_host(url: str) -> str:
    """The host of an http(s) URL, without the port (a bracketed IPv6 address kept whole), as
    the Rust SDK's test client takes it."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    authority = re.split(r"[/?]", rest, maxsplit=1)[0]
    name, sep, port = authority.rpartition(":")
    if sep and "]" not in port:
        return name
    return authority


def mock_file(text: str) -> list[dict[str, Any]]:
    """The entries of the developer tool's mock file, parsed as `atrium call` and `atrium dev`
    parse it: `{name, scopes, result}` or `{name, scopes, error: {decision, message,
    needed_scopes}}`. Raises `ValueError` with the parser's words naming the entry."""
    outcome = sandbox_check({"check": {"kind": "mock_file", "text": text}})
    if "ok" in outcome:
        return outcome["ok"]
    if "refusal" in outcome:
        raise ValueError(outcome["refusal"])
    raise RuntimeError(f"the sandbox checks failed: {outcome.get('error', outcome)}")
