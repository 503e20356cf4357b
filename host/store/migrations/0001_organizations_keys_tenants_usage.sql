-- Organizations own API keys; tenants and usage belong to an organization.
CREATE TABLE organizations (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    name        TEXT NOT NULL,
    prefix      TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

CREATE TABLE tenants (
    org_id      TEXT NOT NULL REFERENCES organizations(id),
    id          TEXT NOT NULL,
    name        TEXT,
    external_id TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, id)
);

-- One row per metered call. Costs are integer micro-dollars so that sums stay exact.
CREATE TABLE usage_records (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL REFERENCES organizations(id),
    tenant_id         TEXT NOT NULL,
    kind              TEXT NOT NULL,
    provider          TEXT NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    cost_micros       BIGINT NOT NULL,
    batch             BIGINT NOT NULL,
    created_at        BIGINT NOT NULL
);

CREATE INDEX usage_records_org_tenant ON usage_records (org_id, tenant_id);
