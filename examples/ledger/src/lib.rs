//! Ledger: books entries into accounts and answers balances.
//!
//! The app Invoice Desk depends on (its `cross_app_dependencies` name `POST /entries` and
//! `GET /accounts/{id}`), kept small so that `atrium serve` can install both in its demo:
//! - tools `book_entry` and `account_balance`, over the platform's record tools (no scope: an
//!   app's own records);
//! - the same two as HTTP routes;
//! - the event `entry_booked`, emitted when an entry books an invoice. A booking is kept even
//!   when the host refuses the event: the answer says whether it went out;
//! - calls into another app, which a grant of the tenant's must allow: `desk_invoices` reads
//!   Invoice Desk's invoices through its route (`apps.fetch`, the grant's `__route__`), and
//!   `ask_desk` asks its clerk (`apps.invoke`, a grant naming `clerk`). Without the grant the
//!   answer says why the call was refused.

use atrium_sdk::http::{Request, Response};
use atrium_sdk::{App, Ctx, Error, ManifestInfo, RegistrationError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

static MANIFEST: ManifestInfo = atrium_sdk::manifest!("atrium.app.yaml");

/// The longest account name.
const MAX_ACCOUNT: usize = 64;

/// What `book_entry` (and `POST /entries`) takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryArgs {
    account: String,
    amount: f64,
    #[serde(default)]
    memo: Option<String>,
    #[serde(default)]
    invoice_id: Option<String>,
}

/// An entry as the record store keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    account: String,
    amount: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memo: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    invoice_id: Option<String>,
}

#[derive(Deserialize)]
struct Stored {
    id: String,
}

fn check_account(account: &str) -> Result<(), Error> {
    let ok = !account.is_empty()
        && account.len() <= MAX_ACCOUNT
        && account
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "account must be 1 to {MAX_ACCOUNT} letters, digits, `-` or `_`, got {account:?}"
        )))
    }
}

fn book_entry(ctx: &Ctx<'_>, args: EntryArgs) -> Result<Value, Error> {
    check_account(&args.account)?;
    if !args.amount.is_finite() || args.amount == 0.0 {
        return Err(Error::invalid_input(format!(
            "amount must be a non-zero number, got {}",
            args.amount
        )));
    }
    let mut entry = Entry {
        id: None,
        account: args.account,
        amount: args.amount,
        memo: args.memo,
        invoice_id: args.invoice_id,
    };
    let stored: Stored = ctx.tools.call_as(
        "records.put",
        json!({"record_type": "entry", "record": &entry}),
    )?;
    entry.id = Some(stored.id.clone());
    let event = match &entry.invoice_id {
        None => Value::Null,
        Some(invoice_id) => {
            let payload = json!({
                "invoice_id": invoice_id,
                "entry_id": stored.id,
                "account": entry.account,
                "amount": entry.amount,
            });
            match ctx.events.emit("entry_booked", payload) {
                Ok(sent) => json!({"name": "entry_booked", "subscribers": sent.wire_count}),
                Err(refused) => {
                    ctx.logger.warn(&format!(
                        "entry {} is booked but entry_booked was not emitted: {}",
                        stored.id, refused.reason
                    ));
                    json!({"name": "entry_booked", "refused": refused.reason})
                }
            }
        }
    };
    let mut answer = serde_json::to_value(&entry)?;
    answer["event"] = event;
    Ok(answer)
}

#[derive(Deserialize)]
struct BalanceArgs {
    account: String,
}

fn account_balance(ctx: &Ctx<'_>, args: BalanceArgs) -> Result<Value, Error> {
    check_account(&args.account)?;
    let entries: Vec<Entry> = ctx.tools.call_as(
        "records.query",
        json!({"record_type": "entry", "account": args.account}),
    )?;
    let cents: f64 = entries.iter().map(|e| (e.amount * 100.0).round()).sum();
    Ok(json!({
        "account": args.account,
        // `+ 0.0` turns the empty sum's -0.0 into 0.
        "balance": cents / 100.0 + 0.0,
        "entries": entries.len(),
    }))
}

