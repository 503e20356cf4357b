-- A tenant user's conversations with the tenant's installed apps, through the orchestrator:
-- the agent a conversation is with now (`app_slug`, `agent`, none before the first routing)
-- and the next message sequence number. Conversations are the user's history and outlive the
-- installs they spoke to.
CREATE TABLE conversations (
    org_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    id          TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    channel     TEXT NOT NULL,
    title       TEXT,
    app_slug    TEXT,
    agent       TEXT,
    next_seq    BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, id)
);

CREATE INDEX conversations_by_user ON conversations (org_id, tenant_id, user_id, created_at, id);

-- The messages of a conversation, in order (`seq` from 1): the user's (`user`), the routing
-- decision (`routing`), the agent's answer (`assistant`, with its tool calls in `data`) or why
-- there was none (`error`).
CREATE TABLE conversation_messages (
    org_id           TEXT NOT NULL,
    tenant_id        TEXT NOT NULL,
    conversation_id  TEXT NOT NULL,
    seq              BIGINT NOT NULL,
    kind             TEXT NOT NULL,
    content          TEXT NOT NULL,
    app_slug         TEXT,
    agent            TEXT,
    data             TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    PRIMARY KEY (org_id, tenant_id, conversation_id, seq),
    FOREIGN KEY (org_id, tenant_id, conversation_id) REFERENCES conversations (org_id, tenant_id, id)
);
