package pgstore

import (
	"fmt"
	"time"
)

// Every lease and TTL is checked, and every expiry set, with
// clock_timestamp(): the database's clock at the moment of the check. Not
// now(), which is the start of the transaction, so that inside a handler's
// transaction that began before its lease ran out a check made after
// would still pass; and never the client's clock, which differs from one
// process to the next. Durations travel as whole microseconds.

// schema is what Migrate creates; %[1]s is the table, %[2]s its index.
const schema = `CREATE TABLE IF NOT EXISTS %[1]s (
	key         text        PRIMARY KEY,
	token       text        NOT NULL,
	fingerprint bytea       NOT NULL,
	result      bytea,
	expires_at  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS %[2]s ON %[1]s (expires_at)`

// queries are the statements of one Store, for its table.
type queries struct {
	claim, claimed            string
	renew                     string
	complete, completed       string
	release, held             string
	completeTx, abortTx, reap string
}

func newQueries(table string) queries {
	q := func(format string) string { return fmt.Sprintf(format, table) }
	return queries{
		// A key is absent, for a claim, when no row is live: a claim whose
		// lease ran out or a result whose TTL did is taken over in place.
		claim: q(`INSERT INTO %s AS k (key, token, fingerprint, expires_at)
VALUES ($1, $2, $3, clock_timestamp() + $4::bigint * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE
SET token = excluded.token, fingerprint = excluded.fingerprint, result = NULL, expires_at = excluded.expires_at
WHERE k.expires_at <= clock_timestamp()`),
		// What holds a live key, when the claim took nothing: asked only
		// then, so that a fresh key costs one statement and a replay two,
		// and neither writes.
		claimed: q(`SELECT token, fingerprint, result IS NOT NULL, coalesce(result, '')
FROM %s WHERE key = $1 AND expires_at > clock_timestamp()`),
		renew: q(`UPDATE %s SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
WHERE key = $1 AND token = $2 AND result IS NULL AND expires_at > clock_timestamp()`),
		// Saved in place of the token's own claim, expired or not, or of
		// nothing live: the lease ran out and nobody claimed the key since.
		complete: q(`INSERT INTO %s AS k (key, token, fingerprint, result, expires_at)
VALUES ($1, $2, coalesce($3::bytea, ''), coalesce($4::bytea, ''), clock_timestamp() + $5::bigint * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE
SET token = excluded.token, fingerprint = excluded.fingerprint, result = excluded.result, expires_at = excluded.expires_at
WHERE k.expires_at <= clock_timestamp() OR (k.token = excluded.token AND k.result IS NULL)`),
		completed: q(`SELECT token = $2 AND result IS NOT NULL FROM %s WHERE key = $1 AND expires_at > clock_timestamp()`),
		release:   q(`DELETE FROM %s WHERE key = $1 AND token = $2 AND result IS NULL`),
		held:      q(`SELECT EXISTS (SELECT FROM %s WHERE key = $1 AND expires_at > clock_timestamp())`),
		// In the handler's transaction: only the token's own live claim.
		// The UPDATE locks the row until the transaction ends, so that a
		// claim that would take the key over once the lease runs out waits
		// for the commit, and then finds the result.
		completeTx: q(`UPDATE %s SET result = $3, expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
WHERE key = $1 AND token = $2 AND result IS NULL AND expires_at > clock_timestamp()`),
		// Fails the handler's transaction, so that even a handler that
		// ignores CompleteTx's error cannot commit: its COMMIT rolls back.
		abortTx: `DO $$ BEGIN RAISE EXCEPTION 'pgstore: the idempotency lease is no longer this request''s: this transaction cannot commit' USING ERRCODE = 'P0001'; END $$`,
		// Bounded, oldest first, on the expires_at index; rows another
		// transaction has locked are left for the next run, and the outer
		// condition is checked again on the rows locked.
		reap: q(`DELETE FROM %[1]s WHERE key IN (
	SELECT key FROM %[1]s WHERE expires_at <= clock_timestamp() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
AND expires_at <= clock_timestamp()`),
	}
}

// micros is d in whole microseconds, rounded up so that a lease is never
// shorter than asked.
func micros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}
