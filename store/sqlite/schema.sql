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
	gated           INTEGER NOT NULL DEFAULT 0,  -- 1: its route is gated, it goes through the lanes
	ordered         INTEGER NOT NULL DEFAULT 0,  -- 1: its route is ordered (gated too): indexed by target
	dedup_key       TEXT NOT NULL DEFAULT '',    -- content hash, when its route dedups
	backoff         TEXT NOT NULL DEFAULT '',    -- its own Backoff (a room's delivery): 'delay_ms multiplier'
	seq             INTEGER NOT NULL, -- status changes so far, creation included: numbers their events
	trace_parent    TEXT NOT NULL DEFAULT '',    -- W3C traceparent of the request that sent it, when traced
	result          TEXT NOT NULL DEFAULT '',    -- what the carrier reported beyond delivery: JSON object, '' for none
	-- The bulky columns come last so that reading the others stays cheap;
	-- only Get reads the timeline, which grows with every status change.
	params          TEXT NOT NULL,    -- JSON object, '' for none
	text            TEXT NOT NULL,
	payload         BLOB,
	timeline        TEXT NOT NULL     -- one line per entry, oldest first
) WITHOUT ROWID;

-- Claim walks this index in order and reads due_at and route from it:
-- the messages of routes that are not gated.
CREATE INDEX IF NOT EXISTS messages_ready ON messages (priority DESC, id, due_at, route)
	WHERE status = 'QUEUED' AND gated = 0;
-- The QUEUED messages of gated routes but the kept ones, by lane in claim
-- order.
CREATE INDEX IF NOT EXISTS messages_lane ON messages (route, lane, priority DESC, id, due_at)
	WHERE status = 'QUEUED' AND gated = 1;
-- The QUEUED messages of kept routes (gated = 3) in claim order, across
-- their lanes (kept.go); they are in no index by lane.
CREATE INDEX IF NOT EXISTS messages_kept ON messages (priority DESC, id, due_at, route, lane)
	WHERE status = 'QUEUED' AND gated = 3;
-- Release.
CREATE INDEX IF NOT EXISTS messages_retry ON messages (due_at, route)
	WHERE status = 'TO_RETRY';
-- Overdue: in-flight deadlines, expiries, polls.
CREATE INDEX IF NOT EXISTS messages_inflight ON messages (deadline, route)
	WHERE (status = 'SENT_TO_NS' OR status = 'DELIVERED_TO_NS' OR status = 'SENT_TO_DEVICE');
-- Together, ready, lane, kept, pull, retry and inflight hold every active
-- message and its route: ActiveRoutes reads them.
CREATE INDEX IF NOT EXISTS messages_expiry ON messages (expires_at)
	WHERE expires_at > 0 AND status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED';
CREATE INDEX IF NOT EXISTS messages_poll ON messages (due_at)
	WHERE due_at > 0 AND status = 'DELIVERED_TO_NS';
-- Create: idempotency and coalescing.
CREATE UNIQUE INDEX IF NOT EXISTS messages_idempotency ON messages (tenant, route, idempotency_key)
	WHERE idempotency_key != '';
CREATE INDEX IF NOT EXISTS messages_coalesce ON messages (tenant, route, coalesce_key)
	WHERE coalesce_key != '' AND (status = 'QUEUED' OR status = 'TO_RETRY');
-- Ordered routes: the active messages of a target, oldest first.
CREATE INDEX IF NOT EXISTS messages_target ON messages (route, target, id)
	WHERE ordered = 1 AND status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED';
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
-- Pull: the QUEUED messages that only their recipient takes (gated = 2:
-- Pull set), by route and target in lease order.
CREATE INDEX IF NOT EXISTS messages_pull ON messages (route, target, priority DESC, id, due_at, expires_at)
	WHERE status = 'QUEUED' AND gated = 2;
-- The active deliveries of rooms (the routes under herald.RoomRoutePrefix,
-- 'room:'), by route and subscription (target): deleting a subscription
-- ends them. The test of route costs the other messages two comparisons.
CREATE INDEX IF NOT EXISTS messages_delivery ON messages (route, target)
	WHERE route >= 'room:' AND route < 'room;'
		AND status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED';

