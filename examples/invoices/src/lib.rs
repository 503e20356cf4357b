//! Invoice Desk: files incoming invoices, approves them within a limit, chases late payers.
//!
//! It shows every part of the SDK a realistic app uses:
//! - tools with scopes (`list_invoices`, `approve_invoice`, `send_reminder`) that call the
//!   platform's record and mail tools;
//! - install settings (`company_name`, `approval_limit`, `currency`, `reminder_text`, `approver`);
//! - a secret (`BANK_API_KEY`) and outbound HTTP to a declared egress host (`*.bank.example`);
//! - an event it emits (`invoice_approved`, `invoice_overdue`) and one it handles
//!   (`entry_booked` from the ledger app);
//! - agents: the clerk delegates to the collector (`chase_overdue`), and when the collector
//!   cannot answer (`AgentCallError`) it records a commitment instead;
//! - lifecycle hooks and named schedules;
//! - HTTP routes, one of them public (an invoice as PDF).
//!
//! Platform tools used: `records.query` (scope `invoices.read`), `records.put` and
//! `records.update` (`invoices.write`), `mail.send` (`mail.send`).

mod pdf;

use atrium_sdk::http::{Request, Response};
use atrium_sdk::{App, AppEvent, Ctx, Error, InboundEnvelope, ManifestInfo, RegistrationError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

/// An invoice as the platform's record store keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invoice {
    /// Record id.
    pub id: String,
    /// Who must pay.
    #[serde(default)]
    pub payer: String,
    /// Amount in the install's currency.
    #[serde(default)]
    pub amount: f64,
    /// `new`, `approved`, `paid`, `overdue`.
    #[serde(default)]
    pub status: String,
    /// ISO date it was issued.
    #[serde(default)]
    pub issued_at: String,
}

fn currency(ctx: &Ctx<'_>) -> String {
    ctx.config
        .get_as::<String>("currency")
        .unwrap_or_else(|| "EUR".into())
}

fn query(ctx: &Ctx<'_>, status: Option<&str>) -> Result<Vec<Invoice>, Error> {
    let mut filter = json!({"record_type": "invoice"});
    if let Some(status) = status {
        filter["status"] = json!(status);
    }
    let mut invoices: Vec<Invoice> = ctx.tools.call_as("records.query", filter)?;
    invoices.sort_by(|a, b| b.issued_at.cmp(&a.issued_at));
    Ok(invoices)
}

#[derive(Deserialize)]
struct ListArgs {
    status: Option<String>,
}

fn list_invoices(ctx: &Ctx<'_>, args: ListArgs) -> Result<Value, Error> {
    let invoices = query(ctx, args.status.as_deref())?;
    Ok(json!({"currency": currency(ctx), "invoices": invoices}))
}

#[derive(Deserialize)]
struct ApproveArgs {
    id: String,
    amount: f64,
}

fn approve_invoice(ctx: &Ctx<'_>, args: ApproveArgs) -> Result<Value, Error> {
    let limit = ctx.config.get_as::<f64>("approval_limit").unwrap_or(5000.0);
    if args.amount > limit {
        return Err(Error::invalid_input(format!(
            "invoice {} is {} {}, above the approval limit of {limit}",
            args.id,
            args.amount,
            currency(ctx)
        )));
    }
    let approver = ctx.config.get_as::<String>("approver").unwrap_or_default();
    ctx.tools.call(
        "records.update",
        json!({"id": args.id, "fields": {"status": "approved", "approved_by": approver}}),
    )?;
    let emitted = ctx.events.emit(
        "invoice_approved",
        json!({"id": args.id, "amount": args.amount, "currency": currency(ctx)}),
    )?;
    Ok(json!({"id": args.id, "status": "approved", "subscribers": emitted.wire_count}))
}

#[derive(Deserialize)]
struct ReminderArgs {
    id: String,
    to: String,
}

fn send_reminder(ctx: &Ctx<'_>, args: ReminderArgs) -> Result<Value, Error> {
    let text = ctx
        .config
        .get_as::<String>("reminder_text")
        .unwrap_or_else(|| "Your invoice is overdue.".into());
    let company = ctx
        .config
        .get_as::<String>("company_name")
        .unwrap_or_default();
    let sent = ctx.tools.call(
        "mail.send",
        json!({"to": args.to, "subject": format!("Invoice {} from {company}", args.id), "body": text}),
    )?;
    Ok(json!({"id": args.id, "sent": sent}))
}

#[derive(Deserialize)]
struct ChaseArgs {
    id: String,
}

/// Asks the collector to draft a reminder for an overdue invoice (team delegation from the
/// clerk). When the collector cannot answer (no model on this host, a limit reached, a
/// refused delegation: an `AgentCallError`), the collector promises a follow-up instead, so
/// the invoice is not forgotten.
fn chase_overdue(ctx: &Ctx<'_>, args: ChaseArgs) -> Result<Value, Error> {
    let prompt = format!(
        "Invoice {} is overdue. Draft a short, polite and firm payment reminder.",
        args.id
    );
    match ctx.team.delegate("collector", &prompt, "clerk") {
        Ok(draft) => Ok(json!({"id": args.id, "draft": draft})),
        Err(refused) => {
            let commitment = ctx.commitments.add(
                &format!("Chase invoice {}", args.id),
                &format!(
                    "The collector could not draft the reminder: {}",
                    refused.reason
                ),
                "collector",
                None,
            )?;
            Ok(
                json!({"id": args.id, "draft": null, "reason": refused.reason, "commitment": commitment}),
            )
        }
    }
}

