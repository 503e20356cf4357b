"""A Python test app for the host's limits (memory_mb 64): `echo` answers its arguments
(benchmarks), `bomb` allocates 1 MiB at a time without bound (stopped at the memory cap),
`spin` loops forever (stopped at the deadline)."""

from atrium_sdk import App

app = App.from_manifest("atrium.app.yaml")


@app.tool("echo")
def echo(ctx, **args):
    return args


@app.tool("bomb")
def bomb(ctx):
    hoard = []
    while True:
        hoard.append(bytearray(1 << 20))


@app.tool("spin")
def spin(ctx):
    x = 0
    while True:
        x += 1