fn post_entries(ctx: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    let args: EntryArgs = request.json()?;
    let mut response = Response::json(&book_entry(ctx, args)?);
    response.status = 201;
    Ok(response)
}

fn get_account(ctx: &Ctx<'_>, request: Request) -> Result<Response, Error> {
    let account = request.param("id").unwrap_or_default().to_owned();
    Ok(Response::json(&account_balance(
        ctx,
        BalanceArgs { account },
    )?))
}

/// The app the cross-app tools call.
const DESK: &str = "invoice-desk";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeskInvoicesArgs {
    #[serde(default)]
    status: Option<String>,
}

/// Invoice Desk's invoices, read through its `GET /invoices` route (`apps.fetch`).
fn desk_invoices(ctx: &Ctx<'_>, args: DeskInvoicesArgs) -> Result<Value, Error> {
    let path = match &args.status {
        Some(status) => format!("/invoices?status={status}"),
        None => "/invoices".to_owned(),
    };
    match ctx.apps.fetch(DESK, &path, "GET", None) {
        Ok(response) => {
            let body: Value = serde_json::from_slice(&response.body).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&response.body).into_owned())
            });
            Ok(json!({"status": response.status, "desk": body}))
        }
        Err(refused) => Ok(json!({"refused": refused.reason})),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AskDeskArgs {
    question: String,
}

/// Asks Invoice Desk's clerk (`apps.invoke`); the clerk runs under the desk's own install.
fn ask_desk(ctx: &Ctx<'_>, args: AskDeskArgs) -> Result<Value, Error> {
    if args.question.trim().is_empty() {
        return Err(Error::invalid_input(
            "question must say what to ask the clerk",
        ));
    }
    match ctx.apps.invoke(DESK, "clerk", &args.question) {
        Ok(answer) => Ok(json!({"answer": answer})),
        Err(refused) => Ok(json!({"refused": refused.reason})),
    }
}

/// Builds the app.
pub fn app() -> Result<App, RegistrationError> {
    let mut app = App::new(&MANIFEST);
    app.tool("book_entry", book_entry)?
        .tool("account_balance", account_balance)?
        .tool("desk_invoices", desk_invoices)?
        .tool("ask_desk", ask_desk)?
        .route("POST", "/entries", post_entries)?
        .route("GET", "/accounts/{id}", get_account)?;
    Ok(app)
}

atrium_sdk::export!(app);

#[cfg(test)]
mod tests {
    use super::*;
    use atrium_sdk::HandlerError;
    use atrium_sdk::testing::TestClient;

    fn client() -> TestClient {
        TestClient::new(app())
            .unwrap()
            .mock_tool("records.put", json!({"id": "rec_1"}))
            .mock_tool(
                "records.query",
                json!([
                    {"id": "rec_1", "account": "4000", "amount": 120.10},
                    {"id": "rec_2", "account": "4000", "amount": -20.05},
                ]),
            )
    }

    #[test]
    fn an_entry_is_stored_and_answered() {
        let client = client();
        let entry = client
            .call_tool("book_entry", json!({"account": "4000", "amount": 99.5}))
            .unwrap();
        assert_eq!(entry["id"], "rec_1");
        assert_eq!(entry["account"], "4000");
        assert!(entry["event"].is_null(), "no invoice, no event: {entry}");
        assert_eq!(
            client.tool_calls(),
            vec![(
                "records.put".to_owned(),
                json!({"record_type": "entry", "record": {"account": "4000", "amount": 99.5}})
            )]
        );
        assert!(client.emitted().is_empty());
    }

