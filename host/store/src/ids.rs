//! The keys that name what belongs to one tenant: a [`TenantKey`] (organization, tenant) and an
//! [`InstallKey`] (organization, tenant, app). A tenant id is unique only within its
//! organization, so nothing of a tenant is ever named by the tenant id alone: every query of
//! tenant data takes one of these and binds both ids.

use std::fmt;

/// One tenant of one organization.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantKey {
    /// The organization's id (`org_...`).
    pub org_id: String,
    /// The tenant's id, unique within the organization.
    pub tenant_id: String,
}

impl TenantKey {
    /// The tenant `tenant_id` of organization `org_id`.
    pub fn new(org_id: impl Into<String>, tenant_id: impl Into<String>) -> Self {
        TenantKey {
            org_id: org_id.into(),
            tenant_id: tenant_id.into(),
        }
    }

    /// This tenant's install of `app_slug`.
    #[must_use]
    pub fn install(&self, app_slug: impl Into<String>) -> InstallKey {
        InstallKey {
            org_id: self.org_id.clone(),
            tenant_id: self.tenant_id.clone(),
            app_slug: app_slug.into(),
        }
    }
}

impl fmt::Display for TenantKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.org_id, self.tenant_id)
    }
}

/// One tenant's install of one app: the key of everything an install owns (its settings,
/// sealed values, records, agents' edits, schedule runs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstallKey {
    /// The organization's id.
    pub org_id: String,
    /// The tenant's id.
    pub tenant_id: String,
    /// The app's slug.
    pub app_slug: String,
}

impl InstallKey {
    /// The install of `app_slug` by tenant `tenant_id` of organization `org_id`.
    pub fn new(
        org_id: impl Into<String>,
        tenant_id: impl Into<String>,
        app_slug: impl Into<String>,
    ) -> Self {
        InstallKey {
            org_id: org_id.into(),
            tenant_id: tenant_id.into(),
            app_slug: app_slug.into(),
        }
    }

    /// The tenant that has the install.
    #[must_use]
    pub fn tenant(&self) -> TenantKey {
        TenantKey::new(&self.org_id, &self.tenant_id)
    }
}

impl fmt::Display for InstallKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.org_id, self.tenant_id, self.app_slug)
    }
}

/// The kinds of sealed value an install has (the `kind` column of `install_secrets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InstallValueKind {
    /// A secret-typed install setting.
    Setting,
    /// The tenant's override of one of the app's secrets.
    Override,
}

impl InstallValueKind {
    /// The stored name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            InstallValueKind::Setting => "setting",
            InstallValueKind::Override => "override",
        }
    }
}
