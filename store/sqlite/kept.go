package sqlite

import (
	"cmp"
	"database/sql"
	"errors"
	"slices"
	"strings"

	"github.com/heraldmq/herald"
	"github.com/heraldmq/herald/internal/unixms"
)

// A kept route is a gated route whose concurrency its dispatching node
// keeps (Admission.ClaimAhead) and that is neither ordered nor limited over
// time (the engine sets ClaimAhead on no such route). Its lanes need no
// state but their flights and owner to be claimed, and the writer keeps
// those in memory, with each lane's count of QUEUED messages, rather than
// in the lanes' table: this process is the only one that writes the
// database (lock_unix.go), and SetAdmission counts them again from the
// messages. Its QUEUED messages (gated = gatedKept) are in one index in
// claim order across lanes, messages_kept, and in no index by lane: a
// claim walks them as it walks ungated ones, each message taken while its
// lane has room. No lane's row is read or written per claim or flight, and
// a claim takes rows that sit next to each other in the table and in the
// index.
//
// The walk passes over the messages of lanes at their bound. When too many
// of them hold it up (a flooded lane), the claim seeks the messages of the
// lanes that have room and QUEUED messages from where each lane's next
// message can be (keptLane.low), so that no lane waits behind another.

// isKept reports whether a gated route with admission a is kept.
func isKept(a herald.Admission) bool { return a.ClaimAhead > 0 && !a.Ordered && !a.Timed() }

const (
	// keptSkips is how many messages of lanes that admit nothing a claim's
	// walk passes over before it seeks the other lanes' messages.
	keptSkips = 64
	// keptSeeks bounds the lanes a claim seeks, keptWindow the index
	// entries a seek reads of one priority and keptBands the priorities it
	// reads: a claim's cost stays bounded however deep a flooded lane is. A
	// window that holds no message of its lane moves the lane's low past
	// it, so the next claims read on from there.
	keptSeeks  = 16
	keptWindow = 4096
	keptBands  = 4
)

// keptKey is a message's place in claim order: priority, then id.
type keptKey struct {
	prio int64
	id   string
}

// compare orders k and o in claim order: negative when k comes first.
func (k keptKey) compare(o keptKey) int {
	return cmp.Or(cmp.Compare(o.prio, k.prio), strings.Compare(k.id, o.id))
}

// before reports whether k comes before o in claim order.
func (k keptKey) before(o keptKey) bool { return k.compare(o) < 0 }

// keptLane is what the writer keeps of a kept route's lane that has
// messages in flight or QUEUED.
type keptLane struct {
	inflight int
	queued   int
	owner    string  // the node whose claims took the messages in flight
	low      keptKey // while queued > 0: no QUEUED message, due or not, comes before it
	quiet    int64   // a seek before this time (unix ms) finds nothing due: see seekLane
}

// keptLanes is the writer's memory of the kept routes' lanes. The changes
// of the open transaction are undone if it rolls back, so that the memory
// always matches what is committed plus what the open transaction wrote.
type keptLanes struct {
	lanes map[herald.LaneRef]keptLane
	// orphans are the messages in flight, by id, of the lanes taken over
	// from a node whose heartbeat lapsed (takeOver), with their lane: they
	// hold no slot of it, and their end frees none.
	orphans map[string]herald.LaneRef
	// orphaned is set when orphans changed since they were last
	// published for the reads (publishOrphans).
	orphaned bool
	// recounted is set by the first recount: the flights it finds before
	// are a process's before this one.
	recounted bool
	undo      []keptChange
}

// keptChange is what one change of the writer's memory replaced: a lane's
// state; or when all is set, the whole memory (a recount); or when restore
// is set, what restore puts back.
type keptChange struct {
	lane    herald.LaneRef
	was     keptLane
	all     map[herald.LaneRef]keptLane
	restore func()
}

func newKeptLanes() *keptLanes {
	return &keptLanes{lanes: map[herald.LaneRef]keptLane{}}
}

