package sqlite

import (
	"context"
	"database/sql"
)

// migrateSubscriptionSecret adds the secret column to the subscriptions
// of a database written before subscriptions kept their own signing
// secret (schema.sql has it for new ones); their rows keep secret_env.
func migrateSubscriptionSecret(ctx context.Context, conn *sql.Conn) error {
	var tables, have int
	err := conn.QueryRowContext(ctx, `SELECT
			(SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'subscriptions'),
			(SELECT COUNT(*) FROM pragma_table_info('subscriptions') WHERE name = 'secret')`).Scan(&tables, &have)
	if err != nil || tables == 0 || have > 0 {
		return err
	}
	_, err = conn.ExecContext(ctx, `ALTER TABLE subscriptions ADD COLUMN secret TEXT NOT NULL DEFAULT ''`)
	return err
}
