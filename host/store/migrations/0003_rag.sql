-- Managed retrieval. A collection belongs to one tenant of one organization; its chunks and
-- vectors live in a LanceDB table named after the collection's id. Documents are listed here;
-- a document is `indexing` while its chunks are written and `indexed` once they all are.
CREATE TABLE rag_collections (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES organizations(id),
    tenant_id       TEXT NOT NULL,
    name            TEXT NOT NULL,
    embedder        TEXT NOT NULL,
    model           TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    -- Writes (appends and deletions) since the last background upkeep of the table.
    pending_writes  BIGINT NOT NULL DEFAULT 0,
    UNIQUE (org_id, tenant_id, name)
);

CREATE TABLE rag_documents (
    id             TEXT PRIMARY KEY,
    collection_id  TEXT NOT NULL REFERENCES rag_collections(id),
    title          TEXT NOT NULL,
    source         TEXT NOT NULL,
    chunks         BIGINT NOT NULL,
    chars          BIGINT NOT NULL,
    status         TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);

CREATE INDEX rag_documents_collection ON rag_documents (collection_id, created_at);
CREATE INDEX rag_documents_status ON rag_documents (status);
CREATE INDEX rag_collections_pending ON rag_collections (pending_writes);