// set makes v lane l's state; a lane with no message is forgotten.
func (k *keptLanes) set(l herald.LaneRef, v keptLane) {
	k.undo = append(k.undo, keptChange{lane: l, was: k.lanes[l]})
	if v.inflight <= 0 && v.queued <= 0 {
		delete(k.lanes, l)
		return
	}
	k.lanes[l] = v
}

// changed records what statements did to lane l's messages: flights
// started (or ended, negative), QUEUED messages added (or taken away), and
// when requeued is set, the first in claim order of those that became
// QUEUED (the count may not show it: another may have left QUEUED). A
// message that became QUEUED may be due: the lane is sought again.
func (k *keptLanes) changed(l herald.LaneRef, flights, queued int, requeued *keptKey) {
	v := k.lanes[l]
	if requeued != nil && (v.queued <= 0 || requeued.before(v.low)) {
		v.low = *requeued
	}
	if queued > 0 || requeued != nil {
		v.quiet = 0
	}
	v.inflight += flights
	v.queued += queued
	k.set(l, v)
}

// claimed records n QUEUED messages of lane l claimed by node. The lane's
// low stays: the walk passes over messages not due yet.
func (k *keptLanes) claimed(l herald.LaneRef, n int, node string) {
	v := k.lanes[l]
	v.inflight, v.queued, v.owner = v.inflight+n, v.queued-n, node
	k.set(l, v)
}

// passed records that lane l has no QUEUED message before key.
func (k *keptLanes) passed(l herald.LaneRef, key keptKey) {
	if v := k.lanes[l]; v.low.before(key) {
		v.low = key
		k.set(l, v)
	}
}

// quieted records that seeks of lane l find nothing due before until.
func (k *keptLanes) quieted(l herald.LaneRef, until int64) {
	if v, ok := k.lanes[l]; ok && v.quiet != until {
		v.quiet = until
		k.set(l, v)
	}
}

// orphan makes message id, in flight on lane l, an orphan, and reports
// whether it was not one already.
func (k *keptLanes) orphan(id string, l herald.LaneRef) bool {
	if _, ok := k.orphans[id]; ok {
		return false
	}
	if k.orphans == nil {
		k.orphans = make(map[string]herald.LaneRef)
	}
	k.orphans[id], k.orphaned = l, true
	k.onRollBack(func() { delete(k.orphans, id) })
	return true
}

// orphanLands reports whether message id is an orphan, whose flight ends
// now, and forgets it.
func (k *keptLanes) orphanLands(id string) bool {
	l, ok := k.orphans[id]
	if !ok {
		return false
	}
	delete(k.orphans, id)
	k.orphaned = true
	k.onRollBack(func() { k.orphans[id] = l })
	return true
}

// orphansOf counts the orphans of each lane.
func (k *keptLanes) orphansOf() map[herald.LaneRef]int {
	n := make(map[herald.LaneRef]int)
	for _, l := range k.orphans {
		n[l]++
	}
	return n
}

// replace makes lanes the whole memory.
func (k *keptLanes) replace(lanes map[herald.LaneRef]keptLane) {
	k.undo = append(k.undo, keptChange{all: k.lanes})
	k.lanes = lanes
}

// onRollBack has restore run if the open transaction rolls back, in turn
// with the memory's changes: for the writer's other state.
func (k *keptLanes) onRollBack(restore func()) {
	k.undo = append(k.undo, keptChange{restore: restore})
}

// committed forgets the changes of the transaction that just committed.
func (k *keptLanes) committed() { k.undo = k.undo[:0] }

// rolledBack undoes the changes of the transaction that just rolled back.
func (k *keptLanes) rolledBack() {
	for i := len(k.undo) - 1; i >= 0; i-- {
		c := k.undo[i]
		switch {
		case c.restore != nil:
			c.restore()
		case c.all != nil:
			k.lanes = c.all
		case c.was.inflight <= 0 && c.was.queued <= 0:
			delete(k.lanes, c.lane)
		default:
			k.lanes[c.lane] = c.was
		}
	}
	k.undo = k.undo[:0]
}

