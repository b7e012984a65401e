package sqlite

import (
	"context"
	"database/sql"
	"errors"
)

// writeStmts are the writer connection's prepared statements.
type writeStmts struct {
	all []*sql.Stmt

	begin, commit, rollback *sql.Stmt

	insertMessage, insertEvent            *sql.Stmt
	findIdempotent, exists, findDuplicate *sql.Stmt
	selectCoalesced, transition           *sql.Stmt
	selectRetry                           *sql.Stmt
	purge, prune, pruneEvents             *sql.Stmt
	pruneLanes, pruneBuckets              *sql.Stmt
	claimEvents, deleteEvent, retryEvent  *sql.Stmt
	insertDataEvent                       *sql.Stmt
	pruneLastSent                         *sql.Stmt

	// The inbox's (inbox.go).
	addInbound, claimInbound, deleteInbound, laterInbound *sql.Stmt
	settledInbound, pruneInboxDone                        *sql.Stmt
	claimPoll                                             *sql.Stmt
	killEvent                                             *sql.Stmt

	// The rooms' (rooms.go).
	insertRoom, roomRevision, bumpRoom, deleteRoom      *sql.Stmt
	insertSubscription, roomSubscriptions, subRoom      *sql.Stmt
	deleteSubscription, activeDeliveries, insertRoomEvt *sql.Stmt
	pull, subscriptionExists                            *sql.Stmt

	// The admin page's sessions (sessions.go).
	insertSession, endedSessions, countSessions *sql.Stmt
	evictSessions, touchSession, deleteSession  *sql.Stmt

	// The lanes' statements (lanes.go).
	unparkLanes, readyLanes, laneTake, laneTakeIDs, laneTakeOrdered *sql.Stmt
	parkLane, holdLane, laneDispatched, laneProbe, lanesClaimed     *sql.Stmt
	laneFlights, laneFlightIDs, laneTakenOver                       *sql.Stmt
	keptFlights, keptQueued, keptHolds, keptWalk                    *sql.Stmt
	keptSeekBand, keptNextBand, keptWindowEnd, ensureLane           *sql.Stmt
	laneCircuit, circuitOpen, circuitClose, circuitCount            *sql.Stmt
	pauseLane, tenantBucket, saveTenantBucket                       *sql.Stmt
	routeBucket, saveRouteBucket                                    *sql.Stmt

	// The claim statements, of ungated and of gated messages, prepared on
	// first use and keyed by the number of routes with their own accept
	// timeout (see claimSQL).
	claims, gatedClaims map[int]*sql.Stmt
	// heldClaims are the ungated claims with a Claim.Hold.
	heldClaims map[int]*sql.Stmt
	// The grouped transition statements, prepared on first use and keyed
	// by the number of transitions they apply (see transitionsSQL).
	transitions map[int]*sql.Stmt
}

// readStmts are the read pool's prepared statements.
type readStmts struct {
	all []*sql.Stmt

	get, byIDs, findExternal, activeRoutes, counts, overdue *sql.Stmt
	duePolls                                                *sql.Stmt

	// The lanes' (lanes.go).
	lane, laneQueued, laneInFlight, lanesInFlight *sql.Stmt
	keptLaneQueued                                *sql.Stmt
	tenantBucket, busiestLanes, tenantLanes       *sql.Stmt
	tenantLanesInFlight                           *sql.Stmt

	// The rooms' (rooms.go).
	room, rooms, subscription, subscriptions, roomEvent *sql.Stmt
	pullQueue                                           *sql.Stmt

	// The admin page's sessions (sessions.go).
	session *sql.Stmt

	// The inbox's (inbox.go).
	inboundByCorrelation     *sql.Stmt
	routeBucket              *sql.Stmt
	firstActive, laneCircuit *sql.Stmt
}

// prepareWrite prepares the writer's statements on conn.
func prepareWrite(ctx context.Context, conn *sql.Conn) (*writeStmts, error) {
	st := &writeStmts{}
	err := prepare(&st.all, func(q string) (*sql.Stmt, error) { return conn.PrepareContext(ctx, q) }, st.defs())
	return st, err
}

