"""Invoice Desk (Python): files incoming invoices, approves them within a limit, chases late
payers. The Python twin of examples/invoices, with the same behaviour:

- tools with scopes (`list_invoices`, `approve_invoice`, `send_reminder`) that call the
  platform's record and mail tools;
- install settings (`company_name`, `approval_limit`, `currency`, `reminder_text`, `approver`);
- a secret (`BANK_API_KEY`) and outbound HTTP to a declared egress host (`*.bank.example`);
- events it emits (`invoice_approved`, `invoice_overdue`) and one it handles (`entry_booked`
  from the ledger app);
- lifecycle hooks and named schedules;
- HTTP routes, one of them public (an invoice as PDF).

Platform tools used: `records.query` (scope `invoices.read`), `records.put` and
`records.update` (`invoices.write`), `mail.send` (`mail.send`).
"""

from __future__ import annotations

import json

from atrium_sdk import AgentCallError, App, HandlerFailure, InvalidInput, Request, Response

from pdf import single_page

app = App.from_manifest("atrium.app.yaml")


def number(value: float) -> str:
    """A number as the Rust twin prints it: 1000.0 as `1000`."""
    return str(int(value)) if float(value).is_integer() else str(value)


def currency(ctx) -> str:
    return ctx.config.get("currency") or "EUR"


async def query(ctx, status: str | None = None) -> list[dict]:
    where = {"record_type": "invoice"}
    if status is not None:
        where["status"] = status
    invoices = await ctx.tools.call("records.query", where)
    if not isinstance(invoices, list):
        raise HandlerFailure("records.query answered something other than a list")
    rows = [
        {
            "id": str(i.get("id", "")),
            "payer": i.get("payer", ""),
            "amount": float(i.get("amount", 0.0)),
            "status": i.get("status", ""),
            "issued_at": i.get("issued_at", ""),
        }
        for i in invoices
    ]
    rows.sort(key=lambda i: i["issued_at"], reverse=True)
    return rows


@app.tool("list_invoices", scopes_required=["invoices.read"])
async def list_invoices(ctx, status: str | None = None):
    return {"currency": currency(ctx), "invoices": await query(ctx, status)}


@app.tool("approve_invoice", scopes_required=["invoices.read", "invoices.write"])
async def approve_invoice(ctx, id: str, amount: float):
    limit = ctx.config.get("approval_limit", 5000.0)
    if amount > limit:
        raise InvalidInput(
            f"invoice {id} is {number(amount)} {currency(ctx)}, above the approval limit of "
            f"{number(limit)}"
        )
    approver = ctx.config.get("approver") or ""
    await ctx.tools.call(
        "records.update",
        {"id": id, "fields": {"status": "approved", "approved_by": approver}},
    )
    emitted = await ctx.events.emit(
        "invoice_approved", {"id": id, "amount": amount, "currency": currency(ctx)}
    )
    return {"id": id, "status": "approved", "subscribers": emitted.wire_count}


@app.tool("send_reminder", scopes_required=["mail.send"])
async def send_reminder(ctx, id: str, to: str):
    text = ctx.config.get("reminder_text") or "Your invoice is overdue."
    company = ctx.config.get("company_name") or ""
    sent = await ctx.tools.call(
        "mail.send", {"to": to, "subject": f"Invoice {id} from {company}", "body": text}
    )
    return {"id": id, "sent": sent}


@app.tool("chase_overdue", scopes_required=[])
async def chase_overdue(ctx, id: str):
    """Asks the collector to draft a reminder (team delegation from the clerk); when the
    collector cannot answer (`AgentCallError`), it promises a follow-up instead."""
    prompt = f"Invoice {id} is overdue. Draft a short, polite and firm payment reminder."
    try:
        draft = await ctx.team.delegate("collector", prompt, from_agent="clerk")
    except AgentCallError as refused:
        commitment = await ctx.commitments.add(
            f"Chase invoice {id}",
            f"The collector could not draft the reminder: {refused.reason}",
            "collector",
        )
        return {"id": id, "draft": None, "reason": refused.reason, "commitment": commitment}
    return {"id": id, "draft": draft}