// recount makes the memory what the kept routes' messages say, keeping the
// owner of each lane still in flight, and the orphans out of its count. A
// lane's low is the start of its first message's priority. The first
// recount of the process makes every flight an orphan: their node was a
// process before this one, whose calls ended with it.
func (tx *wtx) recount() error {
	type count struct {
		lane herald.LaneRef
		n    int
		prio int64
	}
	scan := func(sc rowScanner) (count, error) {
		var c count
		return c, sc.Scan(&c.lane.Route, &c.lane.Lane, &c.n, &c.prio)
	}
	rows, err := tx.st.keptFlights.Query()
	flying, err := collect(rows, err, scan)
	if err != nil {
		return err
	}
	rows, err = tx.st.keptQueued.Query()
	queued, err := collect(rows, err, scan)
	if err != nil {
		return err
	}
	if !tx.kept.recounted {
		for _, c := range flying {
			if _, err := tx.takeOver(c.lane); err != nil {
				return err
			}
		}
		tx.kept.recounted = true
		tx.kept.onRollBack(func() { tx.kept.recounted = false })
	}
	lanes := make(map[herald.LaneRef]keptLane, len(flying)+len(queued))
	orphans := tx.kept.orphansOf()
	for _, c := range flying {
		if n := c.n - orphans[c.lane]; n > 0 {
			lanes[c.lane] = keptLane{inflight: n, owner: tx.kept.lanes[c.lane].owner}
		}
	}
	for _, c := range queued {
		v := lanes[c.lane]
		v.queued, v.low = c.n, keptKey{prio: c.prio}
		lanes[c.lane] = v
	}
	tx.kept.replace(lanes)
	return nil
}

// keptHold is a lane of a kept route that a claim passes over (parked: a
// pause or an open circuit's cool-down) or takes one message of (a
// circuit's probe).
type keptHold struct {
	parked, probe bool
}

// keptPick is one claim's walk of the kept routes' messages.
type keptPick struct {
	tx    *wtx
	c     herald.Claim
	now   int64
	holds map[herald.LaneRef]keptHold
	took  map[herald.LaneRef]int     // by this claim
	last  map[herald.LaneRef]keptKey // the last message this claim took of each lane
}

// pickKept returns the ids of up to limit QUEUED messages of kept routes
// that their lanes admit at c.Now, in claim order across lanes as within
// one, and records them in the lanes' memory (a circuit's probe in its
// lane's row). It runs after unparkLanes.
func (tx *wtx) pickKept(c herald.Claim, limit int) ([]string, error) {
	if limit <= 0 || len(tx.kept.lanes) == 0 {
		return nil, nil
	}
	p := &keptPick{tx: tx, c: c, now: unixms.From(c.Now),
		took: map[herald.LaneRef]int{}, last: map[herald.LaneRef]keptKey{}}
	if err := p.readHolds(); err != nil {
		return nil, err
	}
	picked, held, err := p.walk(limit)
	if err != nil {
		return nil, err
	}
	if held && len(picked) < limit {
		more, err := p.seek(limit - len(picked))
		if err != nil {
			return nil, err
		}
		picked = append(picked, more...)
	}
	for l, n := range p.took {
		tx.kept.claimed(l, n, c.Node)
		if p.holds[l].probe { // no other message until the probe's answer, or the cool-down
			cool := tx.rules[l.Route].Circuit.CoolDown.Milliseconds()
			if _, err := tx.st.laneProbe.Exec(l.Route, l.Lane, p.now+cool); err != nil {
				return nil, err
			}
		}
	}
	return picked, nil
}

