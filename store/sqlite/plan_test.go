package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlans checks that no statement but Counts scans the messages table
// and that Claim walks its index instead of sorting.
func TestPlans(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ws, rs := &writeStmts{}, &readStmts{}
	var claim *sql.Stmt // stands for the claim statements, prepared on use
	defs := append(ws.defs(), rs.defs()...)
	var group *sql.Stmt // stands for the grouped transition statements, the largest: SQLite plans a large VALUES differently
	defs = append(defs, stmtDef{&claim, claimSQL(0, false, false)}, stmtDef{&claim, claimSQL(2, false, false)}, stmtDef{&claim, claimSQL(2, true, false)}, stmtDef{&claim, claimSQL(2, false, true)},
		stmtDef{&group, transitionsSQL(maxGroup)})
	for _, d := range defs {
		if d.dst == &ws.begin || d.dst == &ws.commit || d.dst == &ws.rollback || d.dst == &rs.counts {
			continue
		}
		plan := explain(t, s, d.query)
		t.Logf("%s\n%s", d.query, plan)
		if strings.Contains(plan+"\n", "SCAN messages\n") {
			t.Errorf("full scan of messages:\n%s\n%s", d.query, plan)
		}
		if d.dst == &group && !strings.Contains(plan, "SEARCH messages USING PRIMARY KEY (id=?)") {
			t.Errorf("grouped transitions do not look messages up by id:\n%s", plan)
		}
		if d.dst == &claim && strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("claim sorts:\n%s", plan)
		}
		// A parameter in a unary plus (see writeStmts.defs) must leave
		// the plan as it is without.
		if bare := strings.ReplaceAll(d.query, "+?", "?"); bare != d.query {
			if want := explain(t, s, bare); plan != want {
				t.Errorf("the unary plus changes the plan of\n%s\n%s\nwithout it:\n%s", d.query, plan, want)
			}
		}
	}
}

// explain returns the query plan of q, one step a line. The plan needs no
// parameter values, but the driver wants one per parameter: they are
// replaced by literals.
func explain(t *testing.T, s *Store, q string) string {
	t.Helper()
	q = strings.NewReplacer("?10", "1", "?11", "'x'", "?12", "1", "?13", "1", "?14", "'x'").Replace(q)
	for _, p := range []string{"?1", "?2", "?3", "?4", "?5", "?6", "?7", "?8", "?9", "?"} {
		q = strings.ReplaceAll(q, p, "1")
	}
	rows, err := s.read.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, detail)
	}
	return strings.Join(steps, "\n")
}
