"""The records handlers receive and ctx calls answer (the WIT records of wit/types.wit, with
JSON text fields parsed: `payload` and `metadata` are Python values)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any


@dataclass
class CallInfo:
    """What the platform tells the app about the call it is serving (`context.current`)."""

    tenant_id: str
    app_id: str
    app_version: str
    call_id: str
    chain_depth: int = 1
    visited_agents: list[str] = field(default_factory=list)
    public_route: bool = False


@dataclass
class InboundEnvelope:
    """A message that reached the tenant on an inbound channel (`on_inbound`). `from_` is the
    WIT field `from` (a Python keyword); `metadata` is the channel's details as a dict."""

    message_id: str
    channel: str
    from_: str
    body: str = ""
    subject: str | None = None
    received_at: str = ""
    attachment_ids: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class UserAdded:
    """A user who joined the tenant (`on_user_added`)."""

    user_id: str
    display_name: str
    email: str | None = None


@dataclass
class AppEvent:
    """An event delivered to an `on_event` handler. `payload` is the emitter's JSON payload as
    a Python value; several emitters of one name share a handler and are told apart by
    `emitter_app_id`."""

    event_name: str
    emitter_app_id: str
    payload: Any = None
    target_agent_slug: str | None = None


class SenderType(str, Enum):
    """Who posted a room message."""

    AGENT = "agent"
    USER = "user"
    SYSTEM = "system"


@dataclass
class RoomMessage:
    """A message in a group room (`on_message`, and the message of a `RoomPost`)."""

    id: str
    room_id: str
    tenant_id: str
    sender_type: SenderType
    sender_ref: str
    sender_display: str
    content: str
    mentions: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""


@dataclass
class RoomPost:
    """The answer to `ctx.rooms.post`: the stored message and the members it was routed to."""

    message: RoomMessage
    routed_targets: list[str] = field(default_factory=list)


@dataclass
class EmitResult:
    """The answer to `ctx.events.emit`: `wire_count` 0 means nobody is subscribed."""

    wire_count: int = 0
    dispatched: int = 0
    failures: int = 0


@dataclass
class FetchResponse:
    """Another app's answer to `ctx.apps.fetch`."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def text(self) -> str:
        """The body as UTF-8 text."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class Registration:
    """What an app registered, as `describe` answers the host's health check."""

    manifest: str
    tools: list[str]
    lifecycle: list[str]
    schedules: list[str]
    events: list[str]
    room_messages: bool
    routes: list[str]


class LogLevel(str, Enum):
    """Severity of a log record (`logging.log`)."""

    TRACE = "trace"
    DEBUG = "debug"
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


def parse_json_object(text: str) -> dict[str, Any]:
    """A JSON object from the platform, or an empty dict when the text is not one."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
