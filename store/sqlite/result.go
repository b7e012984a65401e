package sqlite

import (
	"context"
	"database/sql"
)

// migrateResult adds the result column to the messages of a database
// written before it (schema.sql has it for new ones), as
// migrateTraceParent adds trace_parent: last, after the bulky columns.
func migrateResult(ctx context.Context, conn *sql.Conn) error {
	var have int
	err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('messages') WHERE name = 'result'`).Scan(&have)
	if err != nil || have > 0 {
		return err
	}
	_, err = conn.ExecContext(ctx, `ALTER TABLE messages ADD COLUMN result TEXT NOT NULL DEFAULT ''`)
	return err
}