@app.on_install
async def on_install(ctx):
    name = ctx.config.get("company_name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("install setting company_name is required")
    example = ctx.public_callback_url("/files/invoice-example.pdf")
    ctx.logger.info(
        f"installed for tenant {ctx.tenant_id}; public invoice links look like {example}"
    )


@app.on_uninstall
async def on_uninstall(ctx):
    ctx.logger.info(f"uninstalled for tenant {ctx.tenant_id}")


@app.on_inbound
async def on_inbound(ctx, envelope):
    subject = envelope.subject or ""
    if envelope.channel != "email" or "invoice" not in subject.lower():
        ctx.logger.debug(f"ignored inbound {envelope.message_id} on {envelope.channel}")
        return
    record = {
        "payer": envelope.from_,
        "subject": subject,
        "status": "new",
        "issued_at": envelope.received_at,
        "attachment_ids": envelope.attachment_ids,
        "source_message": envelope.message_id,
    }
    await ctx.tools.call("records.put", {"record_type": "invoice", "record": record})


@app.on_schedule("nightly_reconcile")
async def nightly_reconcile(ctx):
    key = ctx.secrets.get("BANK_API_KEY")
    if key is None:
        ctx.logger.warning("BANK_API_KEY is not set; skipping reconciliation")
        return
    response = await ctx.http.get(
        "https://api.bank.example/v1/payments?status=settled",
        headers=[("authorization", f"Bearer {key}")],
    )
    if response.status != 200:
        raise HandlerFailure(f"the bank answered {response.status}")
    try:
        payments = json.loads(response.body)
    except ValueError as e:
        raise HandlerFailure(f"JSON: {e}") from None
    for payment in payments:
        await ctx.tools.call(
            "records.update", {"id": payment["invoice_id"], "fields": {"status": "paid"}}
        )
    ctx.logger.info(f"reconciled {len(payments)} payments")


@app.on_schedule("monday_digest")
async def monday_digest(ctx):
    for invoice in await query(ctx, "overdue"):
        await ctx.events.emit(
            "invoice_overdue",
            {"id": invoice["id"], "payer": invoice["payer"], "amount": invoice["amount"]},
        )


@app.on_event("entry_booked")
async def entry_booked(ctx, event):
    entry = event.payload
    if not isinstance(entry, dict):
        raise InvalidInput("entry_booked payload: expected an object")
    for field in ("invoice_id", "entry_id"):
        if not isinstance(entry.get(field), str):
            raise InvalidInput(f"entry_booked payload: missing field `{field}`")
    await ctx.tools.call(
        "records.update",
        {"id": entry["invoice_id"], "fields": {"ledger_entry": entry["entry_id"]}},
    )
    return {"filed": True, "invoice_id": entry["invoice_id"], "from": event.emitter_app_id}


@app.route("GET", "/invoices")
async def get_invoices(ctx, request: Request) -> Response:
    invoices = await query(ctx, request.query_param("status"))
    return Response.json({"currency": currency(ctx), "invoices": invoices})


@app.route("PATCH", "/invoices/{id}")
async def patch_invoice(ctx, request: Request) -> Response:
    body = request.json()
    if not isinstance(body, dict) or not isinstance(body.get("status"), str):
        raise InvalidInput("the body is not the expected JSON: missing field `status`")
    if not isinstance(body.get("amount"), (int, float)) or isinstance(body["amount"], bool):
        raise InvalidInput("the body is not the expected JSON: missing field `amount`")
    if body["status"] != "approved":
        return Response.text(422, "only `approved` can be set through this route")
    result = await approve_invoice(ctx, request.param("id") or "", float(body["amount"]))
    return Response.json(result)


@app.route("GET", "/files/invoice-{id}.pdf")
async def invoice_pdf(ctx, request: Request) -> Response:
    company = ctx.config.get("company_name") or "Invoice Desk"
    body = single_page(f"{company} - invoice {request.param('id') or ''}")
    return Response(200, [("content-type", "application/pdf")], body)
