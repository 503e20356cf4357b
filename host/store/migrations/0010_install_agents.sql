-- A tenant's edits of an installed app's agents (display name, system prompt, allowed skills,
-- tools allowed, routing hints), kept across re-activations and upgrades: the manifest gives
-- the defaults, an edit wins field by field.
CREATE TABLE install_agents (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    app_slug    TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    edits       TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug, agent_id),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);
