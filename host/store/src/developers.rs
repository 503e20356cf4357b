//! Developer accounts: who may register apps, and who may promote them.

use jiff::Timestamp;
use sqlx::Row;

use crate::{Result, Store, StoreError, millis, now_millis, on_pool, opt_millis, random_hex};

/// A developer account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Developer {
    /// `dev_...`: the `sub` of the tokens the host signs.
    pub id: String,
    /// Lower-cased; the key an external identity provider's tokens are mapped by.
    pub email: String,
    /// The login name.
    pub login: String,
    /// Whether the developer may promote versions (registering is always allowed).
    pub publish_allowed: bool,
    /// When the account was suspended: its tokens are refused from then on.
    pub suspended_at: Option<Timestamp>,
    /// The organization and tenant the developer tries their apps in, when set.
    pub dev_tenant: Option<(String, String)>,
    /// Creation time.
    pub created_at: Timestamp,
}

/// What a new developer account is made of.
#[derive(Debug, Clone, Default)]
pub struct NewDeveloper<'a> {
    /// The email address.
    pub email: &'a str,
    /// The login name.
    pub login: &'a str,
    /// May promote versions.
    pub publish_allowed: bool,
    /// The dev tenant: an organization id (which must exist) and a tenant id.
    pub dev_tenant: Option<(&'a str, &'a str)>,
}

/// Checks an email address: one `@` with text on both sides, no spaces, at most 254 chars.
pub fn check_email(email: &str) -> Result<()> {
    let ok = email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.contains('@')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        });
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "`{email}` is not an email address (name@domain.tld, at most 254 characters)"
        )))
    }
}

/// Checks a login name: 1 to 39 letters, digits or single hyphens, not starting or ending with
/// a hyphen (the shape of a GitHub login, which many developers will reuse).
pub fn check_login(login: &str) -> Result<()> {
    let ok = (1..=39).contains(&login.len())
        && login
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !login.starts_with('-')
        && !login.ends_with('-')
        && !login.contains("--");
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "`{login}` is not a login name: 1 to 39 letters, digits or single hyphens, not starting or ending with a hyphen"
        )))
    }
}

const COLUMNS: &str =
    "id, email, login, publish_allowed, suspended_at, dev_org_id, dev_tenant_id, created_at";

fn developer_from<R: Row>(row: &R) -> Result<Developer>
where
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<String>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> bool: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> Option<i64>: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let org: Option<String> = row.try_get("dev_org_id")?;
    let tenant: Option<String> = row.try_get("dev_tenant_id")?;
    Ok(Developer {
        id: row.try_get("id")?,
        email: row.try_get("email")?,
        login: row.try_get("login")?,
        publish_allowed: row.try_get("publish_allowed")?,
        suspended_at: opt_millis(row.try_get("suspended_at")?)?,
        dev_tenant: org.zip(tenant),
        created_at: millis(row.try_get("created_at")?)?,
    })
}

