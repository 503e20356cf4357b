-- Heartbeats run (docs/platform.md, "Heartbeats"). A heartbeat row is created at activation for
-- every heartbeat of the version's agents and kept with its state across re-activations and
-- upgrades: `active`, `disabled` (after 5 consecutive failures, until a tenant admin enables
-- it) or `retired` (the installed version no longer declares it). `id` is the feed id of the
-- admin endpoints; `schedule_key` is the declared schedule `next_run_at` was computed for, so
-- an upgrade that changes the schedule computes it again.
ALTER TABLE heartbeats ADD COLUMN id TEXT;
ALTER TABLE heartbeats ADD COLUMN state TEXT NOT NULL DEFAULT 'active';
ALTER TABLE heartbeats ADD COLUMN schedule_key TEXT;
ALTER TABLE heartbeats ADD COLUMN consecutive_failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE heartbeats ADD COLUMN last_run_at BIGINT;
ALTER TABLE heartbeats ADD COLUMN last_ok_at BIGINT;
ALTER TABLE heartbeats ADD COLUMN last_error TEXT;

CREATE UNIQUE INDEX heartbeats_by_id ON heartbeats (org_id, tenant_id, id);
CREATE INDEX heartbeats_due ON heartbeats (state, next_run_at);

-- The runs of heartbeats. The primary key is the claim: of several hosts that find the same
-- due run, the one whose insert succeeds runs it (in the transaction that moves the row's
-- `next_run_at` on, so a host that dies mid-run leaves the next run scheduled). `trigger` is
-- `schedule`, `wake` (an event's `target_heartbeat`) or `run_now`; `outcome` is `running`,
-- `ok`, `suppressed` (HEARTBEAT_OK), `idle` (the pre-filter found nothing), `failed` or `lost`
-- (its host stopped before it finished).
CREATE TABLE heartbeat_runs (
    org_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    app_slug     TEXT NOT NULL,
    agent        TEXT NOT NULL,
    slug         TEXT NOT NULL,
    due_at       BIGINT NOT NULL,
    run_trigger  TEXT NOT NULL,
    host         TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    records      BIGINT,
    error        TEXT,
    reply        TEXT,
    escalated    BIGINT NOT NULL DEFAULT 0,
    cost_micros  BIGINT NOT NULL DEFAULT 0,
    claimed_at   BIGINT NOT NULL,
    finished_at  BIGINT,
    PRIMARY KEY (org_id, tenant_id, app_slug, agent, slug, due_at)
);

CREATE INDEX heartbeat_runs_running ON heartbeat_runs (outcome, claimed_at);

-- An agent's memory: entries by `kind`, per (tenant, install, agent), written by substantive
-- heartbeat ticks and the `memory.write` platform tool, read by `memory.query` and the
-- `_internal_agent_memory` pre-filter.
CREATE TABLE agent_memory (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    app_slug    TEXT NOT NULL,
    agent       TEXT NOT NULL,
    id          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    content     TEXT NOT NULL,
    data        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug, id),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);

CREATE INDEX agent_memory_by_kind ON agent_memory (org_id, tenant_id, app_slug, agent, kind, created_at);

-- Visions: an agent's long goal, pursued in cycles of phases (assess, debate, plan, execute,
-- review) by the heartbeat scheduler. One per (install, agent), created at activation when the
-- tenant selected a project. `state` is `running`, `awaiting_approval` (a supervised plan
-- waits for a user), `done` (the review found the criteria met) or `stopped` (a budget was
-- spent; `stop_reason` says which). `next_action_at` is when the next phase is due; while a
-- host runs one it holds a lease there.
CREATE TABLE visions (
    org_id          TEXT NOT NULL,
    tenant_id       TEXT NOT NULL,
    app_slug        TEXT NOT NULL,
    agent           TEXT NOT NULL,
    id              TEXT NOT NULL,
    project         TEXT NOT NULL,
    state           TEXT NOT NULL,
    phase           TEXT NOT NULL,
    cycle           BIGINT NOT NULL,
    goals_done      BIGINT NOT NULL,
    cost_micros     BIGINT NOT NULL,
    next_action_at  BIGINT,
    stop_reason     TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug, agent),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);

CREATE UNIQUE INDEX visions_by_id ON visions (org_id, tenant_id, id);
CREATE INDEX visions_due ON visions (state, next_action_at);

-- Every phase a vision ran, and the decisions on its plans, in order (`seq` from 1).
CREATE TABLE vision_phases (
    org_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    app_slug     TEXT NOT NULL,
    vision_id    TEXT NOT NULL,
    seq          BIGINT NOT NULL,
    cycle        BIGINT NOT NULL,
    phase        TEXT NOT NULL,
    outcome      TEXT NOT NULL,
    output       TEXT NOT NULL,
    cost_micros  BIGINT NOT NULL,
    decided_by   TEXT,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, vision_id, seq)
);
