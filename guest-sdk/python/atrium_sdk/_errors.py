"""The errors an app sees and raises.

A handler ends a call with a result or one of these exceptions; the SDK maps each to the
WIT `handler-error` variant (wit/types.wit):

| raised by the handler                       | `handler-error` case      |
|---------------------------------------------|---------------------------|
| `InvalidInput(message)`                     | `invalid-input(message)`  |
| `ToolCallError` (from `ctx.tools.call`, ...) | `tool(tool-call-error)`   |
| `AgentCallError` (from `ctx.team`, ...)     | `agent(agent-call-error)` |
| `HandlerFailure(message)`                   | `failed(message)`         |
| any other exception                         | `failed("<Type>: <text>")` |

`NoHandler` and `RegistrationError` are raised by the SDK itself (no handler registered for
the name; a registration that breaks a rule of the manifest).
"""

from __future__ import annotations

from enum import Enum
from typing import Any


#: The platform capabilities by their WIT names; a host that does not offer one answers
#: decision `not_available` naming it (docs/wit.md).
CAPABILITIES = (
    "tools.call",
    "rooms.post",
    "commitments.add",
    "team.delegate",
    "apps.invoke",
    "apps.fetch",
    "events.emit",
    "agent.ask",
)


class AtriumError(Exception):
    """Base class of every exception of the SDK."""


class InvalidInput(AtriumError):
    """The input did not match what the handler accepts: the call fails with `invalid-input`
    (a route answers 400 with the message)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"invalid input: {self.message}"


class HandlerFailure(AtriumError):
    """Any other failure, with a message for the caller: the call fails with `failed`."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UnsupportedAwait(HandlerFailure):
    """A handler awaited something that does not complete synchronously (an event-loop future,
    a task, `asyncio.sleep(1)`): no event loop runs inside a component (see the README)."""


class NoHandler(AtriumError):
    """No handler is registered for the tool, hook, schedule, event or room message
    (`no-handler`; the platform answers `{ok: false, no_handler: true}` for an event)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.message = what

    def __str__(self) -> str:
        return f"no handler: {self.message}"


class ToolCallError(AtriumError):
    """The platform refused or failed a tool call, a room post or a commitment
    (`ToolCallError` of the spec). A handler that lets it propagate fails with `tool`."""

    def __init__(
        self,
        tool_name: str,
        decision: str,
        message: str,
        needed_scopes: list[str] | None = None,
    ) -> None:
        super().__init__(tool_name, decision, message, list(needed_scopes or []))
        self.tool_name = tool_name
        self.decision = decision
        self.message = message
        self.needed_scopes = list(needed_scopes or [])

    @property
    def not_available(self) -> str | None:
        """The capability this host does not offer (`rooms.post`, `commitments.add`,
        `tools.call`) when the decision is `not_available`, else None: an app can fall back
        instead of failing."""
        return self.tool_name if self.decision == "not_available" else None

    def __str__(self) -> str:
        text = f"tool call `{self.tool_name}` failed ({self.decision}): {self.message}"
        if self.needed_scopes:
            text += f" [needed scopes: {', '.join(self.needed_scopes)}]"
        return text

    def __repr__(self) -> str:
        return (
            f"ToolCallError(tool_name={self.tool_name!r}, decision={self.decision!r}, "
            f"message={self.message!r}, needed_scopes={self.needed_scopes!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallError) and (
            self.tool_name,
            self.decision,
            self.message,
            self.needed_scopes,
        ) == (other.tool_name, other.decision, other.message, other.needed_scopes)

    __hash__ = None  # type: ignore[assignment]


class AgentCallError(AtriumError):
    """An agent call failed: team delegation, cross-app invoke or fetch, event emit, ask
    (`AgentCallError` of the spec). A handler that lets it propagate fails with `agent`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def not_available(self) -> str | None:
        """The capability this host does not offer (`agent.ask`, `team.delegate`,
        `apps.invoke`, `apps.fetch`, `events.emit`) when the reason is
        ``not_available: `<capability>` ...``, else None."""
        prefix = "not_available: `"
        if not self.reason.startswith(prefix):
            return None
        name, sep, _ = self.reason[len(prefix) :].partition("`")
        return name if sep and name in CAPABILITIES else None

    def __str__(self) -> str:
        return f"agent call failed: {self.reason}"

    def __repr__(self) -> str:
        return f"AgentCallError(reason={self.reason!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AgentCallError) and self.reason == other.reason

    __hash__ = None  # type: ignore[assignment]


