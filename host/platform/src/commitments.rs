//! Commitments: `commitments.add` stores a promise of an install's agent, which the tenant's
//! users list and mark done or dismissed (`/api/commitments`). The runtime has already applied
//! the sandbox rule (`atrium_manifest::sandbox::commitment`: a declared agent, a title, the
//! lengths, `due_at` with an offset); this module stores what passed.

use atrium_manifest::sandbox::{Capability, Decision, ToolRefusal};
use atrium_runtime::{Commitment, ToolCallError};
use atrium_store::{CommitmentStatus, NewCommitment, Store, StoredCommitment, TenantKey};

use crate::Refusal;
use crate::registry::Actor;

/// `due_at` as a time, to the whole ms the store keeps: an ISO-8601 time with an offset, as
/// the sandbox rule checked. None for a text that is not one.
#[must_use]
pub fn due_at_time(due_at: &str) -> Option<jiff::Timestamp> {
    let at = due_at.parse::<jiff::Timestamp>().ok()?;
    jiff::Timestamp::from_millisecond(at.as_millisecond()).ok()
}

/// Stores `commitment` of `app_slug`'s install for `tenant` (the user the call serves, if
/// any, recorded with it) and answers its id.
pub async fn add(
    store: &Store,
    tenant: &Actor,
    app_slug: &str,
    commitment: &Commitment,
) -> Result<StoredCommitment, ToolCallError> {
    let tool = Capability::CommitmentsAdd.as_str();
    let due_at = match commitment.due_at.as_deref() {
        None => None,
        Some(text) => Some(due_at_time(text).ok_or_else(|| {
            ToolRefusal::new(
                tool,
                Decision::InvalidArguments,
                format!("due_at `{text}` is not an ISO-8601 time with an offset"),
            )
        })?),
    };
    let new = NewCommitment {
        agent: &commitment.from_agent,
        user_id: tenant.user_id.as_deref(),
        title: &commitment.title,
        content: &commitment.content,
        due_at,
    };
    store
        .add_commitment(&tenant.install(app_slug), &new)
        .await
        .map_err(|e| {
            tracing::error!(app = %app_slug, tenant = %tenant.tenant, error = %e, "storing a commitment failed");
            ToolCallError::from(ToolRefusal::new(
                tool,
                Decision::Failed,
                "the platform failed to store the commitment; try again",
            ))
        })
}

/// The status named `text` (the field `status` of a change or a filter), or the refusal that
/// names the field.
pub fn parse_status(text: &str) -> Result<CommitmentStatus, Refusal> {
    CommitmentStatus::parse(text).ok_or_else(|| {
        Refusal::invalid(
            "status",
            format!("status must be `open`, `done` or `dismissed`, not {text:?}"),
        )
    })
}

/// Marks commitment `id` of `tenant` with the status named `status` (`open`, `done` or
/// `dismissed`), as user `user_id` decided: the stored commitment, or why not (a status that
/// is none of these names `status`; a commitment the tenant does not have is not found).
pub async fn set_status(
    store: &Store,
    tenant: &TenantKey,
    id: &str,
    status: &str,
    user_id: &str,
) -> Result<StoredCommitment, Refusal> {
    let status = parse_status(status)?;
    if store.commitment(tenant, id).await?.is_none() {
        return Err(Refusal::not_found(format!(
            "this tenant has no commitment `{id}`"
        )));
    }
    Ok(store
        .set_commitment_status(tenant, id, status, user_id)
        .await?)
}
