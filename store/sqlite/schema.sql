-- herald's SQLite schema. Every statement is idempotent: Open runs it each time.
-- Times are unix milliseconds, 0 for a zero time.
--
-- The partial indexes test status with = and !=, never IN: SQLite evaluates
-- an IN list in a partial index's WHERE slowly, on every update of the row.
-- A query uses a partial index only when its WHERE holds the index's terms
-- as they are written here (see the status expressions in codec.go).

-- messages is keyed by its time-ordered id itself (WITHOUT ROWID): new rows
-- go at the end, and no second b-tree maps ids to rowids. Each row holds
-- the message's timeline too (see timeline.go), so that a write touches one
-- row: the statement that changes a status appends its entry.
CREATE TABLE IF NOT EXISTS messages (
	id              TEXT NOT NULL PRIMARY KEY,
	tenant          TEXT NOT NULL,
	route           TEXT NOT NULL,
	target          TEXT NOT NULL,
	lane            TEXT NOT NULL,
	priority        INTEGER NOT NULL,
	correlation_id  TEXT NOT NULL,
	idempotency_key TEXT NOT NULL,
	coalesce_key    TEXT NOT NULL,
	status          TEXT NOT NULL,
	attempt         INTEGER NOT NULL,
	max_attempts    INTEGER NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	due_at          INTEGER NOT NULL,
	deadline        INTEGER NOT NULL,
	expires_at      INTEGER NOT NULL,
	external_id     TEXT NOT NULL,
	last_error      TEXT NOT NULL,
	lease           INTEGER NOT NULL,
	seq             INTEGER NOT NULL, -- status changes so far, creation included: numbers their events
	-- The bulky columns come last so that reading the others stays cheap;
	-- only Get reads the timeline, which grows with every status change.
	params          TEXT NOT NULL,    -- JSON object, '' for none
	text            TEXT NOT NULL,
	payload         BLOB,
	timeline        TEXT NOT NULL     -- one line per entry, oldest first
) WITHOUT ROWID;

-- Claim walks this index in order and reads due_at and route from it.
CREATE INDEX IF NOT EXISTS messages_ready ON messages (priority DESC, id, due_at, route)
	WHERE status = 'QUEUED';
-- Release.
CREATE INDEX IF NOT EXISTS messages_retry ON messages (due_at, route)
	WHERE status = 'TO_RETRY';
-- Overdue: in-flight deadlines, expiries, polls.
CREATE INDEX IF NOT EXISTS messages_inflight ON messages (deadline, route)
	WHERE (status = 'SENT_TO_NS' OR status = 'DELIVERED_TO_NS' OR status = 'SENT_TO_DEVICE');
-- Together, ready, retry and inflight hold every active message and its
-- route: ActiveRoutes reads them.
CREATE INDEX IF NOT EXISTS messages_expiry ON messages (expires_at)
	WHERE expires_at > 0 AND status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED';
CREATE INDEX IF NOT EXISTS messages_poll ON messages (due_at)
	WHERE due_at > 0 AND status = 'DELIVERED_TO_NS';
-- Create: idempotency and coalescing.
CREATE UNIQUE INDEX IF NOT EXISTS messages_idempotency ON messages (tenant, route, idempotency_key)
	WHERE idempotency_key != '';
CREATE INDEX IF NOT EXISTS messages_coalesce ON messages (tenant, route, coalesce_key)
	WHERE coalesce_key != '' AND (status = 'QUEUED' OR status = 'TO_RETRY');
-- FindByExternalID.
CREATE INDEX IF NOT EXISTS messages_external ON messages (route, external_id)
	WHERE external_id != '' AND status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED';
-- List, newest first: by tenant, dead letters (and Purge), by correlation
-- id. Other statuses are listed from their partial indexes above.
CREATE INDEX IF NOT EXISTS messages_tenant ON messages (tenant, id);
CREATE INDEX IF NOT EXISTS messages_failed ON messages (tenant, id)
	WHERE status = 'DELIVERY_FAILED';
CREATE INDEX IF NOT EXISTS messages_correlation ON messages (correlation_id, id)
	WHERE correlation_id != '';
-- Prune.
CREATE INDEX IF NOT EXISTS messages_done ON messages (updated_at)
	WHERE (status = 'DELIVERY_SUCCESSFUL' OR status = 'DELIVERY_FAILED' OR status = 'CANCELLED');

-- The outbox: one row per outcome event and subscriber.
CREATE TABLE IF NOT EXISTS events (
	id         TEXT PRIMARY KEY,
	subscriber TEXT NOT NULL,
	message_id TEXT NOT NULL,
	type       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	attempt    INTEGER NOT NULL,
	due_at     INTEGER NOT NULL, -- next claim; a claim pushes it to its lease's end
	dead       INTEGER NOT NULL,
	last_error TEXT NOT NULL
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS events_due ON events (due_at) WHERE dead = 0;
