//! Tenant principals: the users of a tenant, and the tokens an organization key holder issues
//! to the tenant's admins and users.
//!
//! A token is `att_` and 64 hex digits, shown once and stored as the SHA-256 digest of the
//! secret, exactly like an organization key (see `keys.rs`). Every token speaks for one user of
//! one tenant, with a role: `admin` or `user`. Every user has a UUID, the caller's or a random
//! (version 4) one, and a display name.

use jiff::Timestamp;
use sqlx::Row;

use crate::changes::Change;
use crate::keys::{check_name, digest};
use crate::{
    Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, opt_millis, random_hex,
};

/// Every tenant token starts with this, so it is told apart from an organization key (`atr_`).
pub const TENANT_TOKEN_PREFIX: &str = "att_";

/// What a tenant token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TenantRole {
    /// The tenant's administrator (the specification's `TENANT_TOKEN`).
    Admin,
    /// A user of the tenant.
    User,
}

impl TenantRole {
    /// `admin` or `user`.
    pub fn as_str(self) -> &'static str {
        match self {
            TenantRole::Admin => "admin",
            TenantRole::User => "user",
        }
    }

    /// The role named `name` (`admin` or `user`).
    pub fn parse(name: &str) -> Option<TenantRole> {
        match name {
            "admin" => Some(TenantRole::Admin),
            "user" => Some(TenantRole::User),
            _ => None,
        }
    }

    /// The display name a user gets when the token's creator gives none.
    pub fn default_display_name(self) -> &'static str {
        match self {
            TenantRole::Admin => "Admin",
            TenantRole::User => "User",
        }
    }
}

/// A token to create.
#[derive(Debug, Clone, Copy)]
pub struct NewTenantToken<'a> {
    /// The token's role.
    pub role: TenantRole,
    /// The user the token speaks for (a UUID); `None` creates a user with a random one.
    pub user_id: Option<&'a str>,
    /// The user's display name: set on a new user, changed on an existing one. `None` keeps
    /// an existing user's name, and gives a new one the role's default ("Admin", "User").
    pub display_name: Option<&'a str>,
}

/// A tenant token as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantToken {
    /// `ttk_...`.
    pub id: String,
    /// The organization.
    pub org_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The role.
    pub role: TenantRole,
    /// The user the token speaks for.
    pub user_id: String,
    /// The user's display name.
    pub display_name: String,
    /// The first characters of the secret, to recognise it.
    pub prefix: String,
    /// Creation time.
    pub created_at: Timestamp,
    /// Revocation time, if revoked.
    pub revoked_at: Option<Timestamp>,
}

/// A tenant token just created: the only time its secret is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTenantToken {
    /// The token as it will be listed.
    pub token: TenantToken,
    /// The secret: `att_` and 64 hex digits.
    pub secret: String,
    /// Whether the user was created by this call (the `on_user_added` hook fires for those).
    pub user_created: bool,
}

/// Who a presented tenant token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantPrincipal {
    /// The token's id.
    pub token_id: String,
    /// The organization.
    pub org_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The token's role.
    pub role: TenantRole,
    /// The user.
    pub user_id: String,
    /// The user's display name.
    pub display_name: String,
}

impl TenantPrincipal {
    /// The tenant the token belongs to.
    #[must_use]
    pub fn key(&self) -> TenantKey {
        TenantKey::new(&self.org_id, &self.tenant_id)
    }
}

/// Checks a user id: a UUID in its 8-4-4-4-12 hex form (either case). Returns it lower-cased,
/// the form it is stored and answered in.
pub fn check_user_id(user_id: &str) -> Result<String> {
    let groups: Vec<&str> = user_id.split('-').collect();
    let shaped = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()));
    if !shaped {
        return Err(StoreError::Invalid(format!(
            "user_id must be a UUID (8-4-4-4-12 hex digits, like 3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b), got {user_id:?}"
        )));
    }
    Ok(user_id.to_ascii_lowercase())
}

/// Checks a display name: 1 to 100 characters, not only spaces, without control characters.
pub fn check_display_name(name: &str) -> Result<()> {
    check_name("display_name", name)
}

/// A random (version 4) UUID from the operating system's random source.
pub(crate) fn random_uuid() -> Result<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| {
        StoreError::Internal(format!("the operating system's random source failed: {e}"))
    })?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

fn role_of(name: &str) -> Result<TenantRole> {
    TenantRole::parse(name).ok_or_else(|| {
        StoreError::Corrupt(format!(
            "unknown tenant token role `{name}` in the database"
        ))
    })
}

