-- Tenant principals: the tenant's users and the tokens issued to its admins and users by a
-- holder of the organization's key.

-- A user of a tenant, known by a UUID (the caller's, or generated) and a display name. Rooms
-- and the `on_user_added` hook refer to these rows.
CREATE TABLE tenant_users (
    org_id        TEXT NOT NULL,
    tenant_id     TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    display_name  TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, user_id),
    FOREIGN KEY (org_id, tenant_id) REFERENCES tenants (org_id, id)
);

-- A tenant token (`att_` and 64 hex digits), stored as the SHA-256 digest of the secret like
-- the organization keys. `role` is `admin` or `user`; every token speaks for one user.
CREATE TABLE tenant_tokens (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    role         TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    secret_hash  TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    FOREIGN KEY (org_id, tenant_id, user_id) REFERENCES tenant_users (org_id, tenant_id, user_id)
);

CREATE INDEX tenant_tokens_org_tenant ON tenant_tokens (org_id, tenant_id);
