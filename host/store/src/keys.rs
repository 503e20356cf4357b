//! Organization API keys: created once (the secret is shown then and never again), stored as a
//! SHA-256 digest, listed, revoked.

use jiff::Timestamp;
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::changes::Change;
use crate::{Result, Store, StoreError, millis, now_millis, on_pool, opt_millis, random_hex};

/// Every key starts with this, so it is recognisable in logs and secret scanners.
pub const KEY_PREFIX: &str = "atr_";

/// A key just created: the only time its secret is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedKey {
    /// The key's id (`key_...`), used to revoke it.
    pub id: String,
    /// The organization it belongs to.
    pub org_id: String,
    /// The organization's name.
    pub org_name: String,
    /// The key's name.
    pub name: String,
    /// The secret: `atr_` and 64 hex digits.
    pub secret: String,
}

/// A key as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// `key_...`.
    pub id: String,
    /// The organization.
    pub org_id: String,
    /// The organization's name.
    pub org_name: String,
    /// The key's name.
    pub name: String,
    /// The first characters of the secret, to recognise it.
    pub prefix: String,
    /// Creation time.
    pub created_at: Timestamp,
    /// Revocation time, if revoked.
    pub revoked_at: Option<Timestamp>,
}

/// Who a presented key belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyOwner {
    /// The key's id.
    pub key_id: String,
    /// The organization.
    pub org_id: String,
}

pub(crate) fn digest(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) fn check_name(what: &str, name: &str) -> Result<()> {
    if name.trim().is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(StoreError::Invalid(format!(
            "{what} must be 1 to 100 characters without control characters, got {name:?}"
        )));
    }
    Ok(())
}

impl Store {
    /// The id of organization `org_name`, created when new (without a key: a developer's dev
    /// tenant may live in an organization nobody called /v1 for yet).
    pub async fn ensure_organization(&self, org_name: &str) -> Result<String> {
        check_name("the organization name", org_name)?;
        let new_org_id = format!("org_{}", random_hex(8)?);
        let now = now_millis();
        Ok(on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            sqlx::query("INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING")
                .bind(&new_org_id)
                .bind(org_name)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let org_id: String = sqlx::query("SELECT id FROM organizations WHERE name = $1")
                .bind(org_name)
                .fetch_one(&mut *tx)
                .await?
                .try_get("id")?;
            tx.commit().await?;
            org_id
        }))
    }

    /// Creates a key for organization `org_name` (created when new).
    pub async fn create_key(&self, org_name: &str, name: &str) -> Result<CreatedKey> {
        check_name("the key name", name)?;
        let org_id = self.ensure_organization(org_name).await?;
        let now = now_millis();
        let id = format!("key_{}", random_hex(8)?);
        let secret = format!("{KEY_PREFIX}{}", random_hex(32)?);
        let prefix: String = secret.chars().take(KEY_PREFIX.len() + 8).collect();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO api_keys (id, org_id, name, prefix, secret_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&id)
            .bind(&org_id)
            .bind(name)
            .bind(&prefix)
            .bind(digest(&secret))
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(CreatedKey {
            id,
            org_id,
            org_name: org_name.to_owned(),
            name: name.to_owned(),
            secret,
        })
    }

    /// Every key, oldest first.
    pub async fn list_keys(&self) -> Result<Vec<ApiKey>> {
        const SQL: &str = "SELECT k.id, k.org_id, o.name AS org_name, k.name, k.prefix, k.created_at, k.revoked_at \
                           FROM api_keys k JOIN organizations o ON o.id = k.org_id ORDER BY k.created_at, k.id";
        let keys = on_pool!(self, pool => {
            let rows = sqlx::query(SQL).fetch_all(pool).await?;
            rows.iter()
                .map(|r| {
                    Ok(ApiKey {
                        id: r.try_get("id")?,
                        org_id: r.try_get("org_id")?,
                        org_name: r.try_get("org_name")?,
                        name: r.try_get("name")?,
                        prefix: r.try_get("prefix")?,
                        created_at: millis(r.try_get("created_at")?)?,
                        revoked_at: opt_millis(r.try_get("revoked_at")?)?,
                    })
                })
                .collect::<Result<Vec<_>>>()?
        });
        Ok(keys)
    }

    /// Revokes a key by id. Revoking twice keeps the first revocation time.
    pub async fn revoke_key(&self, id: &str) -> Result<ApiKey> {
        let now = now_millis();
        let change = Change::Key {
            key_id: id.to_owned(),
        };
        let changed = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let changed = sqlx::query("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2")
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if changed > 0 {
                crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            }
            tx.commit().await?;
            changed
        });
        if changed > 0 {
            self.changed(&[change]);
        }
        if changed == 0 {
            return Err(StoreError::NotFound(format!(
                "there is no key with id `{id}`"
            )));
        }
        self.list_keys()
            .await?
            .into_iter()
            .find(|k| k.id == id)
            .ok_or_else(|| StoreError::NotFound(format!("there is no key with id `{id}`")))
    }

    /// The owner of a presented secret, or none when the key is unknown or revoked.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<KeyOwner>> {
        if !secret.starts_with(KEY_PREFIX) {
            return Ok(None);
        }
        const SQL: &str =
            "SELECT id, org_id FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL";
        let owner = on_pool!(self, pool => {
            match sqlx::query(SQL).bind(digest(secret)).fetch_optional(pool).await? {
                Some(r) => Some(KeyOwner { key_id: r.try_get("id")?, org_id: r.try_get("org_id")? }),
                None => None,
            }
        });
        Ok(owner)
    }
}
