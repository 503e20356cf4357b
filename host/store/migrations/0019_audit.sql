-- The audit log of a tenant's cross-app calls: every apps.invoke, apps.fetch, team delegation
-- and event delivery, with the caller, the callee, how it ended, how long it took and the
-- chain it ran on. Kept when an install goes: it is the tenant's record.
CREATE TABLE audit_log (
    org_id          TEXT NOT NULL,
    tenant_id       TEXT NOT NULL,
    id              TEXT NOT NULL,
    kind            TEXT NOT NULL,
    caller_app      TEXT NOT NULL,
    caller_agent    TEXT,
    callee_app      TEXT NOT NULL,
    target          TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    reason          TEXT,
    duration_ms     BIGINT NOT NULL,
    chain_depth     BIGINT NOT NULL,
    visited_agents  TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, id)
);

CREATE INDEX audit_log_by_time ON audit_log (org_id, tenant_id, created_at, id);
