-- Group rooms of a tenant (docs/platform.md, "Group rooms"): tenant users and installed apps'
-- agents, each member known by its canonical key (`user:<uuid>`, `<app_id>:<agent_slug>`).
-- Rooms outlive the installs of their agent members. Room ids are UUIDs, unique on the host:
-- the notification of a post names only the room and the sequence.
CREATE TABLE rooms (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    id          TEXT NOT NULL,
    name        TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    -- The sequence and the time (µs since the epoch) of the last message; 0 for none. The
    -- posting transaction advances both, so a room's messages are numbered 1, 2, ... in commit
    -- order and no two share a time.
    last_seq    BIGINT NOT NULL,
    last_at     BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, id)
);

CREATE UNIQUE INDEX rooms_id ON rooms (id);

-- The members of a room, by canonical key; an agent member names its app and agent, a user
-- member its tenant user. `ordinal` keeps the order they joined in.
CREATE TABLE room_members (
    org_id        TEXT NOT NULL,
    tenant_id     TEXT NOT NULL,
    room_id       TEXT NOT NULL,
    member_key    TEXT NOT NULL,
    member_type   TEXT NOT NULL,
    app_id        TEXT,
    agent_slug    TEXT,
    user_id       TEXT,
    display_name  TEXT NOT NULL,
    added_by      TEXT NOT NULL,
    added_at      BIGINT NOT NULL,
    ordinal       BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, room_id, member_key),
    FOREIGN KEY (org_id, tenant_id, room_id) REFERENCES rooms (org_id, tenant_id, id)
);

CREATE INDEX room_members_by_key ON room_members (org_id, tenant_id, member_key, room_id);

-- The timeline: `seq` from 1 per room, `created_at` in µs, strictly increasing with `seq`.
-- `mentions` is a JSON array of the canonical keys the content mentions, `metadata` a JSON
-- object.
CREATE TABLE room_messages (
    org_id          TEXT NOT NULL,
    tenant_id       TEXT NOT NULL,
    room_id         TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    id              TEXT NOT NULL,
    sender_type     TEXT NOT NULL,
    sender_ref      TEXT NOT NULL,
    sender_display  TEXT NOT NULL,
    content         TEXT NOT NULL,
    mentions        TEXT NOT NULL,
    metadata        TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, room_id, seq),
    FOREIGN KEY (org_id, tenant_id, room_id) REFERENCES rooms (org_id, tenant_id, id)
);

CREATE UNIQUE INDEX room_messages_by_time ON room_messages (org_id, tenant_id, room_id, created_at);

-- A tenant's settings that a tenant admin changes; a NULL column is the platform's default.
CREATE TABLE tenant_settings (
    org_id             TEXT NOT NULL,
    tenant_id          TEXT NOT NULL,
    room_member_limit  BIGINT,
    updated_at         BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id)
);