impl Store {
    /// Creates a developer account. The email is stored lower-cased; an email or login already
    /// taken is [`StoreError::Conflict`], an unknown dev organization [`StoreError::NotFound`].
    pub async fn create_developer(&self, new: &NewDeveloper<'_>) -> Result<Developer> {
        let email = new.email.trim().to_lowercase();
        check_email(&email)?;
        check_login(new.login)?;
        let mut dev_tenant = None;
        if let Some((org, tenant)) = new.dev_tenant {
            crate::check_tenant_id(tenant)?;
            let Some(org_id) = self.organization_id(org).await? else {
                return Err(StoreError::NotFound(format!(
                    "there is no organization `{org}` (create one with `atrium keys create --org <name>`)"
                )));
            };
            self.ensure_tenant(&crate::TenantKey::new(&org_id, tenant))
                .await?;
            dev_tenant = Some((org_id, tenant));
        }
        let id = format!("dev_{}", random_hex(8)?);
        let now = now_millis();
        let (org, tenant) = dev_tenant.unzip();
        let inserted = on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO developers (id, email, login, publish_allowed, dev_org_id, dev_tenant_id, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT DO NOTHING",
            )
            .bind(&id)
            .bind(&email)
            .bind(new.login)
            .bind(new.publish_allowed)
            .bind(org)
            .bind(tenant)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected()
        });
        if inserted == 0 {
            let taken = if self.developer_by_email(&email).await?.is_some() {
                format!("a developer with email `{email}` already exists")
            } else {
                format!("the login `{}` is taken", new.login)
            };
            return Err(StoreError::Conflict(taken));
        }
        self.developer(&id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("developer `{id}` vanished")))
    }

    /// The id of the organization with this id or name.
    pub async fn organization_id(&self, reference: &str) -> Result<Option<String>> {
        on_pool!(self, pool => {
            let row = sqlx::query("SELECT id FROM organizations WHERE id = $1 OR name = $1")
                .bind(reference)
                .fetch_optional(pool)
                .await?;
            Ok(row.map(|r| r.try_get("id")).transpose()?)
        })
    }

    /// The developer with this id.
    pub async fn developer(&self, id: &str) -> Result<Option<Developer>> {
        on_pool!(self, pool => {
            let row = sqlx::query(&format!("SELECT {COLUMNS} FROM developers WHERE id = $1"))
                .bind(id)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(developer_from).transpose()
        })
    }

    /// The developer with this email (compared lower-cased).
    pub async fn developer_by_email(&self, email: &str) -> Result<Option<Developer>> {
        let email = email.trim().to_lowercase();
        on_pool!(self, pool => {
            let row = sqlx::query(&format!("SELECT {COLUMNS} FROM developers WHERE email = $1"))
                .bind(&email)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(developer_from).transpose()
        })
    }

    /// The developer with this id, email or login: how the administration commands name one.
    pub async fn find_developer(&self, reference: &str) -> Result<Option<Developer>> {
        let lowered = reference.trim().to_lowercase();
        on_pool!(self, pool => {
            let row = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM developers WHERE id = $1 OR email = $2 OR login = $1"
            ))
            .bind(reference.trim())
            .bind(&lowered)
            .fetch_optional(pool)
            .await?;
            row.as_ref().map(developer_from).transpose()
        })
    }

    /// Every developer, oldest first.
    pub async fn list_developers(&self) -> Result<Vec<Developer>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM developers ORDER BY created_at, id"))
                .fetch_all(pool)
                .await?;
            rows.iter().map(developer_from).collect()
        })
    }

    /// Suspends (`true`) or reinstates (`false`) a developer; their tokens are refused while
    /// suspended. Returns the account as it is now.
    pub async fn set_developer_suspended(&self, id: &str, suspended: bool) -> Result<Developer> {
        let now = now_millis();
        let at = suspended.then_some(now);
        let changed = on_pool!(self, pool => {
            sqlx::query("UPDATE developers SET suspended_at = $1, updated_at = $2 WHERE id = $3")
                .bind(at)
                .bind(now)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        if changed == 0 {
            return Err(StoreError::NotFound(format!(
                "there is no developer `{id}`"
            )));
        }
        self.developer(id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("developer `{id}` vanished")))
    }

    /// Allows or forbids promotion for a developer.
    pub async fn set_publish_allowed(&self, id: &str, allowed: bool) -> Result<Developer> {
        let now = now_millis();
        let changed = on_pool!(self, pool => {
            sqlx::query("UPDATE developers SET publish_allowed = $1, updated_at = $2 WHERE id = $3")
                .bind(allowed)
                .bind(now)
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected()
        });
        if changed == 0 {
            return Err(StoreError::NotFound(format!(
                "there is no developer `{id}`"
            )));
        }
        self.developer(id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("developer `{id}` vanished")))
    }
}