const COLUMNS: &str = "t.id, t.org_id, t.tenant_id, t.role, t.user_id, u.display_name, t.prefix, t.created_at, t.revoked_at";
const FROM: &str = "FROM tenant_tokens t JOIN tenant_users u \
                    ON u.org_id = t.org_id AND u.tenant_id = t.tenant_id AND u.user_id = t.user_id";

fn token_from<R: Row>(r: &R) -> Result<TenantToken>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(TenantToken {
        id: r.try_get("id")?,
        org_id: r.try_get("org_id")?,
        tenant_id: r.try_get("tenant_id")?,
        role: role_of(&r.try_get::<String, _>("role")?)?,
        user_id: r.try_get("user_id")?,
        display_name: r.try_get("display_name")?,
        prefix: r.try_get("prefix")?,
        created_at: millis(r.try_get("created_at")?)?,
        revoked_at: opt_millis(r.try_get("revoked_at")?)?,
    })
}

impl Store {
    /// Issues a token for a user of tenant `tenant_id` of organization `org_id`. The tenant is
    /// created when new (first use), and so is the user.
    pub async fn create_tenant_token(
        &self,
        tenant: &TenantKey,
        new: &NewTenantToken<'_>,
    ) -> Result<CreatedTenantToken> {
        let TenantKey { org_id, tenant_id } = tenant;
        let user_id = match new.user_id {
            Some(id) => check_user_id(id)?,
            None => random_uuid()?,
        };
        if let Some(name) = new.display_name {
            check_display_name(name)?;
        }
        self.ensure_tenant(tenant).await?;
        let now = now_millis();
        let id = format!("ttk_{}", random_hex(8)?);
        let secret = format!("{TENANT_TOKEN_PREFIX}{}", random_hex(32)?);
        let prefix: String = secret.chars().take(TENANT_TOKEN_PREFIX.len() + 8).collect();
        let default_name = new.role.default_display_name();
        let user_change = Change::TenantUser {
            org_id: org_id.to_owned(),
            tenant_id: tenant_id.to_owned(),
            user_id: user_id.clone(),
        };
        let mut renamed = false;
        let (user_created, display_name) = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let created = sqlx::query(
                "INSERT INTO tenant_users (org_id, tenant_id, user_id, display_name, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (org_id, tenant_id, user_id) DO NOTHING",
            )
            .bind(org_id)
            .bind(tenant_id)
            .bind(&user_id)
            .bind(new.display_name.unwrap_or(default_name))
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if !created && let Some(name) = new.display_name {
                renamed = true;
                sqlx::query(
                    "UPDATE tenant_users SET display_name = $1 \
                     WHERE org_id = $2 AND tenant_id = $3 AND user_id = $4",
                )
                .bind(name)
                .bind(org_id)
                .bind(tenant_id)
                .bind(&user_id)
                .execute(&mut *tx)
                .await?;
            }
            let display_name: String = sqlx::query(
                "SELECT display_name FROM tenant_users WHERE org_id = $1 AND tenant_id = $2 AND user_id = $3",
            )
            .bind(org_id)
            .bind(tenant_id)
            .bind(&user_id)
            .fetch_one(&mut *tx)
            .await?
            .try_get("display_name")?;
            sqlx::query(
                "INSERT INTO tenant_tokens (id, org_id, tenant_id, role, user_id, prefix, secret_hash, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&id)
            .bind(org_id)
            .bind(tenant_id)
            .bind(new.role.as_str())
            .bind(&user_id)
            .bind(&prefix)
            .bind(digest(&secret))
            .bind(now)
            .execute(&mut *tx)
            .await?;
            if renamed {
                crate::changes::record_changes!(tx, std::slice::from_ref(&user_change));
            }
            tx.commit().await?;
            (created, display_name)
        });
        if renamed {
            self.changed(&[user_change]);
        }
        Ok(CreatedTenantToken {
            token: TenantToken {
                id,
                org_id: org_id.to_owned(),
                tenant_id: tenant_id.to_owned(),
                role: new.role,
                user_id,
                display_name,
                prefix,
                created_at: millis(now)?,
                revoked_at: None,
            },
            secret,
            user_created,
        })
    }

    /// Who a presented tenant token speaks for, or none when it is unknown or revoked.
    pub async fn authenticate_tenant_token(&self, secret: &str) -> Result<Option<TenantPrincipal>> {
        if !secret.starts_with(TENANT_TOKEN_PREFIX) {
            return Ok(None);
        }
        let sql =
            format!("SELECT {COLUMNS} {FROM} WHERE t.secret_hash = $1 AND t.revoked_at IS NULL");
        let principal = on_pool!(self, pool => {
            match sqlx::query(&sql).bind(digest(secret)).fetch_optional(pool).await? {
                Some(r) => {
                    let t = token_from(&r)?;
                    Some(TenantPrincipal {
                        token_id: t.id,
                        org_id: t.org_id,
                        tenant_id: t.tenant_id,
                        role: t.role,
                        user_id: t.user_id,
                        display_name: t.display_name,
                    })
                }
                None => None,
            }
        });
        Ok(principal)
    }

    /// The tokens of one tenant, revoked ones included, oldest first.
    pub async fn tenant_tokens(&self, tenant: &TenantKey) -> Result<Vec<TenantToken>> {
        self.tenant_tokens_page(tenant, None, i64::MAX).await
    }

    /// A page of a tenant's tokens, oldest first: at most `limit`, after the token created at
    /// `after.0` with id `after.1`.
    pub async fn tenant_tokens_page(
        &self,
        tenant: &TenantKey,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<TenantToken>> {
        let (at, id) = after.map_or((i64::MIN, ""), |(at, key)| (at.as_millisecond(), key));
        let sql = format!(
            "SELECT {COLUMNS} {FROM} WHERE t.org_id = $1 AND t.tenant_id = $2 \
             AND (t.created_at > $3 OR (t.created_at = $3 AND t.id > $4)) \
             ORDER BY t.created_at, t.id LIMIT $5"
        );
        let tokens = on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id)
                .bind(&tenant.tenant_id)
                .bind(at)
                .bind(id)
                .bind(limit)
                .fetch_all(pool)
                .await?
                .iter()
                .map(token_from)
                .collect::<Result<Vec<_>>>()?
        });
        Ok(tokens)
    }

    /// One token of one tenant.
    pub async fn tenant_token(&self, tenant: &TenantKey, id: &str) -> Result<Option<TenantToken>> {
        let TenantKey { org_id, tenant_id } = tenant;
        let sql = format!(
            "SELECT {COLUMNS} {FROM} WHERE t.org_id = $1 AND t.tenant_id = $2 AND t.id = $3"
        );
        let token = on_pool!(self, pool => {
            match sqlx::query(&sql).bind(org_id).bind(tenant_id).bind(id).fetch_optional(pool).await? {
                Some(r) => Some(token_from(&r)?),
                None => None,
            }
        });
        Ok(token)
    }

    /// Revokes a token of tenant `tenant_id` of organization `org_id`: it never authenticates
    /// again. Revoking twice keeps the first time. A token of another tenant or organization is
    /// [`StoreError::NotFound`], as an unknown one is.
    pub async fn revoke_tenant_token(&self, tenant: &TenantKey, id: &str) -> Result<TenantToken> {
        let TenantKey { org_id, tenant_id } = tenant;
        let now = now_millis();
        let change = Change::TenantToken {
            token_id: id.to_owned(),
        };
        let revoked = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let revoked = sqlx::query(
                "UPDATE tenant_tokens SET revoked_at = COALESCE(revoked_at, $1) \
                 WHERE org_id = $2 AND tenant_id = $3 AND id = $4",
            )
            .bind(now)
            .bind(org_id)
            .bind(tenant_id)
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                > 0;
            if revoked {
                crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            }
            tx.commit().await?;
            revoked
        });
        if revoked {
            self.changed(&[change]);
        }
        self.tenant_token(tenant, id).await?.ok_or_else(|| {
            StoreError::NotFound(format!("tenant `{tenant_id}` has no token with id `{id}`"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_uuids() {
        assert_eq!(
            check_user_id("3F2B9C1E-0D4A-4E8B-9A61-5C7D2E0F1A3B").unwrap(),
            "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b"
        );
        for bad in [
            "",
            "3f2b9c1e0d4a4e8b9a615c7d2e0f1a3b",
            "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3",
            "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3bb",
            "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3g",
            "3f2b9c1e-0d4a-4e8b-9a615-c7d2e0f1a3b",
            "{3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b}",
            "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b-",
        ] {
            assert!(check_user_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn random_user_ids_are_version_4() {
        let a = random_uuid().unwrap();
        let b = random_uuid().unwrap();
        assert_ne!(a, b);
        assert_eq!(check_user_id(&a).unwrap(), a);
        assert_eq!(&a[14..15], "4");
        assert!("89ab".contains(&a[19..20]), "{a}");
    }

    #[test]
    fn display_names() {
        assert!(check_display_name("Ada Lovelace").is_ok());
        assert!(check_display_name(&"x".repeat(100)).is_ok());
        assert!(check_display_name(&"x".repeat(101)).is_err());
        assert!(check_display_name("").is_err());
        assert!(check_display_name("  ").is_err());
        assert!(check_display_name("a\nb").is_err());
    }
}