fn on_install(ctx: &Ctx<'_>) -> Result<(), Error> {
    if ctx
        .config
        .get_as::<String>("company_name")
        .is_none_or(|name| name.trim().is_empty())
    {
        return Err(Error::invalid_input(
            "install setting company_name is required",
        ));
    }
    let example = ctx.public_callback_url("/files/invoice-example.pdf")?;
    ctx.logger.info(&format!(
        "installed for tenant {}; public invoice links look like {example}",
        ctx.tenant_id()
    ));
    Ok(())
}

fn on_uninstall(ctx: &Ctx<'_>) -> Result<(), Error> {
    ctx.logger
        .info(&format!("uninstalled for tenant {}", ctx.tenant_id()));
    Ok(())
}

fn on_inbound(ctx: &Ctx<'_>, envelope: InboundEnvelope) -> Result<(), Error> {
    let subject = envelope.subject.clone().unwrap_or_default();
    if envelope.channel != "email" || !subject.to_lowercase().contains("invoice") {
        ctx.logger.debug(&format!(
            "ignored inbound {} on {}",
            envelope.message_id, envelope.channel
        ));
        return Ok(());
    }
    let record = json!({
        "payer": envelope.from,
        "subject": subject,
        "status": "new",
        "issued_at": envelope.received_at,
        "attachment_ids": envelope.attachment_ids,
        "source_message": envelope.message_id,
    });
    ctx.tools.call(
        "records.put",
        json!({"record_type": "invoice", "record": record}),
    )?;
    Ok(())
}

#[derive(Deserialize)]
struct Payment {
    invoice_id: String,
}

fn nightly_reconcile(ctx: &Ctx<'_>) -> Result<(), Error> {
    let Some(key) = ctx.secrets.get("BANK_API_KEY") else {
        ctx.logger
            .warn("BANK_API_KEY is not set; skipping reconciliation");
        return Ok(());
    };
    let response = ctx.http.send(&atrium_sdk::OutboundRequest {
        method: "GET".into(),
        url: "https://api.bank.example/v1/payments?status=settled".into(),
        headers: vec![("authorization".into(), format!("Bearer {key}"))],
        body: Vec::new(),
    })?;
    if response.status != 200 {
        return Err(Error::failed(format!(
            "the bank answered {}",
            response.status
        )));
    }
    let payments: Vec<Payment> = serde_json::from_slice(&response.body)?;
    for payment in &payments {
        ctx.tools.call(
            "records.update",
            json!({"id": payment.invoice_id, "fields": {"status": "paid"}}),
        )?;
    }
    ctx.logger
        .info(&format!("reconciled {} payments", payments.len()));
    Ok(())
}

fn monday_digest(ctx: &Ctx<'_>) -> Result<(), Error> {
    for invoice in query(ctx, Some("overdue"))? {
        ctx.events.emit(
            "invoice_overdue",
            json!({"id": invoice.id, "payer": invoice.payer, "amount": invoice.amount}),
        )?;
    }
    Ok(())
}

#[derive(Deserialize)]
struct EntryBooked {
    invoice_id: String,
    entry_id: String,
}

fn entry_booked(ctx: &Ctx<'_>, event: AppEvent) -> Result<Value, Error> {
    let entry: EntryBooked = serde_json::from_str(&event.payload)
        .map_err(|e| Error::invalid_input(format!("entry_booked payload: {e}")))?;
    ctx.tools.call(
        "records.update",
        json!({"id": entry.invoice_id, "fields": {"ledger_entry": entry.entry_id}}),
    )?;
    Ok(json!({"filed": true, "invoice_id": entry.invoice_id, "from": event.emitter_app_id}))
}

fn get_invoices(ctx: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    let invoices = query(ctx, request.query_param("status"))?;
    Ok(Response::json(
        &json!({"currency": currency(ctx), "invoices": invoices}),
    ))
}

#[derive(Deserialize)]
struct PatchBody {
    status: String,
    amount: f64,
}

fn patch_invoice(ctx: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    let id = request.param("id").unwrap_or_default().to_owned();
    let body: PatchBody = request.json()?;
    if body.status != "approved" {
        return Ok(Response::text(
            422,
            "only `approved` can be set through this route",
        ));
    }
    let result = approve_invoice(
        ctx,
        ApproveArgs {
            id,
            amount: body.amount,
        },
    )?;
    Ok(Response::json(&result))
}

fn invoice_pdf(ctx: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    let id = request.param("id").unwrap_or_default();
    let company = ctx
        .config
        .get_as::<String>("company_name")
        .unwrap_or_else(|| "Invoice Desk".into());
    let body = pdf::single_page(&format!("{company} - invoice {id}"));
    Ok(Response {
        status: 200,
        headers: vec![("content-type".into(), "application/pdf".into())],
        body,
    })
}

/// Builds the app.
pub fn app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool("list_invoices", list_invoices)?
        .tool("approve_invoice", approve_invoice)?
        .tool("send_reminder", send_reminder)?
        .tool("chase_overdue", chase_overdue)?
        .on_install(on_install)?
        .on_uninstall(on_uninstall)?
        .on_inbound(on_inbound)?
        .on_schedule("nightly_reconcile", nightly_reconcile)?
        .on_schedule("monday_digest", monday_digest)?
        .on_event("entry_booked", entry_booked)?
        .route("GET", "/invoices", get_invoices)?
        .route("PATCH", "/invoices/{id}", patch_invoice)?
        .route("GET", "/files/invoice-{id}.pdf", invoice_pdf)?;
    Ok(app)
}

atrium_sdk::export!(app);

#[cfg(test)]
mod tests;
