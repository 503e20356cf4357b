-- Commitments: promises an install's agent made (`commitments.add`), tracked per tenant until
-- a user marks them done or dismissed. `user_id` is the user the call that made the promise
-- served, when there was one; `due_at` is ms since the epoch.
CREATE TABLE commitments (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    id          TEXT NOT NULL,
    app_slug    TEXT NOT NULL,
    agent       TEXT NOT NULL,
    user_id     TEXT,
    title       TEXT NOT NULL,
    content     TEXT NOT NULL,
    due_at      BIGINT,
    status      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    closed_by   TEXT,
    PRIMARY KEY (org_id, tenant_id, id),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);

CREATE INDEX commitments_by_time ON commitments (org_id, tenant_id, created_at, id);
