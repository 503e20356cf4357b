-- The change feed: what writes changed that a host may hold in memory (installs, tenant
-- users and tokens, organization keys), so that every host and command on this database can
-- drop its copy. `change_head` numbers the changes: a write takes the next numbers by updating
-- its one row inside the write's own transaction, which also orders the changes of concurrent
-- writers by commit (the row stays locked until the writer commits). Readers poll the
-- changes past the last number they applied; old changes are pruned.
CREATE TABLE change_head (
    id  INTEGER PRIMARY KEY,
    seq BIGINT NOT NULL
);
INSERT INTO change_head (id, seq) VALUES (1, 0);

CREATE TABLE changes (
    seq    BIGINT PRIMARY KEY,
    change TEXT NOT NULL,
    at     BIGINT NOT NULL
);
CREATE INDEX changes_at ON changes (at);
