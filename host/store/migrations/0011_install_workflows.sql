-- A tenant's overrides of an installed app's workflows (routing hints for the orchestrator),
-- merged by workflow id over the manifest's and kept across re-activations and upgrades.
CREATE TABLE install_workflows (
    org_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    app_slug     TEXT NOT NULL,
    workflow_id  TEXT NOT NULL,
    overrides    TEXT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug, workflow_id),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);
