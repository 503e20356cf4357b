-- The app registry. Developers publish apps; apps and their versions are global to the host
-- (installs, which belong to one tenant of one organization, refer to them).

-- A developer account. Tokens are JWTs: signed by the host (`sub` is the id) or issued by an
-- external OpenID Connect provider (mapped to the account by `email`, stored lower-cased).
-- The dev tenant is where the developer tries their apps (`upgrade --force-grant-new-scopes`).
CREATE TABLE developers (
    id               TEXT PRIMARY KEY,
    email            TEXT NOT NULL UNIQUE,
    login            TEXT NOT NULL UNIQUE,
    publish_allowed  BOOLEAN NOT NULL,
    suspended_at     BIGINT,
    dev_org_id       TEXT REFERENCES organizations(id),
    dev_tenant_id    TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);

-- An app: its slug is the manifest's app_id. `status` is draft (no current version), active
-- (a current version) or archived (retired by its owner).
CREATE TABLE apps (
    slug             TEXT PRIMARY KEY,
    owner_id         TEXT NOT NULL REFERENCES developers(id),
    name             TEXT NOT NULL,
    status           TEXT NOT NULL,
    current_version  TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    archived_at      BIGINT
);

-- An immutable version. `content_digest` covers what registration sent (manifest text,
-- component or image, docs); the bundle and the template defaults are set once each.
CREATE TABLE app_versions (
    app_slug          TEXT NOT NULL REFERENCES apps(slug),
    version           TEXT NOT NULL,
    status            TEXT NOT NULL,
    build_result      TEXT NOT NULL,
    manifest_source   TEXT NOT NULL,
    manifest_digest   TEXT NOT NULL,
    content_digest    TEXT NOT NULL,
    component_digest  TEXT,
    component_size    BIGINT,
    image             TEXT NOT NULL,
    templates         TEXT,
    templates_digest  TEXT,
    bundle_digest     TEXT,
    registered_by     TEXT NOT NULL REFERENCES developers(id),
    created_at        BIGINT NOT NULL,
    promoted_at       BIGINT,
    PRIMARY KEY (app_slug, version)
);

-- Every blob a version refers to: its component, each docs file and each bundle file. The
-- artifact store holds the blobs by digest; a blob no row names is garbage.
CREATE TABLE version_files (
    app_slug  TEXT NOT NULL,
    version   TEXT NOT NULL,
    role      TEXT NOT NULL,
    path      TEXT NOT NULL,
    digest    TEXT NOT NULL,
    size      BIGINT NOT NULL,
    PRIMARY KEY (app_slug, version, role, path),
    FOREIGN KEY (app_slug, version) REFERENCES app_versions (app_slug, version)
);

CREATE INDEX version_files_digest ON version_files (digest);

-- The developer's default secrets of an app, sealed with the host's secrets key (AEAD, the
-- associated data binds each value to its app and key). Tenant overrides come with installs.
CREATE TABLE app_secrets (
    app_slug     TEXT NOT NULL REFERENCES apps(slug),
    key          TEXT NOT NULL,
    description  TEXT,
    sealed       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (app_slug, key)
);