// readHolds reads the kept routes' lanes that are parked or have a
// circuit.
func (p *keptPick) readHolds() error {
	rows, err := p.tx.st.keptHolds.Query()
	type hold struct {
		lane herald.LaneRef
		keptHold
	}
	holds, err := collect(rows, err, func(sc rowScanner) (hold, error) {
		var h hold
		return h, sc.Scan(&h.lane.Route, &h.lane.Lane, &h.parked, &h.probe)
	})
	if err != nil {
		return err
	}
	p.holds = make(map[herald.LaneRef]keptHold, len(holds))
	for _, h := range holds {
		p.holds[h.lane] = h.keptHold
	}
	return nil
}

// room returns how many more messages of lane l the claim may take. A
// lane whose node's heartbeat lapsed it takes over first.
func (p *keptPick) room(l herald.LaneRef) (int, error) {
	a := p.tx.rules[l.Route]
	if !isKept(a) || p.c.Holds(l.Route, l.Lane) {
		return 0, nil
	}
	v := p.tx.kept.lanes[l]
	if v.inflight > 0 && v.owner != p.c.Node {
		if p.tx.beats.alive(v.owner, p.now) {
			return 0, nil // another node dispatches it
		}
		if err := p.tx.takeOverKept(l); err != nil {
			return 0, err
		}
		v = p.tx.kept.lanes[l]
	}
	room := p.c.KeptBound(a, l) - v.inflight - p.took[l]
	switch h := p.holds[l]; {
	case h.parked:
		return 0, nil
	case h.probe && a.Circuit.Failures > 0: // the cool-down is over: one probe goes
		room = min(room, 1-p.took[l])
	}
	return room, nil
}

// take records that the claim takes the message at key of lane l.
func (p *keptPick) take(l herald.LaneRef, key keptKey) {
	p.took[l]++
	p.last[l] = key
}

// keptRow is a QUEUED message of a kept route as the walk reads it.
type keptRow struct {
	key  keptKey
	lane herald.LaneRef
}

func scanKeptRow(sc rowScanner) (keptRow, error) {
	var r keptRow
	return r, sc.Scan(&r.key.id, &r.key.prio, &r.lane.Route, &r.lane.Lane)
}

// walk takes messages in claim order, each while its lane has room. It
// reports held when it stopped after passing over keptSkips messages.
func (p *keptPick) walk(limit int) (picked []string, held bool, err error) {
	rows, err := p.tx.st.keptWalk.Query(p.now, limit+keptSkips)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	skipped := 0
	for len(picked) < limit && rows.Next() {
		r, err := scanKeptRow(rows)
		if err != nil {
			return nil, false, err
		}
		room, err := p.room(r.lane)
		if err != nil {
			return nil, false, err
		}
		if room <= 0 {
			if skipped++; skipped == keptSkips {
				return picked, true, rows.Close()
			}
			continue
		}
		p.take(r.lane, r.key)
		picked = append(picked, r.key.id)
	}
	return picked, false, rows.Err()
}

