-- Installs: a tenant's activation of an app. Everything here belongs to one tenant of one
-- organization, and every query carries both.

-- Integrations a tenant has configured (a mail provider, a CRM, ...): activation fails closed
-- when an app's required_integrations names one that is missing.
CREATE TABLE tenant_integrations (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    provider    TEXT NOT NULL,
    config      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, provider),
    FOREIGN KEY (org_id, tenant_id) REFERENCES tenants (org_id, id)
);

-- One row per (tenant, app). `version` is what the install runs; `pending_version` a newer
-- promoted version an auto-upgrading install waits on because it adds scopes. Settings hold
-- the non-secret values (JSON object); secret-typed values live sealed in install_secrets.
CREATE TABLE installs (
    org_id              TEXT NOT NULL,
    tenant_id           TEXT NOT NULL,
    app_slug            TEXT NOT NULL REFERENCES apps (slug),
    version             TEXT NOT NULL,
    status              TEXT NOT NULL,
    granted_scopes      TEXT NOT NULL,
    settings            TEXT NOT NULL,
    rag_bindings        TEXT NOT NULL,
    upgrade_policy      TEXT NOT NULL,
    pending_version     TEXT,
    activated_by        TEXT,
    first_activated_at  BIGINT NOT NULL,
    activated_at        BIGINT NOT NULL,
    deactivated_at      BIGINT,
    updated_at          BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug),
    FOREIGN KEY (org_id, tenant_id) REFERENCES tenants (org_id, id),
    FOREIGN KEY (app_slug, version) REFERENCES app_versions (app_slug, version)
);

CREATE INDEX installs_app_version ON installs (app_slug, version);

-- Sealed values of an install: secret-typed settings (`kind` setting) and the tenant's
-- overrides of the developer's default secrets (`kind` override).
CREATE TABLE install_secrets (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    app_slug    TEXT NOT NULL,
    kind        TEXT NOT NULL,
    key         TEXT NOT NULL,
    sealed      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug, kind, key),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);

-- Cross-app grants within a tenant (section 3): honoured when both approvals are set and the
-- target agent is in allowed_agents (a JSON array; `__route__` admits the declared routes).
CREATE TABLE grants (
    org_id              TEXT NOT NULL,
    tenant_id           TEXT NOT NULL,
    caller_app          TEXT NOT NULL,
    callee_app          TEXT NOT NULL,
    allowed_agents      TEXT NOT NULL,
    caller_approved_at  BIGINT,
    callee_approved_at  BIGINT,
    revoked_at          BIGINT,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, caller_app, callee_app),
    FOREIGN KEY (org_id, tenant_id) REFERENCES tenants (org_id, id)
);

-- Document templates of a tenant; an app's template defaults are cloned here once per
-- (tenant, slug) at activation, and the tenant's edits are never overwritten.
CREATE TABLE tenant_templates (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    slug        TEXT NOT NULL,
    app_slug    TEXT,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, slug),
    FOREIGN KEY (org_id, tenant_id) REFERENCES tenants (org_id, id)
);
