-- A tenant's limits of one agent run (the agent runner's model loop): the most model steps,
-- the most it may cost (micro-dollars) and how long it may take (ms). A NULL column, or no
-- row, is the platform's default.
CREATE TABLE tenant_agent_limits (
    org_id         TEXT NOT NULL,
    tenant_id      TEXT NOT NULL,
    max_steps      BIGINT,
    budget_micros  BIGINT,
    timeout_ms     BIGINT,
    updated_at     BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id)
);
