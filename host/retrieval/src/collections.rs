//! Collections: creating and listing a tenant's collections, and finding one through its
//! organization and tenant (the only way in, so one tenant cannot reach another's), with the
//! embedder it was created with and its LanceDB table.

use std::sync::Arc;

use atrium_inference::embed::Embedder;
use atrium_store::{Collection, CollectionSummary, TenantKey};

use crate::error::storage;
use crate::{Retrieval, RetrievalError, table};

impl Retrieval {
    /// A tenant's collection by name, or [`RetrievalError::NotFound`].
    pub(crate) async fn collection(
        &self,
        tenant: &TenantKey,
        name: &str,
    ) -> Result<Collection, RetrievalError> {
        self.store
            .collection(tenant, name)
            .await?
            .ok_or_else(|| {
                RetrievalError::NotFound(format!(
                    "collection `{name}` does not exist for tenant `{}`; create it with POST /v1/rag/{name}",
                    tenant.tenant_id
                ))
            })
    }

    /// The embedder the collection was created with, if this host has it.
    pub(crate) fn embedder(
        &self,
        collection: &Collection,
    ) -> Result<Arc<dyn Embedder>, RetrievalError> {
        self.embedders
            .find(&collection.model, Some(&collection.embedder))
            .ok_or_else(|| RetrievalError::EmbedderMissing {
                provider: collection.embedder.clone(),
                model: collection.model.clone(),
            })
    }

    /// The collection's LanceDB table, opened (or created) on first use.
    pub(crate) async fn handle(
        &self,
        collection: &Collection,
    ) -> Result<table::Handle, RetrievalError> {
        self.tables
            .get(&collection.id)
            .await
            .map_err(|e| storage("opening the collection's table", e))
    }

    /// Creates a collection of a tenant unless it exists; returns it and whether this call
    /// created it. A new collection uses the host's default embedder for good.
    pub async fn create_collection(
        &self,
        tenant: &TenantKey,
        name: &str,
    ) -> Result<(Collection, bool), RetrievalError> {
        self.guarded(async {
            let embedder = self.embedders.default_embedder();
            let (collection, created) = self
                .store
                .create_collection(tenant, name, embedder.provider(), embedder.model())
                .await?;
            self.handle(&collection).await?;
            Ok((collection, created))
        })
        .await
    }

    /// The collections of a tenant with their counts.
    pub async fn list_collections(
        &self,
        tenant: &TenantKey,
    ) -> Result<Vec<CollectionSummary>, RetrievalError> {
        Ok(self.store.list_collections(tenant).await?)
    }
}
