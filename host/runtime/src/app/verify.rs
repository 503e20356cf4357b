//! The registration check: what a fresh instance of the app registers, held to the rules
//! against the manifest it is loaded with, as the health check and, once per loaded app,
//! before every call.

use std::sync::Arc;

use atrium_manifest::sandbox::registration;

use super::handlers::{HandlerCall, HandlerReply};
use super::{App, Code};
use crate::memory::MemoryPlatform;
use crate::{CallError, Invocation, Registration};

impl App {
    /// The health check: a fresh instance starts and, when the app exports handlers, its
    /// registrations are valid for this manifest and were built from it. Returns what it
    /// registered.
    ///
    /// An app outside the runtime answers its backend's [`crate::External::ready`] (for a
    /// container: it runs, answers `/health`, and its `/manifest` is the registered one).
    pub async fn health(&self, inv: &Invocation) -> Result<Option<Registration>, CallError> {
        if let Code::External(external) = &self.inner.code {
            return external.ready().await.map(|()| None);
        }
        let Some(registration) = self.checked_registration(inv).await? else {
            return Ok(None);
        };
        let built = atrium_manifest::parse(&registration.manifest).map_err(|e| {
            CallError::Registration(format!(
                "the manifest embedded in the component is invalid: {e}"
            ))
        })?;
        let m = self.manifest();
        if built.app_id != m.app_id || built.version != m.version {
            return Err(CallError::Registration(format!(
                "the component was built from the manifest of {}@{} but is loaded as {}@{}",
                built.app_id, built.version, m.app_id, m.version
            )));
        }
        Ok(Some(registration))
    }

    /// A fresh instance starts and, when the app exports handlers, what it registers is held
    /// to the registration rules against the manifest it is loaded with.
    async fn checked_registration(
        &self,
        inv: &Invocation,
    ) -> Result<Option<Registration>, CallError> {
        let Some(component) = self.component() else {
            return Ok(None);
        };
        if component.handlers.is_none() {
            let (mut store, _) = self.instantiate(component, inv).await?;
            store.data_mut().log.finish();
            return Ok(None);
        }
        let HandlerReply::Registration(registration) = self.run(inv, HandlerCall::Describe).await?
        else {
            return Err(CallError::Internal(
                "describe answered the wrong shape".into(),
            ));
        };
        // The SDK checks each registration as the app builds itself; the host checks the whole
        // of it again, so a component written without the SDK is held to the same rules.
        let registered = registration::Registered {
            tools: &registration.tools,
            lifecycle: &registration.lifecycle,
            schedules: &registration.schedules,
            events: &registration.events,
            room_messages: registration.room_messages,
            routes: &registration.routes,
            serves_http: self.has_http(),
        };
        registration::check(self.manifest(), &registered)
            .map_err(|e| CallError::Registration(e.message))?;
        Ok(Some(registration))
    }

    /// The registration check of a loaded app, run once: what it registers, in an instance of
    /// its own without a tenant, against the manifest it is loaded with (the component may
    /// have been built from another app id; the rules are the loaded manifest's). Every call
    /// waits for it, and an app whose registration breaks the rules answers every call with
    /// that error, as does one whose check trapped or ran out of time. Only a check that found
    /// no free instance slot is tried again.
    ///
    /// An app outside the runtime is checked by its backend before every call instead
    /// ([`crate::External::ready`]): whether it is ready changes as its container starts,
    /// stops and restarts.
    pub async fn verify(&self) -> Result<(), CallError> {
        if let Code::External(external) = &self.inner.code {
            return external.ready().await;
        }
        let outcome = self
            .inner
            .verified
            .get_or_try_init(|| async {
                let mut inv = Invocation::new("", Arc::new(MemoryPlatform::default()));
                inv.call_id = Some("registration-check".into());
                match self.checked_registration(&inv).await {
                    Err(e @ CallError::Capacity(_)) => Err(e),
                    outcome => Ok(outcome.map(drop)),
                }
            })
            .await?;
        outcome.clone()
    }
}
