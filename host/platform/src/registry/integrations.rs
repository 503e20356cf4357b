//! A tenant's integrations: one configuration per provider (a mail provider's
//! `primary_email`, a CRM's credentials), sealed at rest like secrets
//! ([`Sealed::Integration`]) and never answered; activation reads them to fail closed on a
//! missing `required_integrations` provider and to fill `auto_default` settings.

use atrium_store::{StoredIntegration, TenantKey};
use serde_json::{Map, Value};

use super::{Registry, RegistryError, Result};
use crate::sealing::Sealed;

/// The longest provider slug.
pub const MAX_PROVIDER_CHARS: usize = 64;

/// How many rows the sealing pass reads at a time.
const SEAL_BATCH: i64 = 500;

impl Registry {
    /// Sets (or replaces) one of the tenant's integrations, sealed; `true` when it is new.
    pub async fn put_integration(
        &self,
        tenant: &TenantKey,
        provider: &str,
        config: &Map<String, Value>,
    ) -> Result<bool> {
        if !atrium_manifest::rules::is_app_slug_chars(provider)
            || provider.len() > MAX_PROVIDER_CHARS
        {
            return Err(RegistryError::BadRequest {
                param: "provider",
                message: format!(
                    "`{provider}` is not a provider slug: lowercase letters, digits and hyphens, at most {MAX_PROVIDER_CHARS}"
                ),
            });
        }
        let text = serde_json::to_string(config)
            .map_err(|e| RegistryError::internal("encoding the configuration failed", &e))?;
        let sealed = self
            .inner
            .secrets
            .seal_text(&text, Sealed::Integration { tenant, provider })?;
        Ok(self
            .inner
            .store
            .put_integration(tenant, provider, &sealed)
            .await?)
    }

    /// The tenant's integrations, opened: provider to configuration (a JSON object).
    pub async fn integrations(&self, tenant: &TenantKey) -> Result<Map<String, Value>> {
        let mut out = Map::new();
        for stored in self.inner.store.integrations(tenant).await? {
            let config = self.open_integration(tenant, &stored)?;
            out.insert(stored.provider, Value::Object(config));
        }
        Ok(out)
    }

    fn open_integration(
        &self,
        tenant: &TenantKey,
        stored: &StoredIntegration,
    ) -> Result<Map<String, Value>> {
        let text = if stored.is_plain() {
            // A row from before configurations were sealed; `seal_plain_integrations` seals it.
            stored.config.clone()
        } else {
            self.inner.secrets.open_text(
                &stored.config,
                Sealed::Integration {
                    tenant,
                    provider: &stored.provider,
                },
            )?
        };
        serde_json::from_str(&text).map_err(|e| {
            RegistryError::internal(
                "a stored integration configuration is not a JSON object",
                &e,
            )
        })
    }

    /// Seals every integration configuration still stored in clear (written before
    /// configurations were sealed); answers how many it sealed. A host runs it at start.
    pub async fn seal_plain_integrations(&self) -> Result<usize> {
        let store = &self.inner.store;
        let mut sealed = 0;
        loop {
            let batch = store.plain_integrations(SEAL_BATCH).await?;
            if batch.is_empty() {
                return Ok(sealed);
            }
            let mut progressed = false;
            for (tenant, stored) in batch {
                let text = self.inner.secrets.seal_text(
                    &stored.config,
                    Sealed::Integration {
                        tenant: &tenant,
                        provider: &stored.provider,
                    },
                )?;
                if store
                    .seal_integration(&tenant, &stored.provider, &stored.config, &text)
                    .await?
                {
                    sealed += 1;
                    progressed = true;
                }
            }
            if !progressed {
                // Every row of the batch changed under us (another host sealed it): done.
                return Ok(sealed);
            }
        }
    }
}
