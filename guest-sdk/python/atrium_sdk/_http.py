"""Requests and responses of the app's HTTP routes, and route matching.

`match_route` follows `atrium_manifest::match_route` exactly: the query and fragment are
ignored, one leading and one trailing `/` are trimmed, segments are compared one to one, and a
`{name}` placeholder takes at least one character, also inside a segment
(`invoice-{id}.pdf`); the first assignment with the shortest leading placeholders wins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._errors import InvalidInput

#: Largest request body a route reads in a component; a larger one is answered 413.
MAX_REQUEST_BODY = 1024 * 1024
#: Largest outbound response body `ctx.http` reads in a component.
MAX_OUTBOUND_BODY = 4 * 1024 * 1024


def _trim(p: str) -> str:
    if p.startswith("/"):
        p = p[1:]
    if p.endswith("/"):
        p = p[:-1]
    return p


def _pieces(pattern: str) -> list[tuple[bool, str]] | None:
    pieces: list[tuple[bool, str]] = []
    rest = pattern
    while "{" in rest:
        open_at = rest.index("{")
        close_rel = rest[open_at:].find("}")
        if close_rel < 0:
            return None
        close = open_at + close_rel
        if open_at > 0:
            pieces.append((False, rest[:open_at]))
        pieces.append((True, rest[open_at + 1 : close]))
        rest = rest[close + 1 :]
    if rest:
        pieces.append((False, rest))
    return pieces


def _match_pieces(pieces: list[tuple[bool, str]], segment: str) -> list[tuple[str, str]] | None:
    if not pieces:
        return [] if segment == "" else None
    (is_param, text), rest = pieces[0], pieces[1:]
    if not is_param:
        if not segment.startswith(text):
            return None
        return _match_pieces(rest, segment[len(text) :])
    for end in range(1, len(segment) + 1):
        found = _match_pieces(rest, segment[end:])
        if found is not None:
            return [(text, segment[:end]), *found]
    return None


def match_route(pattern: str, path: str) -> list[tuple[str, str]] | None:
    """The values of the pattern's placeholders in order, or None when `path` does not match."""
    for sep in ("?", "#"):
        path = path.split(sep, 1)[0]
    pattern_segments = _trim(pattern).split("/")
    path_segments = _trim(path).split("/")
    if len(pattern_segments) != len(path_segments):
        return None
    params: list[tuple[str, str]] = []
    for pat, seg in zip(pattern_segments, path_segments):
        pieces = _pieces(pat)
        # Request paths are untrusted: bound the backtracking.
        if pieces is None or len(seg.encode("utf-8")) > 1024:
            return None
        found = _match_pieces(pieces, seg)
        if found is None:
            return None
        params.extend(found)
    return params


@dataclass
class Request:
    """An HTTP request to one of the app's routes."""

    #: Upper-case method.
    method: str
    #: The path, without the query.
    path: str
    #: The query string without `?`, or None.
    query: str | None = None
    #: Header names (lower-case) and values.
    headers: list[tuple[str, str]] = field(default_factory=list)
    #: The body.
    body: bytes = b""
    #: The values of the route's `{placeholders}`.
    params: dict[str, str] = field(default_factory=dict)

    def param(self, name: str) -> str | None:
        """The value of placeholder `name`."""
        return self.params.get(name)

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive)."""
        lower = name.lower()
        return next((v for k, v in self.headers if k.lower() == lower), None)

    def query_param(self, name: str) -> str | None:
        """The value of query parameter `name` (not percent-decoded)."""
        if not self.query:
            return None
        for pair in self.query.split("&"):
            key, sep, value = pair.partition("=")
            if sep and key == name:
                return value
        return None

    def text(self) -> str:
        """The body as UTF-8 text."""
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body parsed as JSON; `InvalidInput` (a 400 answer) when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise InvalidInput(f"the body is not the expected JSON: {e}") from None


@dataclass
class Response:
    """An HTTP response from one of the app's routes (also what `ctx.http` answers)."""

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    @classmethod
    def json(cls, value: Any, status: int = 200) -> Response:
        """A JSON response."""
        try:
            body = json.dumps(value).encode("utf-8")
        except (TypeError, ValueError) as e:
            return cls.text(500, f"the response does not serialize: {e}")
        return cls(status, [("content-type", "application/json")], body)

    @classmethod
    def text(cls, status: int, text: str) -> Response:
        """A plain-text response."""
        return cls(status, [("content-type", "text/plain; charset=utf-8")], text.encode("utf-8"))

    def with_header(self, name: str, value: str) -> Response:
        """The response with one more header."""
        self.headers.append((name, value))
        return self

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive)."""
        lower = name.lower()
        return next((v for k, v in self.headers if k.lower() == lower), None)

    def text_body(self) -> str:
        """The body as UTF-8 text."""
        return self.body.decode("utf-8", errors="replace")

    def json_body(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class OutboundRequest:
    """An outbound HTTP request of `ctx.http.send`."""

    method: str
    url: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
