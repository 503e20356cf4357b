"""The Python SDK for Atrium apps.

An app loads its manifest (strictly validated), registers its handlers with decorators, and
is built into a WebAssembly component by `python -m atrium_sdk build`:

```python
from atrium_sdk import App, InvalidInput

app = App.from_manifest("atrium.app.yaml")

@app.tool("greet")
async def greet(ctx, name: str):
    if not name.strip():
        raise InvalidInput("`name` is empty")
    greeting = ctx.config.get("greeting", "Hello")
    return {"message": f"{greeting}, {name}!"}
```

Handlers reach the platform through `ctx`: `await ctx.tools.call(name, args)`,
`ctx.secrets.get(key)`, `ctx.config`, `await ctx.rooms.post(...)`, `await ctx.team.delegate(...)`,
`await ctx.apps.invoke(...)` / `fetch(...)`, `await ctx.events.emit(...)`,
`await ctx.agent.ask(...)`, `await ctx.commitments.add(...)`, `await ctx.http.get(...)`,
`ctx.public_callback_url(path)`, `ctx.logger`. `atrium_sdk.testing` runs an app natively with
mocks. See README.md.
"""

from ._app import App
from ._ctx import Ctx
from ._errors import (
    AgentCallError,
    AtriumError,
    HandlerFailure,
    InvalidInput,
    ManifestError,
    NoHandler,
    RegistrationError,
    RegistrationErrorKind,
    ToolCallError,
    UnsupportedAwait,
)
from ._http import OutboundRequest, Request, Response, match_route
from ._manifest import Manifest, check_manifest, load_manifest, load_manifest_from_string
from ._types import (
    AppEvent,
    CallInfo,
    EmitResult,
    FetchResponse,
    InboundEnvelope,
    LogLevel,
    Registration,
    RoomMessage,
    RoomPost,
    SenderType,
    UserAdded,
)

__version__ = "0.1.0"

__all__ = [
    "AgentCallError",
    "App",
    "AppEvent",
    "AtriumError",
    "CallInfo",
    "Ctx",
    "EmitResult",
    "FetchResponse",
    "HandlerFailure",
    "InboundEnvelope",
    "InvalidInput",
    "LogLevel",
    "Manifest",
    "ManifestError",
    "NoHandler",
    "OutboundRequest",
    "Registration",
    "RegistrationError",
    "RegistrationErrorKind",
    "Request",
    "Response",
    "RoomMessage",
    "RoomPost",
    "SenderType",
    "ToolCallError",
    "UnsupportedAwait",
    "UserAdded",
    "check_manifest",
    "load_manifest",
    "load_manifest_from_string",
    "match_route",
]
