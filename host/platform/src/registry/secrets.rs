//! An app's dev-default secrets: set and deleted by its owner, listed without values, sealed at
//! rest. The value is never answered after it is set; apps read it through the secrets import.

use atrium_store::{Developer, SecretMeta};

use super::{Registry, RegistryError, Result};
use crate::sealing::Sealed;

/// The largest secret value, in bytes.
pub const MAX_SECRET_BYTES: usize = 64 * 1024;
/// The longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

pub(crate) fn check_key(key: &str) -> Result<()> {
    if atrium_manifest::rules::is_secret_key(key) {
        Ok(())
    } else {
        Err(RegistryError::BadRequest {
            param: "key",
            message: format!("`{key}` is not a secret key: it must match ^[A-Z][A-Z0-9_]{{0,63}}$"),
        })
    }
}

impl Registry {
    /// Sets a secret of an app the developer owns; `true` when it is new. A `None`
    /// description keeps the stored one.
    pub async fn put_secret(
        &self,
        developer: &Developer,
        slug: &str,
        key: &str,
        value: &str,
        description: Option<&str>,
    ) -> Result<(SecretMeta, bool)> {
        check_key(key)?;
        self.owned_app(developer, slug).await?;
        if value.len() > MAX_SECRET_BYTES {
            return Err(RegistryError::TooLarge {
                param: "value",
                message: format!("a secret value may be at most {MAX_SECRET_BYTES} bytes"),
            });
        }
        if let Some(d) = description
            && (d.chars().count() > MAX_DESCRIPTION_CHARS || d.chars().any(char::is_control))
        {
            return Err(RegistryError::BadRequest {
                param: "description",
                message: format!(
                    "the description must be at most {MAX_DESCRIPTION_CHARS} characters without control characters"
                ),
            });
        }
        let sealed = self
            .inner
            .secrets
            .seal_text(value, Sealed::AppSecret { app: slug, key })?;
        Ok(self
            .inner
            .store
            .put_secret(slug, key, description, &sealed)
            .await?)
    }

    /// The metadata of an app's secrets.
    pub async fn secrets(&self, developer: &Developer, slug: &str) -> Result<Vec<SecretMeta>> {
        self.owned_app(developer, slug).await?;
        Ok(self.inner.store.secrets(slug).await?)
    }

    /// One secret's metadata.
    pub async fn secret(&self, developer: &Developer, slug: &str, key: &str) -> Result<SecretMeta> {
        check_key(key)?;
        self.owned_app(developer, slug).await?;
        self.inner
            .store
            .secret(slug, key)
            .await?
            .ok_or_else(|| RegistryError::NotFound(format!("the app `{slug}` has no secret {key}")))
    }

    /// Deletes a secret.
    pub async fn delete_secret(&self, developer: &Developer, slug: &str, key: &str) -> Result<()> {
        check_key(key)?;
        self.owned_app(developer, slug).await?;
        if self.inner.store.delete_secret(slug, key).await? {
            Ok(())
        } else {
            Err(RegistryError::NotFound(format!(
                "the app `{slug}` has no secret {key}"
            )))
        }
    }

    /// The value of an app's secret, opened: what the secrets import answers an app (the
    /// install's override, once installs exist, comes first).
    pub async fn open_secret(&self, slug: &str, key: &str) -> Result<Option<String>> {
        let Some(sealed) = self.inner.store.sealed_secret(slug, key).await? else {
            return Ok(None);
        };
        let place = Sealed::AppSecret { app: slug, key };
        Ok(Some(self.inner.secrets.open_text(&sealed, place)?))
    }
}