class RegistrationErrorKind(str, Enum):
    """The registration rules; the values are the names of the Rust SDK's
    `RegistrationErrorKind`, plus `NotAsync` of the Python SDK."""

    #: A lifecycle handler whose flag in `lifecycle` is not true.
    LIFECYCLE_DISABLED = "LifecycleDisabled"
    #: A schedule handler whose name is not in `lifecycle.schedules`.
    UNKNOWN_SCHEDULE = "UnknownSchedule"
    #: `scopes_required` outside the manifest's `required_scopes`.
    SCOPE_NOT_REQUIRED = "ScopeNotRequired"
    #: A second handler for the same tool, hook, schedule, event or route.
    DOUBLE_REGISTRATION = "DoubleRegistration"
    #: A tool handler for a tool the manifest does not declare.
    UNKNOWN_TOOL = "UnknownTool"
    #: An event handler for an event the manifest does not subscribe to.
    UNKNOWN_EVENT = "UnknownEvent"
    #: A route handler for a route the manifest does not declare.
    UNKNOWN_ROUTE = "UnknownRoute"
    #: A room handler in an app that declares no agent.
    NO_AGENT = "NoAgent"
    #: An event handler that is not `async def` (the spec rejects synchronous ones).
    NOT_ASYNC = "NotAsync"


class RegistrationError(AtriumError):
    """A registration broke a rule of the manifest: `kind` names the rule, `message` explains
    it (the same words as the Rust SDK)."""

    def __init__(self, kind: RegistrationErrorKind, message: str) -> None:
        super().__init__(kind, message)
        self.kind = kind
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"RegistrationError(kind={self.kind.value}, message={self.message!r})"


def problem_line(finding: dict[str, Any]) -> str:
    """A finding as the Rust SDK's `ManifestError.problems` shows it:
    `path: message [code] (line L, column C)`."""
    path = finding.get("path") or "(manifest)"
    text = f"{path}: {finding.get('message', '')} [{finding.get('code', '')}]"
    line, column = finding.get("line"), finding.get("column")
    if line is not None:
        text += f" (line {line}" + (f", column {column}" if column is not None else "") + ")"
    return text


def lint_line(finding: dict[str, Any]) -> str:
    """A finding as `atrium lint` prints it: `file:line:column: severity[code] path: message`."""
    location = finding.get("file") or ""
    if finding.get("line") is not None:
        location += f":{finding['line']}"
        if finding.get("column") is not None:
            location += f":{finding['column']}"
    path = finding.get("path") or "(file)"
    return (
        f"{location}: {finding.get('severity', 'error')}[{finding.get('code', '')}] "
        f"{path}: {finding.get('message', '')}"
    )


class ManifestError(AtriumError):
    """The manifest could not be loaded: it cannot be read, does not parse or breaks the
    schema, or the validator module is missing. `findings` are the validator's findings
    (`atrium lint --json` shape: file, path, code, severity, message, line, column);
    `problems` has one line per error: `path: message [code] (line L, column C)`."""

    def __init__(
        self,
        problems: list[str],
        findings: list[dict[str, Any]] | None = None,
        *,
        summary: str = "invalid manifest",
    ) -> None:
        self.problems = list(problems)
        self.findings = list(findings or [])
        self.summary = summary
        super().__init__(str(self))

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_manifest_error, (self.problems, self.findings, self.summary))

    @classmethod
    def from_findings(cls, findings: list[dict[str, Any]]) -> ManifestError:
        errors = [f for f in findings if f.get("severity", "error") == "error"]
        return cls([problem_line(f) for f in errors or findings], findings)

    def __str__(self) -> str:
        return f"{self.summary}: {'; '.join(self.problems)}"


def _manifest_error(problems: list[str], findings: list[dict[str, Any]], summary: str) -> ManifestError:
    return ManifestError(problems, findings, summary=summary)