// defs lists the writer's statements. The queries name their partial index
// (INDEXED BY): the plan cannot drift, and a query whose index cannot serve
// it fails to prepare instead of scanning the table.
//
// Some parameters make SQLite recompile the statement each time they are
// bound, which costs more than the statement itself (a lane's take: 15 µs
// against 6): a LIMIT; one compared with a column that a partial index's
// WHERE compares with a constant (status = ?); one compared with a column
// in a query with an ORDER BY (route = ? ... ORDER BY id). Such parameters
// are wrapped in a CAST or a unary plus (= +?), which SQLite does not look
// into and which keep the plan (TestPlans compares it).
// TestHotStatementsStayPrepared finds the statements that recompile.
func (st *writeStmts) defs() []stmtDef {
	return []stmtDef{
		{&st.begin, `BEGIN IMMEDIATE`},
		{&st.commit, `COMMIT`},
		{&st.rollback, `ROLLBACK`},
		{&st.insertMessage, `INSERT INTO messages (` + msgCols + `, seq, timeline, ordered)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`},
		// The last message sent to the target (?1, ?2, ?3) when it has the
		// dedup key ?4, was sent at or after ?5, is the last created for
		// the target and did not fail.
		{&st.findDuplicate, `SELECT ` + msgCols + `, timeline FROM messages
			WHERE id = (SELECT sent_id FROM last_sent WHERE tenant = ?1 AND route = ?2 AND target = ?3
					AND hash = ?4 AND sent_id = newest_id AND sent_at >= ?5)
				AND status != 'DELIVERY_FAILED' AND status != 'CANCELLED'`},
		// Event ids are made of the message id and seq, so a subscriber
		// named twice in one Notify gets one event.
		{&st.insertEvent, `INSERT OR IGNORE INTO events (id, subscriber, message_id, type, at, attempt, due_at, dead, last_error)
			VALUES (?1, ?2, ?3, ?4, ?5, 0, ?5, 0, '')`},
		{&st.findIdempotent, `SELECT ` + msgCols + `, timeline FROM messages
			WHERE tenant = ? AND route = ? AND idempotency_key = ? AND idempotency_key != ''`},
		{&st.exists, `SELECT 1 FROM messages WHERE id = ?`},
		{&st.selectCoalesced, `SELECT id, status FROM messages INDEXED BY messages_coalesce
			WHERE tenant = +? AND route = +? AND coalesce_key = +? AND coalesce_key != '' AND ` + waitingSQL + `
			ORDER BY id`},
		// The lease survives a move between in-flight stages (?9) and is
		// cleared by any other. ?8 resets the attempts, ?15 takes one back;
		// ?16 sets gated again from the gated routes ?17 (a replay), and
		// ordered from the ordered routes ?18, but for a pull message's. A change of status (?13) counts in seq,
		// sets updated_at and appends its timeline entry: the new attempt
		// followed by the entry's tail (?14). ?20 replaces the result, which
		// a replay (?8) clears otherwise.
		{&st.transition, `UPDATE messages SET
				status = ?1, due_at = ?3, deadline = ?4,
				expires_at = CASE WHEN ?5 != 0 THEN ?5 ELSE expires_at END,
				external_id = CASE WHEN ?6 != '' THEN ?6 ELSE external_id END,
				last_error = CASE WHEN ?7 != '' THEN ?7 ELSE last_error END,
				result = CASE WHEN ?20 != '' THEN ?20 WHEN ?8 THEN '' ELSE result END,
				attempt = CASE WHEN ?8 THEN 0 WHEN ?15 THEN attempt - 1 ELSE attempt END,
				lease = CASE WHEN ?9 THEN lease ELSE 0 END,
				gated = CASE WHEN ?16 AND gated != 2 THEN ` + gatedCase("?17", "?19") + ` ELSE gated END,
				ordered = CASE WHEN ?16 AND gated != 2 THEN route IN (SELECT value FROM json_each(?18)) ELSE ordered END,
				updated_at = CASE WHEN ?13 THEN ?2 ELSE updated_at END,
				seq = seq + ?13,
				timeline = CASE WHEN ?13 THEN timeline || (CASE WHEN ?8 THEN 0 WHEN ?15 THEN attempt - 1 ELSE attempt END) || ?14 ELSE timeline END
			WHERE id = ?10 AND status = CAST(?11 AS TEXT) AND (CAST(?12 AS INTEGER) = 0 OR lease = CAST(?12 AS INTEGER))
			RETURNING seq, gated, route, lane, priority`},
		{&st.selectRetry, `SELECT id, due_at FROM messages INDEXED BY messages_retry
			WHERE status = 'TO_RETRY' AND due_at <= ? ORDER BY due_at LIMIT CAST(? AS INTEGER)`},
		{&st.purge, `DELETE FROM messages INDEXED BY messages_failed
			WHERE status = 'DELIVERY_FAILED' AND (?1 = '' OR tenant = ?1) AND (?2 = '' OR route = ?2) AND (?3 = 0 OR updated_at < ?3)`},
		{&st.prune, `DELETE FROM messages WHERE id IN (
				SELECT id FROM messages INDEXED BY messages_done
				WHERE ` + terminalSQL + ` AND updated_at < ? LIMIT CAST(? AS INTEGER))`},
		// An event goes once none of its deliveries is active: they read
		// its data when they are sent (the engine's eventdata.go).
		{&st.pruneEvents, `DELETE FROM room_events WHERE id IN (
				SELECT e.id FROM room_events e INDEXED BY room_events_created WHERE e.created_at < ?
					AND NOT EXISTS (SELECT 1 FROM json_each(e.deliveries) d JOIN messages m ON m.id = d.value ->> 1
						WHERE m.status NOT IN ('DELIVERY_SUCCESSFUL', 'DELIVERY_FAILED', 'CANCELLED'))
				LIMIT CAST(? AS INTEGER))`},
		// A lane with no message and nothing of its times after ?1: a row
		// made again by the triggers holds the same, but for its circuit's
		// state, which goes once its last failure is before ?1 too.
		{&st.pruneLanes, `DELETE FROM lanes WHERE (route, lane) IN (
				SELECT route, lane FROM lanes WHERE head_id = '' AND inflight = 0 AND circuit_at < ?1
					AND next_at < ?1 AND tokens_at < ?1 AND paused_until < ?1 AND ready_at < ?1
				LIMIT CAST(?2 AS INTEGER))`},
		// A tenant's bucket last drawn from before ?1 is full again (no
		// rate refills over more than the retention).
		{&st.pruneBuckets, `DELETE FROM tenant_buckets WHERE (route, tenant) IN (
				SELECT route, tenant FROM tenant_buckets WHERE tokens_at < ?1 LIMIT CAST(?2 AS INTEGER))`},
		{&st.claimEvents, `UPDATE events SET due_at = ?1 WHERE id IN (
				SELECT id FROM events WHERE dead = 0 AND due_at <= ?2 ORDER BY due_at LIMIT CAST(?3 AS INTEGER))
			RETURNING id, subscriber, message_id, type, at, attempt, data`},
		{&st.insertDataEvent, `INSERT OR IGNORE INTO events (id, subscriber, message_id, type, at, attempt, due_at, dead, last_error, data)
			VALUES (?1, ?2, '', ?3, ?4, 0, ?4, 0, '', ?5)`},
		{&st.addInbound, `INSERT OR IGNORE INTO inbox (` + inboxCols + `)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12 WHERE NOT EXISTS (SELECT 1 FROM inbox_done WHERE id = ?1)`},
		{&st.claimInbound, `SELECT ` + inboxCols + ` FROM inbox INDEXED BY inbox_due
			WHERE due_at <= ? ORDER BY due_at, id LIMIT CAST(? AS INTEGER)`},
		{&st.claimPoll, `UPDATE messages SET due_at = ?4
			WHERE id = ?1 AND status = 'DELIVERED_TO_NS' AND lease = ?2 AND due_at = ?3`},
		{&st.settledInbound, `INSERT OR IGNORE INTO inbox_done (id, at) SELECT id, at FROM inbox WHERE id = ?`},
		{&st.deleteInbound, `DELETE FROM inbox WHERE id = ?`},
		{&st.pruneLastSent, `DELETE FROM last_sent WHERE (tenant, route, target) IN (
				SELECT tenant, route, target FROM last_sent INDEXED BY last_sent_touched WHERE touched_at < ?1 LIMIT CAST(?2 AS INTEGER))`},
		{&st.pruneInboxDone, `DELETE FROM inbox_done WHERE id IN (
				SELECT id FROM inbox_done INDEXED BY inbox_done_at WHERE at < ?1 LIMIT CAST(?2 AS INTEGER))`},
		{&st.laterInbound, `UPDATE inbox SET due_at = ?2 WHERE id = ?1`},
		{&st.deleteEvent, `DELETE FROM events WHERE id = ?`},
		{&st.retryEvent, `UPDATE events SET due_at = ?, attempt = ?, last_error = ? WHERE id = ?`},
		{&st.killEvent, `UPDATE events SET dead = 1, attempt = ?, last_error = ? WHERE id = ?`},
		{&st.unparkLanes, `UPDATE lanes INDEXED BY lanes_parked SET ready_at = 0, held = 0 WHERE ready_at > 0 AND ready_at <= ?`},
		{&st.holdLane, `UPDATE lanes SET ready_at = ?3, held = 1 WHERE route = ?1 AND lane = ?2`},
		// The lanes that may admit, in claim order, after (?1, ?2).
		{&st.readyLanes, `SELECT route, lane, head_prio, head_id, inflight, next_at, tokens, tokens_at, paused_until, circuit, cool, owner
			FROM lanes INDEXED BY lanes_ready
			WHERE head_id != '' AND ready_at = 0 AND inflight < cap
				AND (head_prio < ?1 OR (head_prio = ?1 AND head_id > ?2))
			ORDER BY head_prio DESC, head_id LIMIT CAST(?3 AS INTEGER)`},
		{&st.laneTake, `SELECT id, tenant, priority FROM messages INDEXED BY messages_lane
			WHERE status = 'QUEUED' AND gated = 1 AND route = +?1 AND lane = +?2 AND due_at <= ?3
			ORDER BY priority DESC, id LIMIT CAST(?4 AS INTEGER)`},
		// The same without the tenant, for a route without a tenant bucket:
		// the index alone answers it, no message's row is read.
		{&st.laneTakeIDs, `SELECT id, '', priority FROM messages INDEXED BY messages_lane
			WHERE status = 'QUEUED' AND gated = 1 AND route = +?1 AND lane = +?2 AND due_at <= ?3
			ORDER BY priority DESC, id LIMIT CAST(?4 AS INTEGER)`},
		// The same, on an ordered route: only messages with no older active
		// message of their target.
		{&st.laneTakeOrdered, `SELECT id, tenant, priority FROM messages m INDEXED BY messages_lane
			WHERE status = 'QUEUED' AND gated = 1 AND route = +?1 AND lane = +?2 AND due_at <= ?3
				AND NOT EXISTS (SELECT 1 FROM messages o INDEXED BY messages_target
					WHERE o.ordered = 1 AND o.status != 'DELIVERY_SUCCESSFUL' AND o.status != 'DELIVERY_FAILED' AND o.status != 'CANCELLED'
						AND o.route = m.route AND o.target = m.target AND o.id < m.id)
			ORDER BY priority DESC, id LIMIT CAST(?4 AS INTEGER)`},
		{&st.parkLane, `UPDATE lanes SET ready_at = ?3 WHERE route = ?1 AND lane = ?2`},
		// The kept routes' messages in flight, and QUEUED, by lane
		// (kept.go): each lane's count and greatest priority.
		{&st.keptFlights, `SELECT route, lane, COUNT(*), 0 FROM messages INDEXED BY messages_inflight
			WHERE gated = 3 AND ` + inFlightSQL + ` GROUP BY route, lane`},
		// The messages in flight of a lane of a gated route (Heartbeat's
		// takeOver).
		{&st.laneFlightIDs, `SELECT id FROM messages INDEXED BY messages_inflight
			WHERE (gated = 1 OR gated = 3) AND ` + inFlightSQL + ` AND route = +? AND lane = +?`},
		{&st.laneTakenOver, `UPDATE lanes SET inflight = MAX(0, inflight - ?3), owner = '' WHERE route = ?1 AND lane = ?2`},
		{&st.keptQueued, `SELECT route, lane, COUNT(*), MAX(priority) FROM messages INDEXED BY messages_kept
			WHERE status = 'QUEUED' AND gated = 3 GROUP BY route, lane`},
		// The kept routes' lanes that are parked, or that have a circuit.
		{&st.keptHolds, `SELECT route, lane, ready_at > 0, circuit != '' FROM lanes INDEXED BY lanes_kept_held
			WHERE cap = 0 AND (ready_at > 0 OR circuit != '')`},
		// The kept routes' messages due at ?1 in claim order, up to ?2.
		{&st.keptWalk, `SELECT id, priority, route, lane FROM messages INDEXED BY messages_kept
			WHERE status = 'QUEUED' AND gated = 3 AND due_at <= ?1
			ORDER BY priority DESC, id LIMIT CAST(?2 AS INTEGER)`},
		// Lane (?4, ?5)'s messages, due or not, among the ?3 kept messages
		// of priority ?1 from id ?2 on; the greatest priority below ?1.
		{&st.keptSeekBand, `SELECT id, priority, due_at FROM (
				SELECT id, priority, due_at, route, lane FROM messages INDEXED BY messages_kept
				WHERE status = 'QUEUED' AND gated = 3 AND priority = +?1 AND id >= +?2
				ORDER BY id LIMIT CAST(?3 AS INTEGER))
			WHERE route = ?4 AND lane = ?5 ORDER BY id`},
		{&st.keptNextBand, `SELECT MAX(priority) FROM messages INDEXED BY messages_kept
			WHERE status = 'QUEUED' AND gated = 3 AND priority < +?1`},
		// The ?3-th kept message of priority ?1 from id ?2 on.
		{&st.keptWindowEnd, `SELECT id, priority FROM messages INDEXED BY messages_kept
			WHERE status = 'QUEUED' AND gated = 3 AND priority = +?1 AND id >= +?2
			ORDER BY id LIMIT 1 OFFSET CAST(?3 AS INTEGER)`},
		// A lane's row, for a kept route's lane (which the triggers do not
		// make), before its pause or circuit is written.
		{&st.ensureLane, `INSERT INTO lanes (route, lane, cap)
			VALUES (?1, ?2, COALESCE((SELECT cap FROM lane_caps WHERE route = ?1), 4611686018427387904))
			ON CONFLICT (route, lane) DO NOTHING`},
		// The lanes a claim took from, [route, lane, taken] each in the
		// JSON array ?1, by node ?2: one statement for them all.
		{&st.lanesClaimed, `UPDATE lanes SET inflight = inflight + t.n, owner = ?2,
				(head_id, head_prio) = (
					SELECT id, priority FROM (SELECT id, priority FROM messages INDEXED BY messages_lane
						WHERE status = 'QUEUED' AND gated = 1 AND route = t.route AND lane = t.lane
						ORDER BY priority DESC, id LIMIT 1)
					UNION ALL SELECT '', 0 LIMIT 1)
			FROM (SELECT value ->> 0 AS route, value ->> 1 AS lane, value ->> 2 AS n FROM json_each(?1)) AS t
			WHERE lanes.route = t.route AND lanes.lane = t.lane`},
		// The flights that transitions started or ended, [route, lane,
		// change in flight, ended] each in the JSON array ?1: an end (a
		// terminal status) lets a held lane admit again.
		{&st.laneFlights, `UPDATE lanes SET inflight = inflight + f.delta,
				ready_at = CASE WHEN (held = 1 AND f.ended) OR f.sooner THEN 0 ELSE ready_at END,
				held = CASE WHEN f.ended THEN 0 ELSE held END
			FROM (SELECT value ->> 0 AS route, value ->> 1 AS lane, value ->> 2 AS delta, value ->> 3 AS ended, value ->> 4 AS sooner
				FROM json_each(?1)) AS f
			WHERE lanes.route = f.route AND lanes.lane = f.lane`},
		{&st.laneDispatched, `UPDATE lanes SET next_at = ?3, tokens = ?4, tokens_at = ?5, ready_at = ?6
			WHERE route = ?1 AND lane = ?2`},
		{&st.laneProbe, `UPDATE lanes SET circuit = 'probing', paused_until = ?3, pause_reason = 'circuit_probe',
			ready_at = MAX(ready_at, ?3) WHERE route = ?1 AND lane = ?2`},
		{&st.laneCircuit, `SELECT failures, circuit, cool FROM lanes WHERE route = ? AND lane = ?`},
		// A failure counted (?6 its time) keeps the lane's row from the
		// pruner for the retention (pruneLanes).
		{&st.circuitOpen, `UPDATE lanes SET failures = ?3, circuit = 'open', cool = ?4, circuit_at = MAX(circuit_at, ?6), paused_until = MAX(paused_until, ?5),
			pause_reason = CASE WHEN ?5 >= paused_until THEN 'circuit_open' ELSE pause_reason END,
			ready_at = MAX(ready_at, ?5) WHERE route = ?1 AND lane = ?2`},
		// A circuit's pause ends with it; a lane parked by a pause that
		// ended is unparked, and the next claim parks it again if need be.
		{&st.circuitClose, `UPDATE lanes SET failures = 0, circuit = '', cool = 0,
			ready_at = CASE WHEN pause_reason LIKE 'circuit%' THEN 0 ELSE ready_at END,
			paused_until = CASE WHEN pause_reason LIKE 'circuit%' THEN 0 ELSE paused_until END,
			pause_reason = CASE WHEN pause_reason LIKE 'circuit%' THEN '' ELSE pause_reason END
			WHERE route = ?1 AND lane = ?2`},
		{&st.circuitCount, `UPDATE lanes SET failures = ?3, circuit_at = MAX(circuit_at, ?4) WHERE route = ?1 AND lane = ?2`},
		// A pause never shortens the one in force; the longer one's reason stays.
		{&st.pauseLane, `UPDATE lanes SET paused_until = MAX(paused_until, ?3),
				pause_reason = CASE WHEN ?3 >= paused_until THEN ?4 ELSE pause_reason END,
				ready_at = MAX(ready_at, ?3)
			WHERE route = ?1 AND lane = ?2`},
		{&st.insertRoom, `INSERT INTO rooms (` + roomCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tenant, name) DO NOTHING`},
		{&st.roomRevision, `SELECT revision FROM rooms WHERE tenant = ? AND name = ?`},
		{&st.bumpRoom, `UPDATE rooms SET revision = revision + 1 WHERE tenant = ? AND name = ?`},
		{&st.deleteRoom, `DELETE FROM rooms WHERE tenant = ? AND name = ?`},
		{&st.insertSubscription, `INSERT INTO subscriptions (` + subCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.roomSubscriptions, `SELECT id FROM subscriptions INDEXED BY subscriptions_room WHERE tenant = ? AND room = ?`},
		{&st.subRoom, `SELECT room FROM subscriptions WHERE id = ? AND tenant = ?`},
		{&st.subscriptionExists, `SELECT EXISTS (SELECT 1 FROM subscriptions WHERE id = ?)`},
		{&st.deleteSubscription, `DELETE FROM subscriptions WHERE id = ?`},
		// ?1 is the room's route, ?2 the subscription's id.
		{&st.activeDeliveries, `SELECT id, status FROM messages INDEXED BY messages_delivery
			WHERE route = ?1 AND target = ?2 AND route >= 'room:' AND route < 'room;' AND ` + activeSQL},
		{&st.insertRoomEvt, `INSERT INTO room_events (` + roomEventCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.insertSession, `INSERT INTO sessions (` + sessionCols + `) VALUES (?, ?, ?, ?, ?, ?, ?)`},
		{&st.endedSessions, `DELETE FROM sessions WHERE expires <= ?`},
		{&st.countSessions, `SELECT COUNT(*) FROM sessions WHERE tenant = ?`},
		// ?1 the tenant, ?2 how many of its least recently used to delete.
		{&st.evictSessions, `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions INDEXED BY sessions_tenant
			WHERE tenant = ?1 ORDER BY used, id LIMIT CAST(?2 AS INTEGER))`},
		// ?1 the id, ?2 used, ?3 expires.
		{&st.touchSession, `UPDATE sessions SET used = ?2, expires = ?3 WHERE id = ?1 AND expires > ?2`},
		{&st.deleteSession, `DELETE FROM sessions WHERE id = ?`},
		// ?1 now, ?2 the lease's end, ?3 the lease, ?4 the timeline
		// entry's tail, ?5 the route, ?6 the target, ?7 the limit.
		{&st.pull, `UPDATE messages SET
				status = 'SENT_TO_NS', attempt = attempt + 1, updated_at = ?1, deadline = ?2,
				lease = ?3, seq = seq + 1, timeline = timeline || (attempt + 1) || ?4
			WHERE id IN (SELECT id FROM messages INDEXED BY messages_pull
				WHERE status = 'QUEUED' AND gated = 2 AND route = +?5 AND target = +?6 AND due_at <= ?1
					AND (expires_at = 0 OR expires_at > ?1)
				ORDER BY priority DESC, id LIMIT CAST(?7 AS INTEGER))
			RETURNING ` + msgCols},
		{&st.tenantBucket, `SELECT tokens, tokens_at FROM tenant_buckets WHERE route = ? AND tenant = ?`},
		{&st.saveTenantBucket, `INSERT INTO tenant_buckets (route, tenant, tokens, tokens_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (route, tenant) DO UPDATE SET tokens = excluded.tokens, tokens_at = excluded.tokens_at`},
		{&st.routeBucket, `SELECT tokens, tokens_at FROM route_buckets WHERE route = ?`},
		{&st.saveRouteBucket, `INSERT INTO route_buckets (route, tokens, tokens_at) VALUES (?, ?, ?)
			ON CONFLICT (route) DO UPDATE SET tokens = excluded.tokens, tokens_at = excluded.tokens_at`},
	}
}

// prepareRead prepares the read pool's statements.
func prepareRead(db *sql.DB) (*readStmts, error) {
	st := &readStmts{}
	err := prepare(&st.all, db.Prepare, st.defs())
	return st, err
}

// defs lists the read pool's statements.
func (st *readStmts) defs() []stmtDef {
	return []stmtDef{
		{&st.get, `SELECT ` + msgCols + `, timeline FROM messages WHERE id = ?`},
		// ?1 is a JSON array of ids.
		{&st.byIDs, `SELECT ` + msgCols + ` FROM messages WHERE id IN (SELECT value FROM json_each(?1))`},
		{&st.findExternal, `SELECT ` + msgCols + ` FROM messages INDEXED BY messages_external
			WHERE route = ? AND external_id = ? AND external_id != '' AND ` + activeSQL + `
			LIMIT 1`},
		// Every active message is in one of ready, lane, pull, retry and inflight.
		{&st.activeRoutes, `SELECT route FROM messages INDEXED BY messages_ready WHERE status = 'QUEUED' AND gated = 0
			UNION SELECT route FROM messages INDEXED BY messages_lane WHERE status = 'QUEUED' AND gated = 1
			UNION SELECT route FROM messages INDEXED BY messages_kept WHERE status = 'QUEUED' AND gated = 3
			UNION SELECT route FROM messages INDEXED BY messages_pull WHERE status = 'QUEUED' AND gated = 2
			UNION SELECT route FROM messages INDEXED BY messages_retry WHERE status = 'TO_RETRY'
			UNION SELECT route FROM messages INDEXED BY messages_inflight WHERE ` + inFlightSQL + `
			ORDER BY route`},
		{&st.counts, `SELECT tenant, route, status, COUNT(*),
				CASE WHEN ` + waitingSQL + ` THEN MIN(created_at) ELSE 0 END FROM messages
			GROUP BY tenant, route, status ORDER BY tenant, route, status`},
		// Each arm walks its own partial index; each is bounded by the limit.
		{&st.overdue, `SELECT ` + msgCols + ` FROM messages WHERE id IN (
				SELECT id FROM (SELECT id FROM messages INDEXED BY messages_inflight
					WHERE ` + inFlightSQL + ` AND deadline > 0 AND deadline <= ?1 LIMIT CAST(?2 AS INTEGER))
				UNION SELECT id FROM (SELECT id FROM messages INDEXED BY messages_expiry
					WHERE expires_at > 0 AND ` + activeSQL + ` AND expires_at <= ?1 LIMIT CAST(?2 AS INTEGER)))
			LIMIT CAST(?2 AS INTEGER)`},
		{&st.duePolls, `SELECT ` + msgCols + ` FROM messages INDEXED BY messages_poll
			WHERE due_at > 0 AND status = 'DELIVERED_TO_NS' AND due_at <= ?1 ORDER BY due_at LIMIT CAST(?2 AS INTEGER)`},
		{&st.laneCircuit, `SELECT failures, circuit FROM lanes WHERE route = ? AND lane = ?`},
		{&st.lane, `SELECT next_at, tokens, tokens_at, paused_until, pause_reason, circuit, failures FROM lanes WHERE route = ? AND lane = ?`},
		{&st.laneQueued, `SELECT COUNT(*) FROM messages INDEXED BY messages_lane
			WHERE status = 'QUEUED' AND gated = 1 AND route = ? AND lane = ?`},
		// A kept route's lane: its messages are in no index by lane.
		{&st.keptLaneQueued, `SELECT COUNT(*) FROM messages INDEXED BY messages_kept
			WHERE status = 'QUEUED' AND gated = 3 AND route = +? AND lane = +?`},
		// The messages in flight of one lane, or of every lane of a route
		// ('' for every route): no index orders them by lane, so each walks
		// every message in flight.
		{&st.laneInFlight, `SELECT id FROM messages INDEXED BY messages_inflight
			WHERE (gated = 1 OR gated = 3) AND ` + inFlightSQL + ` AND route = +? AND lane = +? ORDER BY id`},
		{&st.lanesInFlight, `SELECT route, lane, id FROM messages INDEXED BY messages_inflight
			WHERE (gated = 1 OR gated = 3) AND ` + inFlightSQL + ` AND (?1 = '' OR route = ?1) ORDER BY id`},
		{&st.tenantLanesInFlight, `SELECT route, lane, id FROM messages INDEXED BY messages_inflight
			WHERE (gated = 1 OR gated = 3) AND ` + inFlightSQL + ` AND (?1 = '' OR route = ?1) AND tenant = ?2 ORDER BY id`},
		{&st.tenantBucket, `SELECT tokens, tokens_at FROM tenant_buckets WHERE route = ? AND tenant = ?`},
		{&st.routeBucket, `SELECT tokens, tokens_at FROM route_buckets WHERE route = ?`},
		{&st.inboundByCorrelation, `SELECT ` + inboxCols + ` FROM inbox INDEXED BY inbox_correlation
			WHERE route = ? AND correlation = ? AND correlation != ''`},
		{&st.room, `SELECT ` + roomCols + `, ` + roomSubsSQL + ` FROM rooms WHERE tenant = ? AND name = ?`},
		{&st.rooms, `SELECT ` + roomCols + `, ` + roomSubsSQL + ` FROM rooms WHERE tenant = +? ORDER BY name`},
		{&st.pullQueue, `SELECT COUNT(*) FROM messages INDEXED BY messages_pull
			WHERE status = 'QUEUED' AND gated = 2 AND route = +? AND target = +?`},
		{&st.subscription, `SELECT ` + subCols + ` FROM subscriptions WHERE id = ?`},
		{&st.subscriptions, `SELECT ` + subCols + ` FROM subscriptions INDEXED BY subscriptions_room
			WHERE tenant = +? AND room = +? ORDER BY id`},
		{&st.roomEvent, `SELECT ` + roomEventCols + ` FROM room_events WHERE id = ?`},
		{&st.session, `SELECT ` + sessionCols + ` FROM sessions WHERE id = ?`},
		{&st.firstActive, `SELECT id FROM messages INDEXED BY messages_target
			WHERE ordered = 1 AND ` + activeSQL + ` AND route = +? AND target = +? ORDER BY id LIMIT 1`},
		// Busiest first: queued plus in flight, counted from the messages
		// (the kept routes' lanes keep theirs in the writer's memory), with
		// each lane's queued count.
		{&st.busiestLanes, `SELECT route, lane, SUM(q) FROM (
				SELECT route, lane, COUNT(*) AS q, COUNT(*) AS n FROM messages INDEXED BY messages_lane
					WHERE status = 'QUEUED' AND gated = 1 AND (?1 = '' OR route = ?1) GROUP BY route, lane
				UNION ALL SELECT route, lane, COUNT(*), COUNT(*) FROM messages INDEXED BY messages_kept
					WHERE status = 'QUEUED' AND gated = 3 AND (?1 = '' OR route = ?1) GROUP BY route, lane
				UNION ALL SELECT route, lane, 0, COUNT(*) FROM messages INDEXED BY messages_inflight
					WHERE (gated = 1 OR gated = 3) AND ` + inFlightSQL + ` AND (?1 = '' OR route = ?1) GROUP BY route, lane
				UNION ALL SELECT route, lane, 0, 0 FROM lanes WHERE ?1 = '' OR route = ?1)
			GROUP BY route, lane ORDER BY SUM(n) DESC, route, lane LIMIT CAST(?2 AS INTEGER)`},
		// The same of one tenant's messages (?3): the lanes that hold
		// some, counting them only. Each message the indexes hold is read
		// for its tenant.
		{&st.tenantLanes, `SELECT route, lane, SUM(q) FROM (
				SELECT route, lane, COUNT(*) AS q, COUNT(*) AS n FROM messages INDEXED BY messages_lane
					WHERE status = 'QUEUED' AND gated = 1 AND (?1 = '' OR route = ?1) AND tenant = ?3 GROUP BY route, lane
				UNION ALL SELECT route, lane, COUNT(*), COUNT(*) FROM messages INDEXED BY messages_kept
					WHERE status = 'QUEUED' AND gated = 3 AND (?1 = '' OR route = ?1) AND tenant = ?3 GROUP BY route, lane
				UNION ALL SELECT route, lane, 0, COUNT(*) FROM messages INDEXED BY messages_inflight
					WHERE (gated = 1 OR gated = 3) AND ` + inFlightSQL + ` AND (?1 = '' OR route = ?1) AND tenant = ?3 GROUP BY route, lane)
			GROUP BY route, lane ORDER BY SUM(n) DESC, route, lane LIMIT CAST(?2 AS INTEGER)`},
	}
}

// stmtDef is a statement to prepare and where to put it.
type stmtDef struct {
	dst   **sql.Stmt
	query string
}

// prepare prepares every def with prep and lists them in all. On failure it
// closes those already prepared.
func prepare(all *[]*sql.Stmt, prep func(string) (*sql.Stmt, error), defs []stmtDef) error {
	for _, d := range defs {
		s, err := prep(d.query)
		if err != nil {
			closeAll(*all)
			return err
		}
		*d.dst = s
		*all = append(*all, s)
	}
	return nil
}

// cached returns the statement of *cache for n, preparing sqlFor(n) on conn
// the first time.
func (st *writeStmts) cached(conn *sql.Conn, cache *map[int]*sql.Stmt, n int, sqlFor func(int) string) (*sql.Stmt, error) {
	if s, ok := (*cache)[n]; ok {
		return s, nil
	}
	s, err := conn.PrepareContext(context.Background(), sqlFor(n))
	if err != nil {
		return nil, err
	}
	if *cache == nil {
		*cache = map[int]*sql.Stmt{}
	}
	(*cache)[n] = s
	st.all = append(st.all, s)
	return s, nil
}

func (st *writeStmts) close() error { return closeAll(st.all) }
func (st *readStmts) close() error  { return closeAll(st.all) }

// closeAll closes every statement of all.
func closeAll(all []*sql.Stmt) error {
	var errs []error
	for _, s := range all {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
