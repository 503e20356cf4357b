"""{{name}}: an Atrium app.

`greet` answers with the install's `greeting` setting (and greets the world when no `name`
is given). `python -m pytest` runs the handler
natively against the SDK's test client; `python -m atrium_sdk build` (and `atrium deploy`)
builds the component.
"""

from atrium_sdk import App, InvalidInput

app = App.from_manifest("atrium.app.yaml")


@app.tool("greet")
async def greet(ctx, name: str = "world"):
    name = name.strip()
    if not name:
        raise InvalidInput("`name` is empty")
    greeting = ctx.config.get("greeting") or "Hello"
    return {"message": f"{greeting}, {name}!"}
