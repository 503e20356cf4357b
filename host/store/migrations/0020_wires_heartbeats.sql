-- Event wires within a tenant (section 6): an emitter app's event linked to a subscriber's
-- target, an agent whose app gets `on_event`, or a heartbeat that is woken. Events flow only
-- when both sides approved and the wire is not revoked. `target_heartbeat` is '' for an agent
-- target, so that the unique key holds for both kinds.
CREATE TABLE wires (
    org_id                  TEXT NOT NULL,
    tenant_id               TEXT NOT NULL,
    id                      TEXT NOT NULL,
    emitter_app             TEXT NOT NULL,
    event_name              TEXT NOT NULL,
    subscriber_app          TEXT NOT NULL,
    target_agent            TEXT NOT NULL,
    target_heartbeat        TEXT NOT NULL,
    subscriber_approved_at  BIGINT,
    emitter_approved_at     BIGINT,
    revoked_at              BIGINT,
    created_at              BIGINT NOT NULL,
    updated_at              BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, id),
    UNIQUE (org_id, tenant_id, emitter_app, event_name, subscriber_app, target_agent, target_heartbeat),
    FOREIGN KEY (org_id, tenant_id) REFERENCES tenants (org_id, id)
);

CREATE INDEX wires_by_event ON wires (org_id, tenant_id, emitter_app, event_name);

-- The heartbeats of an install's agents. An event wire's `target_heartbeat` sets `next_run_at`
-- to now and records the wake; the heartbeat scheduler runs what is due.
CREATE TABLE heartbeats (
    org_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    app_slug     TEXT NOT NULL,
    agent        TEXT NOT NULL,
    slug         TEXT NOT NULL,
    next_run_at  BIGINT,
    woken_at     BIGINT,
    woken_by     TEXT,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug, agent, slug),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);