    #[test]
    fn booking_an_invoice_emits_entry_booked() {
        let client = client();
        let entry = client
            .call_tool(
                "book_entry",
                json!({"account": "4000", "amount": 120.0, "invoice_id": "inv-1"}),
            )
            .unwrap();
        assert_eq!(entry["event"]["name"], "entry_booked");
        assert_eq!(
            client.emitted(),
            vec![(
                "entry_booked".to_owned(),
                json!({"invoice_id": "inv-1", "entry_id": "rec_1", "account": "4000", "amount": 120.0})
            )]
        );
    }

    #[test]
    fn bad_input_is_refused_before_anything_is_stored() {
        let client = client();
        for args in [
            json!({"account": "", "amount": 1.0}),
            json!({"account": "a b", "amount": 1.0}),
            json!({"account": "4000", "amount": 0.0}),
        ] {
            let err = client.call_tool("book_entry", &args).unwrap_err();
            assert!(
                matches!(err, HandlerError::InvalidInput(_)),
                "{args}: {err:?}"
            );
        }
        assert!(client.tool_calls().is_empty());
    }

    #[test]
    fn the_balance_sums_the_account_in_cents() {
        let client = client();
        let balance = client
            .call_tool("account_balance", json!({"account": "4000"}))
            .unwrap();
        assert_eq!(
            balance,
            json!({"account": "4000", "balance": 100.05, "entries": 2})
        );
        assert_eq!(
            client.tool_calls(),
            vec![(
                "records.query".to_owned(),
                json!({"record_type": "entry", "account": "4000"})
            )]
        );
    }

    #[test]
    fn an_empty_account_has_a_zero_balance() {
        let client = TestClient::new(app())
            .unwrap()
            .mock_tool("records.query", json!([]));
        let balance = client
            .call_tool("account_balance", json!({"account": "5000"}))
            .unwrap();
        assert_eq!(balance["balance"].to_string(), "0.0");
        assert_eq!(balance["entries"], 0);
    }

    #[test]
    fn the_desk_is_read_through_its_route_and_its_clerk_asked_through_a_grant() {
        let client = client();
        let read = client
            .call_tool("desk_invoices", json!({"status": "new"}))
            .unwrap();
        assert_eq!(read["status"], 200);
        let asked = client
            .call_tool("ask_desk", json!({"question": "Which invoices are late?"}))
            .unwrap();
        assert_eq!(
            asked["answer"],
            "[invoice-desk:clerk] Which invoices are late?"
        );
        assert_eq!(
            client.agent_calls(),
            vec![
                "fetch invoice-desk GET /invoices?status=new".to_owned(),
                "invoke invoice-desk:clerk".to_owned()
            ]
        );
        let err = client
            .call_tool("ask_desk", json!({"question": " "}))
            .unwrap_err();
        assert!(matches!(err, HandlerError::InvalidInput(_)), "{err:?}");
    }

    #[test]
    fn a_refused_cross_app_call_says_why() {
        // A call at the deepest hop has no hop left for the call into the desk.
        let client = client().chain_depth(8);
        let read = client.call_tool("desk_invoices", json!({})).unwrap();
        assert!(
            read["refused"].as_str().unwrap().contains("chain depth"),
            "{read}"
        );
        let asked = client
            .call_tool("ask_desk", json!({"question": "Late?"}))
            .unwrap();
        assert!(
            asked["refused"].as_str().unwrap().contains("chain depth"),
            "{asked}"
        );
    }

    #[test]
    fn the_routes_answer_like_the_tools() {
        let client = client();
        let created = client.request("POST", "/entries", br#"{"account": "4000", "amount": 5}"#);
        assert_eq!(created.status, 201);
        let body: Value = serde_json::from_slice(&created.body).unwrap();
        assert_eq!(body["id"], "rec_1");
        let account = client.request("GET", "/accounts/4000", b"");
        assert_eq!(account.status, 200);
        let body: Value = serde_json::from_slice(&account.body).unwrap();
        assert_eq!(body["balance"], 100.05);
    }
}
