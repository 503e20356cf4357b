-- Runs of the apps' named schedules (`lifecycle.schedules`). The primary key is the claim:
-- of several hosts scanning the same minute, the one whose insert succeeds runs it, so a
-- schedule fires once per due minute however many hosts share the database.
CREATE TABLE schedule_runs (
    org_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    app_slug     TEXT NOT NULL,
    schedule     TEXT NOT NULL,
    due_at       BIGINT NOT NULL,
    host         TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    error        TEXT,
    claimed_at   BIGINT NOT NULL,
    finished_at  BIGINT,
    PRIMARY KEY (org_id, tenant_id, app_slug, schedule, due_at)
);
