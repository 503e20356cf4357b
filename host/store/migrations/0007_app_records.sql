-- An app's own records, per install: what the `records.*` platform tools read and write. The
-- id is unique within the install; `data` is the record (a JSON object, its `id` included).
CREATE TABLE app_records (
    org_id       TEXT NOT NULL,
    tenant_id    TEXT NOT NULL,
    app_slug     TEXT NOT NULL,
    id           TEXT NOT NULL,
    record_type  TEXT NOT NULL,
    data         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, app_slug, id),
    FOREIGN KEY (org_id, tenant_id, app_slug) REFERENCES installs (org_id, tenant_id, app_slug)
);

CREATE INDEX app_records_type ON app_records (org_id, tenant_id, app_slug, record_type, created_at);
