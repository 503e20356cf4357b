-- A tenant's model roles (`fast`, `specialist`, `orchestrator`): which tier, provider and/or
-- model of the /v1 gateway each role calls. A role without a row has the platform's default.
CREATE TABLE tenant_llm_roles (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    role        TEXT NOT NULL,
    tier        TEXT,
    provider    TEXT,
    model       TEXT,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, role)
);