-- Rooms, their subscriptions and the events published to them (rooms.go).
-- Durations are milliseconds.
CREATE TABLE IF NOT EXISTS rooms (
	tenant     TEXT NOT NULL,
	name       TEXT NOT NULL,
	expiration INTEGER NOT NULL,  -- 0: never
	delay      INTEGER NOT NULL,
	multiplier REAL NOT NULL,
	attempts   INTEGER NOT NULL,
	revision   INTEGER NOT NULL,  -- changes with every subscription made or deleted
	created_at INTEGER NOT NULL,
	PRIMARY KEY (tenant, name)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS subscriptions (
	id          TEXT NOT NULL PRIMARY KEY,
	tenant      TEXT NOT NULL,
	room        TEXT NOT NULL,
	type        TEXT NOT NULL,
	url         TEXT NOT NULL,
	secret_env  TEXT NOT NULL,    -- a subscription made before they kept their own secret
	event_types TEXT NOT NULL,    -- JSON [[type, version], ...]
	delay       INTEGER,          -- the overrides; NULL keeps the room's
	multiplier  REAL,
	attempts    INTEGER,
	created_at  INTEGER NOT NULL,
	secret      TEXT NOT NULL DEFAULT ''  -- the signing secret, whsec_...
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS subscriptions_room ON subscriptions (tenant, room, id);

CREATE TABLE IF NOT EXISTS room_events (
	id             TEXT NOT NULL PRIMARY KEY,
	tenant         TEXT NOT NULL,
	room           TEXT NOT NULL,
	type           TEXT NOT NULL,
	version        TEXT NOT NULL,
	correlation_id TEXT NOT NULL,
	data           BLOB NOT NULL,
	deliveries     TEXT NOT NULL, -- JSON [[subscription id, message id], ...]
	created_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS room_events_created ON room_events (created_at);

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
	last_error TEXT NOT NULL,
	data       BLOB              -- an event about no message (an uplink): its body
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS events_due ON events (due_at) WHERE dead = 0;
-- The dead events, newest first (DeadEvents, ReplayEvents).
CREATE INDEX IF NOT EXISTS events_dead ON events (at, id) WHERE dead = 1;

-- lanes is the state of each lane of a gated route. The triggers below and
-- the statements that change a message's status keep head_* and inflight
-- in step with the messages in the same transaction; SetAdmission recounts
-- them. The claim (claim.go) reads and writes the rest. The lanes of kept
-- routes keep their flights, QUEUED count and owner in the writer's memory
-- instead (kept.go): one has a row only once it is paused or its circuit
-- counts, with cap 0, which keeps it out of lanes_ready.
CREATE TABLE IF NOT EXISTS lanes (
	route        TEXT NOT NULL,
	lane         TEXT NOT NULL,
	head_prio    INTEGER NOT NULL DEFAULT 0,  -- the lane's first QUEUED message: priority
	head_id      TEXT NOT NULL DEFAULT '',    -- and id; '' when none
	inflight     INTEGER NOT NULL DEFAULT 0,  -- messages in flight
	cap          INTEGER NOT NULL,            -- the route's concurrency; 2^62 for none; 0 for a kept route's (kept.go)
	ready_at     INTEGER NOT NULL DEFAULT 0,  -- parked until then (spacing, bucket, pause); 0: not parked
	held         INTEGER NOT NULL DEFAULT 0,  -- 1: parked because it admitted nothing else (see lanes.go)
	next_at      INTEGER NOT NULL DEFAULT 0,  -- spacing: the earliest next dispatch
	tokens       REAL NOT NULL DEFAULT 0,     -- the lane's bucket as of tokens_at
	tokens_at    INTEGER NOT NULL DEFAULT 0,  -- 0: never drawn from (full)
	paused_until INTEGER NOT NULL DEFAULT 0,
	pause_reason TEXT NOT NULL DEFAULT '',
	failures     INTEGER NOT NULL DEFAULT 0,  -- circuit: transient failures in a row
	circuit      TEXT NOT NULL DEFAULT '',    -- '' closed, 'open', 'probing' (a probe is out)
	cool         INTEGER NOT NULL DEFAULT 0,  -- the circuit's current cool-down, ms
	circuit_at   INTEGER NOT NULL DEFAULT 0,  -- the circuit's last failure counted
	owner        TEXT NOT NULL DEFAULT '',    -- ClaimAhead (ordered): the node whose claim took the messages in flight
	PRIMARY KEY (route, lane)
) WITHOUT ROWID;
-- The lanes a claim may take from, in claim order.
CREATE INDEX IF NOT EXISTS lanes_ready ON lanes (head_prio DESC, head_id)
	WHERE head_id != '' AND ready_at = 0 AND inflight < cap;
CREATE INDEX IF NOT EXISTS lanes_parked ON lanes (ready_at) WHERE ready_at > 0;
-- The lanes of kept routes that a claim passes over (paused) or takes one
-- message of (a circuit's probe).
CREATE INDEX IF NOT EXISTS lanes_kept_held ON lanes (route, lane) WHERE cap = 0 AND (ready_at > 0 OR circuit != '');

-- lane_caps holds each gated route's cap, as lanes.cap, for the
-- triggers that make a lane's row.
CREATE TABLE IF NOT EXISTS lane_caps (
	route TEXT NOT NULL PRIMARY KEY,
	cap   INTEGER NOT NULL
) WITHOUT ROWID;

-- tenant_buckets is the token bucket of a tenant on a route (tenant_rate).
CREATE TABLE IF NOT EXISTS tenant_buckets (
	route     TEXT NOT NULL,
	tenant    TEXT NOT NULL,
	tokens    REAL NOT NULL,
	tokens_at INTEGER NOT NULL,
	PRIMARY KEY (route, tenant)
) WITHOUT ROWID;

-- route_buckets is the token bucket of a whole route, across its lanes and
-- tenants (route_rate).
CREATE TABLE IF NOT EXISTS route_buckets (
	route     TEXT NOT NULL PRIMARY KEY,
	tokens    REAL NOT NULL,
	tokens_at INTEGER NOT NULL
) WITHOUT ROWID;

-- A gated message that becomes QUEUED may be its lane's new head.
CREATE TRIGGER IF NOT EXISTS lanes_insert AFTER INSERT ON messages
WHEN new.gated = 1 AND new.status = 'QUEUED'
BEGIN
	INSERT INTO lanes (route, lane, head_prio, head_id, cap)
		VALUES (new.route, new.lane, new.priority, new.id,
			COALESCE((SELECT cap FROM lane_caps WHERE route = new.route), 4611686018427387904))
	ON CONFLICT (route, lane) DO UPDATE SET head_prio = excluded.head_prio, head_id = excluded.head_id
		WHERE head_id = '' OR excluded.head_prio > head_prio OR (excluded.head_prio = head_prio AND excluded.head_id < head_id);
	UPDATE lanes SET ready_at = 0, held = 0 WHERE held = 1 AND route = new.route AND lane = new.lane;
END;

-- A gated message that becomes QUEUED again may be its lane's new head; one
-- that leaves QUEUED but for a claim may have been it. A claim (QUEUED to
-- SENT_TO_NS, which only claims make) records what it took in each lane
-- itself, once per lane (claimedFrom in lanes.go), and the statements of
-- transitions record the flights that they start or end, once per lane too
-- (laneFlights in transition.go): only Claim and Transition change the
-- status of a gated message (Pull changes that of pull messages, which
-- have no lane). (The versions before kept the flights in a third
-- trigger, lanes_update: migrate drops it.)
CREATE TRIGGER IF NOT EXISTS lanes_requeued AFTER UPDATE OF status ON messages
WHEN new.gated = 1 AND new.status = 'QUEUED' AND old.status != 'QUEUED'
BEGIN
	INSERT INTO lanes (route, lane, head_prio, head_id, cap)
		VALUES (new.route, new.lane, new.priority, new.id,
			COALESCE((SELECT cap FROM lane_caps WHERE route = new.route), 4611686018427387904))
	ON CONFLICT (route, lane) DO UPDATE SET head_prio = excluded.head_prio, head_id = excluded.head_id
		WHERE head_id = '' OR excluded.head_prio > head_prio OR (excluded.head_prio = head_prio AND excluded.head_id < head_id);
	-- A held lane may admit again once a message joins it.
	UPDATE lanes SET ready_at = 0, held = 0 WHERE held = 1 AND route = new.route AND lane = new.lane;
END;
CREATE TRIGGER IF NOT EXISTS lanes_dequeued AFTER UPDATE OF status ON messages
WHEN new.gated = 1 AND old.status = 'QUEUED' AND new.status != 'QUEUED' AND new.status != 'SENT_TO_NS'
BEGIN
	UPDATE lanes SET (head_id, head_prio) = (
			SELECT id, priority FROM (SELECT id, priority FROM messages INDEXED BY messages_lane
				WHERE status = 'QUEUED' AND gated = 1 AND route = new.route AND lane = new.lane
				ORDER BY priority DESC, id LIMIT 1)
			UNION ALL SELECT '', 0 LIMIT 1)
	WHERE route = new.route AND lane = new.lane AND head_id = old.id;
END;

-- A message of an ordered route that ends lets its target's next one go:
-- that one's lane, held because the message waited for its turn, may admit
-- again, even when it is not the lane of the message that ended (which
-- laneFlights releases).
CREATE TRIGGER IF NOT EXISTS lanes_target_ended AFTER UPDATE OF status ON messages
WHEN old.ordered = 1 AND new.status IN ('DELIVERY_SUCCESSFUL', 'DELIVERY_FAILED', 'CANCELLED')
	AND old.status NOT IN ('DELIVERY_SUCCESSFUL', 'DELIVERY_FAILED', 'CANCELLED')
BEGIN
	UPDATE lanes SET ready_at = 0, held = 0
	WHERE held = 1 AND (route, lane) = (SELECT route, lane FROM messages INDEXED BY messages_target
		WHERE ordered = 1 AND status != 'DELIVERY_SUCCESSFUL' AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED'
			AND route = new.route AND target = new.target
		ORDER BY id LIMIT 1);
END;

-- Create's dedup: for each target of a route with dedup (its messages
-- have a dedup_key), the last message sent to it (moved from SENT_TO_NS
-- to DELIVERED_TO_NS or DELIVERY_SUCCESSFUL: the network accepted it),
-- with its dedup key and when, and the last message created for it. The
-- triggers below keep it; Prune forgets the targets untouched since its
-- cut.
CREATE TABLE IF NOT EXISTS last_sent (
	tenant     TEXT NOT NULL,
	route      TEXT NOT NULL,
	target     TEXT NOT NULL,
	hash       TEXT NOT NULL DEFAULT '',  -- the last sent's dedup key; '' while none was sent
	sent_id    TEXT NOT NULL DEFAULT '',
	sent_at    INTEGER NOT NULL DEFAULT 0,
	newest_id  TEXT NOT NULL,             -- the last created
	touched_at INTEGER NOT NULL,          -- the last of the two changes
	PRIMARY KEY (tenant, route, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS last_sent_touched ON last_sent (touched_at);
CREATE TRIGGER IF NOT EXISTS last_sent_created AFTER INSERT ON messages
WHEN new.dedup_key != ''
BEGIN
	INSERT INTO last_sent (tenant, route, target, newest_id, touched_at)
		VALUES (new.tenant, new.route, new.target, new.id, new.created_at)
	ON CONFLICT (tenant, route, target) DO UPDATE SET newest_id = excluded.newest_id,
		touched_at = max(touched_at, excluded.touched_at);
END;
CREATE TRIGGER IF NOT EXISTS last_sent_sent AFTER UPDATE OF status ON messages
WHEN new.dedup_key != '' AND old.status = 'SENT_TO_NS'
	AND (new.status = 'DELIVERED_TO_NS' OR new.status = 'DELIVERY_SUCCESSFUL')
BEGIN
	INSERT INTO last_sent (tenant, route, target, hash, sent_id, sent_at, newest_id, touched_at)
		VALUES (new.tenant, new.route, new.target, new.dedup_key, new.id, new.updated_at, new.id, new.updated_at)
	ON CONFLICT (tenant, route, target) DO UPDATE SET hash = excluded.hash, sent_id = excluded.sent_id,
		sent_at = excluded.sent_at, touched_at = max(touched_at, excluded.touched_at);
END;

-- The inbox: the events push carriers sent back (herald.Inbound), from
-- their ingress until the engine has applied them.
CREATE TABLE IF NOT EXISTS inbox (
	id           TEXT PRIMARY KEY,
	route        TEXT NOT NULL,
	kind         TEXT NOT NULL,
	external_id  TEXT NOT NULL,
	correlation  TEXT NOT NULL,
	acknowledged INTEGER NOT NULL,
	permanent    INTEGER NOT NULL,
	reason       TEXT NOT NULL,
	device       TEXT NOT NULL,
	uplink       BLOB,
	at           INTEGER NOT NULL,
	due_at       INTEGER NOT NULL  -- next claim; a claim pushes it to its lease's end
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS inbox_due ON inbox (due_at, id);
-- The ids of the inbox's settled events, with when they came (at), until
-- the pruner's cut passes it: a late copy of one is not stored again.
CREATE TABLE IF NOT EXISTS inbox_done (
	id TEXT PRIMARY KEY,
	at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS inbox_done_at ON inbox_done (at);
CREATE INDEX IF NOT EXISTS inbox_correlation ON inbox (route, correlation) WHERE correlation != '';

-- The admin page's sessions (sessions.go): id is a hash of the random id
-- of the page's cookie. A session ends at expires; CreateSession deletes
-- those that have ended, and makes room by a tenant's least recently used.
CREATE TABLE IF NOT EXISTS sessions (
	id      TEXT NOT NULL PRIMARY KEY,
	tenant  TEXT NOT NULL,
	role    TEXT NOT NULL,
	csrf    TEXT NOT NULL,
	created INTEGER NOT NULL,
	used    INTEGER NOT NULL,
	expires INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_tenant ON sessions (tenant, used, id);
CREATE INDEX IF NOT EXISTS sessions_expires ON sessions (expires);

-- The operator's pauses of lanes and routes (pauses.go): lane '' pauses
-- the whole route; until 0 lasts until resumed. The engine reads them and
-- names the paused lanes in its claims.
CREATE TABLE IF NOT EXISTS lane_pauses (
	route  TEXT NOT NULL,
	lane   TEXT NOT NULL,
	until  INTEGER NOT NULL,
	reason TEXT NOT NULL,
	tenant TEXT NOT NULL,
	at     INTEGER NOT NULL,
	PRIMARY KEY (route, lane)
) WITHOUT ROWID;
