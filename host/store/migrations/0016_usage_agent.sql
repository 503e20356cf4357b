-- The agent a metered call was made for: a model step of the agent runner names the app and
-- the agent, so a tenant's usage splits by agent. NULL for other calls.
ALTER TABLE usage_records ADD COLUMN agent TEXT;
CREATE INDEX usage_records_agent ON usage_records (org_id, tenant_id, app_slug, agent);
