-- Batches of chat completions, run in the background. An item is claimed before it runs and
-- written back with its result in one transaction, guarded by the claim.
CREATE TABLE batches (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    tenant_id   TEXT NOT NULL,
    item_count  BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE batch_items (
    batch_id    TEXT NOT NULL REFERENCES batches(id),
    idx         BIGINT NOT NULL,
    custom_id   TEXT NOT NULL,
    request     TEXT NOT NULL,
    status      TEXT NOT NULL,
    claim       TEXT,
    claimed_at  BIGINT,
    result      TEXT,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (batch_id, idx)
);

CREATE INDEX batch_items_status ON batch_items (status);