// seek takes up to limit messages of the lanes that have room and QUEUED
// messages the walk did not reach, in claim order across those lanes: it
// seeks at most keptSeeks lanes, the one whose next message can come
// first first, each read from its low, or past what the walk took of it;
// it stops once the lanes left cannot come before the limit messages it
// found. A lane whose last seek found nothing due waits until one may be
// (quiet).
func (p *keptPick) seek(limit int) ([]string, error) {
	type lane struct {
		ref  herald.LaneRef
		from keptKey
		low  bool // from is the lane's low
	}
	var lanes []lane
	for l, v := range p.tx.kept.lanes {
		if v.queued-p.took[l] <= 0 || v.quiet > p.now {
			continue
		}
		room, err := p.room(l)
		if err != nil {
			return nil, err
		}
		if room <= 0 {
			continue
		}
		from, low := v.low, true
		if last, ok := p.last[l]; ok && !last.before(from) {
			from, low = keptKey{last.prio, last.id + "\x00"}, false // just past it
		}
		lanes = append(lanes, lane{l, from, low})
	}
	slices.SortFunc(lanes, func(a, b lane) int {
		return cmp.Or(a.from.compare(b.from), strings.Compare(a.ref.Route, b.ref.Route), strings.Compare(a.ref.Lane, b.ref.Lane))
	})
	type candidate struct {
		lane herald.LaneRef
		key  keptKey
	}
	var found []candidate // in claim order
	for _, l := range lanes[:min(len(lanes), keptSeeks)] {
		if len(found) >= limit && found[limit-1].key.before(l.from) {
			break // every message of this lane and the next comes after
		}
		room, err := p.room(l.ref)
		if err != nil {
			return nil, err
		}
		keys, err := p.seekLane(l.ref, l.from, l.low, min(room, limit))
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			found = append(found, candidate{l.ref, k})
		}
		slices.SortFunc(found, func(a, b candidate) int { return a.key.compare(b.key) })
	}
	var picked []string
	for _, c := range found[:min(len(found), limit)] {
		p.take(c.lane, c.key)
		picked = append(picked, c.key.id)
	}
	return picked, nil
}

// seekLane returns up to want due messages of lane l from key from on, in
// claim order: it reads keptWindow entries of from's priority, and of the
// next lower priority when it read all of that one, keptBands priorities
// at most. When the seek started at the lane's low (atLow) and a window
// holds no message of the lane, due or not, nor did the windows before it,
// the lane's low moves past it, so that the next claims read on from
// there. When it found messages of the lane but none due, the lane is
// quiet until the first of them is due.
func (p *keptPick) seekLane(l herald.LaneRef, from keptKey, atLow bool, want int) ([]keptKey, error) {
	var found []keptKey
	var due int64 // the earliest due_at of the lane's messages read, not due yet
	quiet := func() {
		if len(found) == 0 && due > 0 {
			p.tx.kept.quieted(l, due)
		}
	}
	for range keptBands {
		rows, err := p.tx.st.keptSeekBand.Query(from.prio, from.id, keptWindow, l.Route, l.Lane)
		type entry struct {
			key keptKey
			due int64
		}
		mine, err := collect(rows, err, func(sc rowScanner) (entry, error) {
			var e entry
			return e, sc.Scan(&e.key.id, &e.key.prio, &e.due)
		})
		if err != nil {
			return nil, err
		}
		for _, e := range mine {
			switch {
			case e.due > p.now:
				if due == 0 || e.due < due {
					due = e.due
				}
			case len(found) < want:
				found = append(found, e.key)
			}
		}
		if len(found) == want {
			return found, nil
		}
		passing := atLow && len(mine) == 0 // nothing of the lane from its low to the window's end
		atLow = passing
		var end keptKey // the window's last entry, when it is full
		err = p.tx.st.keptWindowEnd.QueryRow(from.prio, from.id, keptWindow-1).Scan(&end.id, &end.prio)
		if err == nil { // the priority goes on past the window
			if passing {
				p.tx.kept.passed(l, end)
			}
			quiet()
			return found, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		var next sql.NullInt64 // the next lower priority with a kept message
		if err := p.tx.st.keptNextBand.QueryRow(from.prio).Scan(&next); err != nil {
			return nil, err
		}
		if !next.Valid {
			quiet()
			return found, nil
		}
		if passing {
			p.tx.kept.passed(l, keptKey{prio: next.Int64})
		}
		from = keptKey{prio: next.Int64}
	}
	return found, nil
}

// takeOverKept takes kept lane l over from its node, whose heartbeat
// lapsed: its messages in flight become orphans, and it has no owner and
// no flight.
func (tx *wtx) takeOverKept(l herald.LaneRef) error {
	if _, err := tx.takeOver(l); err != nil {
		return err
	}
	v := tx.kept.lanes[l]
	v.inflight, v.owner = 0, ""
	tx.kept.set(l, v)
	return nil
}
