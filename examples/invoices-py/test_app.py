"""The handlers of app.py against the SDK's test client (the twin of
examples/invoices/src/tests.rs). Run: python -m pytest examples/invoices-py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atrium_sdk import InvalidInput, NoHandler, Response, ToolCallError
from atrium_sdk.testing import TestClient, inbound_envelope

from app import app
from pdf import single_page

HERE = Path(__file__).parent
ALL_SCOPES = ["invoices.read", "invoices.write", "mail.send"]


def client() -> TestClient:
    return (
        TestClient(app)
        .grant(*ALL_SCOPES)
        .setting("company_name", "Acme")
        .setting("approval_limit", 1000)
        .setting("approver", "user-7")
        .mock_tool(
            "records.query",
            [
                {"id": "inv-1", "payer": "Beta", "amount": 120.0, "status": "new", "issued_at": "2026-03-01"},
                {"id": "inv-2", "payer": "Gamma", "amount": 80.0, "status": "overdue", "issued_at": "2026-04-01"},
            ],
            scopes=["invoices.read"],
        )
        .mock_tool("records.update", {"ok": True}, scopes=["invoices.write"])
        .mock_tool("records.put", {"id": "inv-9"}, scopes=["invoices.write"])
        .mock_tool("mail.send", {"message_id": "m-1"}, scopes=["mail.send"])
    )


def test_list_invoices_is_newest_first_in_the_install_currency():
    result = client().setting("currency", "GBP").call_tool("list_invoices", {})
    assert result["currency"] == "GBP"
    assert [i["id"] for i in result["invoices"]] == ["inv-2", "inv-1"]


def test_a_missing_scope_is_reported_with_the_scopes_needed():
    bare = TestClient(app).mock_tool("records.query", [], scopes=["invoices.read"])
    with pytest.raises(ToolCallError) as err:
        bare.call_tool("list_invoices", {})
    assert err.value.decision == "scope_denied"
    assert err.value.needed_scopes == ["invoices.read"]


def test_approval_updates_the_record_and_emits_the_event():
    c = client()
    result = c.call_tool("approve_invoice", {"id": "inv-1", "amount": 120.0})
    assert result["status"] == "approved"
    assert c.tool_calls[-1] == (
        "records.update",
        {"id": "inv-1", "fields": {"status": "approved", "approved_by": "user-7"}},
    )
    assert c.emitted == [
        ("invoice_approved", {"id": "inv-1", "amount": 120.0, "currency": "EUR"})
    ]


def test_approval_above_the_limit_is_refused_before_any_change():
    c = client()
    with pytest.raises(InvalidInput) as err:
        c.call_tool("approve_invoice", {"id": "inv-1", "amount": 5000.0})
    assert "above the approval limit of 1000" in err.value.message
    assert c.tool_calls == []
    assert c.emitted == []


def test_bad_arguments_name_the_field():
    with pytest.raises(InvalidInput) as err:
        client().call_tool("approve_invoice", {"id": "inv-1"})
    assert "amount" in err.value.message
    with pytest.raises(InvalidInput) as err:
        client().call_tool("approve_invoice", {"id": "inv-1", "amount": "lots"})
    assert "`amount` must be a number" in err.value.message


def test_reminders_use_the_install_text():
    c = client().setting("reminder_text", "Please pay.")
    c.call_tool("send_reminder", {"id": "inv-2", "to": "ap@gamma.example"})
    tool, args = c.tool_calls[-1]
    assert tool == "mail.send"
    assert args == {"to": "ap@gamma.example", "subject": "Invoice inv-2 from Acme", "body": "Please pay."}


def test_install_needs_the_company_name_and_logs_the_public_link():
    c = client()
    c.install()
    assert (
        "/api/apps/invoice-desk-py/public/t/tenant-test/files/invoice-example.pdf"
        in c.logs[0][1]
    ), c.logs
    with pytest.raises(InvalidInput) as err:
        TestClient(app).install()
    assert "company_name" in err.value.message


def test_uninstall_logs():
    c = client()
    c.uninstall()
    assert c.logs == [("info", "uninstalled for tenant tenant-test")]


def test_inbound_invoice_mail_is_filed_and_other_mail_ignored():
    c = client()
    envelope = inbound_envelope(
        channel="email",
        from_="billing@beta.example",
        body="see attached",
        subject="Invoice 2026-004",
        message_id="msg-1",
        received_at="2026-05-01T10:00:00Z",
        attachment_ids=["att-1"],
    )
    c.inbound(envelope)
    envelope.subject = "Lunch?"
    c.inbound(envelope)
    calls = c.tool_calls
    assert len(calls) == 1
    assert calls[0][0] == "records.put"
    assert calls[0][1]["record"]["attachment_ids"] == ["att-1"]
    assert calls[0][1]["record"]["payer"] == "billing@beta.example"


def test_nightly_reconcile_reads_the_bank_with_the_secret():
    c = (
        client()
        .mock_secret("BANK_API_KEY", "k-123")
        .mock_http(
            "https://api.bank.example/v1/payments?status=settled",
            Response(200, [], b'[{"invoice_id":"inv-1"}]'),
        )
    )
    c.schedule("nightly_reconcile")
    assert c.http_requests[0].headers == [("authorization", "Bearer k-123")]
    assert c.tool_calls == [("records.update", {"id": "inv-1", "fields": {"status": "paid"}})]


def test_nightly_reconcile_without_the_secret_does_nothing():
    c = client()
    c.schedule("nightly_reconcile")
    assert c.http_requests == []
    assert c.logs == [("warn", "BANK_API_KEY is not set; skipping reconciliation")]


def test_monday_digest_emits_one_event_per_overdue_invoice():
    c = client()
    c.schedule("monday_digest")
    assert len(c.emitted) == 2
    assert c.emitted[0][0] == "invoice_overdue"


def test_entry_booked_is_handled_and_tells_emitters_apart():
    c = client()
    result = c.simulate_event("entry_booked", {"invoice_id": "inv-1", "entry_id": "e-5"})
    assert result == {"filed": True, "invoice_id": "inv-1", "from": "ledger"}
    other = c.simulate_event(
        "entry_booked", {"invoice_id": "inv-1", "entry_id": "e-5"}, emitter_app_id="ledger-eu"
    )
    assert other["from"] == "ledger-eu"
    with pytest.raises(NoHandler) as err:
        c.simulate_event("customer_updated", {})
    assert err.value.message == "event `customer_updated`"
    with pytest.raises(InvalidInput):
        c.simulate_event("entry_booked", {"invoice_id": "inv-1"})


def test_routes_serve_json_the_patch_and_a_public_pdf():
    c = client()
    listed = c.request("GET", "/invoices?status=new")
    assert listed.status == 200
    assert json.loads(listed.body)["currency"] == "EUR"
    assert c.tool_calls[0] == ("records.query", {"record_type": "invoice", "status": "new"})

    patched = c.request("PATCH", "/invoices/inv-1", b'{"status":"approved","amount":10}')
    assert patched.status == 200, patched.body
    assert json.loads(patched.body)["id"] == "inv-1"
    assert c.request("PATCH", "/invoices/inv-1", b"not json").status == 400
    assert c.request("PATCH", "/invoices/inv-1", {"status": "paid", "amount": 1}).status == 422
    assert c.request("DELETE", "/invoices/inv-1").status == 405
    assert c.request("GET", "/nothing").status == 404

    pdf = c.request("GET", "/files/invoice-inv-1.pdf")
    assert pdf.status == 200
    assert pdf.header("content-type") == "application/pdf"
    assert pdf.body.startswith(b"%PDF-1.4")
    assert b"Acme - invoice inv-1" in pdf.body


def test_the_pdf_cross_reference_points_at_its_objects():
    pdf = single_page("Acme (EU) - invoice 7").decode("ascii")
    assert pdf.startswith("%PDF-1.4") and pdf.endswith("%%EOF\n")
    assert "(Acme \\(EU\\) - invoice 7) Tj" in pdf
    xref_at = int(pdf.splitlines()[-2])
    assert pdf[xref_at:].startswith("xref")
    for i, line in enumerate(pdf[xref_at:].splitlines()[3:8], start=1):
        assert pdf[int(line[:10]) :].startswith(f"{i} 0 obj")


def test_every_declared_handler_is_registered():
    registration = app.registration()
    assert registration.tools == ["approve_invoice", "chase_overdue", "list_invoices", "send_reminder"]
    assert registration.lifecycle == ["on_install", "on_uninstall", "on_inbound"]
    assert registration.schedules == ["monday_digest", "nightly_reconcile"]
    assert registration.events == ["entry_booked"]
    assert registration.routes == [
        "GET /invoices",
        "PATCH /invoices/{id}",
        "GET /files/invoice-{id}.pdf",
    ]
    assert registration.manifest == (HERE / "atrium.app.yaml").read_text()


def test_the_dev_mock_file_drives_a_local_run():
    c = TestClient(app).grant(*ALL_SCOPES).mock_file(HERE / "atrium.dev.json")
    listed = c.call_tool("list_invoices", {})
    assert listed["invoices"][0]["payer"] == "Gamma SA"
    with pytest.raises(ToolCallError) as err:
        c.call_tool("send_reminder", {"id": "inv-2", "to": "ap@gamma.example"})
    assert (err.value.decision, err.value.needed_scopes) == ("scope_denied", ["mail.send"])


def test_chasing_asks_the_collector_or_promises_a_follow_up():
    answer = client().call_tool("chase_overdue", {"id": "inv-2"})
    assert answer["draft"].startswith("[invoice-desk-py:collector] Invoice inv-2 is overdue.")
    # Without a collector to answer, the typed error becomes a commitment.
    offline = client().without("team.delegate")
    answer = offline.call_tool("chase_overdue", {"id": "inv-2"})
    assert answer["draft"] is None
    assert answer["reason"] == "not_available: `team.delegate` is not available on this host"
    assert answer["commitment"] == "commitment-1"
    title, _, agent, due = offline.commitments[0]
    assert (title, agent, due) == ("Chase invoice inv-2", "collector", None)
