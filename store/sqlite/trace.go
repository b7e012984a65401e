package sqlite

import (
	"context"
	"database/sql"
)

// migrateTraceParent adds the trace_parent column to the messages of a
// database written before it (schema.sql has it for new ones). The column
// then comes last, after the bulky ones: reading it costs a row whose
// timeline overflows its page a little more, which only migrated rows pay.
func migrateTraceParent(ctx context.Context, conn *sql.Conn) error {
	var have int
	err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = 'trace_parent'`).Scan(&have)
	if err != nil || have > 0 {
		return err
	}
	_, err = conn.ExecContext(ctx, `ALTER TABLE messages ADD COLUMN trace_parent TEXT NOT NULL DEFAULT ''`)
	return err
}
