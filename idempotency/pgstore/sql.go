package pgstore

import (
	"fmt"
	"strings"
	"time"
)

// Every lease and TTL is checked, and every expiry set, with
// clock_timestamp(): the database's clock at the moment of the check. Not
// now(), which is the start of the transaction, so that inside a handler's
// transaction that began before its lease ran out a check made after
// would still pass; and never the client's clock, which differs from one
// process to the next. Durations travel as whole microseconds.
//
// A claim's lease is in two rows: the key's own expires_at, set by the
// claim, and the lease row that each renewal writes, in a table of its
// own. A renewal never writes the key's row, which the handler's
// transaction updates in CompleteTx: under REPEATABLE READ or
// SERIALIZABLE an update of a row that another transaction changed after
// the snapshot is a serialization failure, so a renewal of the key's row
// would make every handler slower than a third of its lease fail.

// schema is what Migrate creates; %[1]s is the table, %[2]s its index,
// %[3]s the lease table.
const schema = `CREATE TABLE IF NOT EXISTS %[1]s (
	key         text        PRIMARY KEY,
	token       text        NOT NULL,
	fingerprint bytea       NOT NULL,
	result      bytea,
	expires_at  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS %[2]s ON %[1]s (expires_at);
CREATE TABLE IF NOT EXISTS %[3]s (
	key         text        PRIMARY KEY,
	token       text        NOT NULL,
	expires_at  timestamptz NOT NULL
)`

// live is the condition that the key's row k holds a live claim or
// result: its own expiry has not come, or it is a claim whose token's
// renewed lease runs. %[2]s is the lease table.
const live = `(k.expires_at > clock_timestamp() OR (k.result IS NULL AND EXISTS (
	SELECT FROM %[2]s l WHERE l.key = k.key AND l.token = k.token AND l.expires_at > clock_timestamp())))`

// queries are the statements of one Store, for its table.
type queries struct {
	claim               string
	renew               string
	complete, completed string
	release, held       string
	completeTx, abortTx string
	reap, reapLeases    string
}

func newQueries(table, leases string) queries {
	q := func(format string) string {
		return fmt.Sprintf(strings.ReplaceAll(format, "LIVE", live), table, leases)
	}
	return queries{
		// One statement for a fresh key, a takeover and a replay alike.
		// What holds a live key is read, never locked: a duplicate that
		// comes while the holder's transaction has the row locked (between
		// CompleteTx and its commit) is answered at once from the
		// committed row, in flight. Only a row that is not live is
		// claimed, and that waits for a lock: a holder past its lease
		// whose CompleteTx has not committed yet, whose result the claim
		// then finds. No row back: the row changed as the claim ran; ask
		// again.
		claim: q(`WITH live AS (
	SELECT k.token, k.fingerprint, k.result FROM %[1]s k WHERE k.key = $1 AND LIVE
), acquired AS (
	INSERT INTO %[1]s AS k (key, token, fingerprint, expires_at)
	SELECT $1, $2::text, $3::bytea, clock_timestamp() + $4::bigint * interval '1 microsecond'
	WHERE NOT EXISTS (SELECT FROM live)
	ON CONFLICT (key) DO UPDATE
	SET token = excluded.token, fingerprint = excluded.fingerprint, result = NULL, expires_at = excluded.expires_at
	WHERE NOT LIVE
	RETURNING true
)
SELECT true, ''::text, NULL::bytea, false, NULL::bytea FROM acquired
UNION ALL
SELECT false, token, fingerprint, result IS NOT NULL, coalesce(result, '') FROM live`),
		// The key's row is read, not locked or written: a renewal neither
		// waits for the handler's transaction nor makes it fail. A key
		// completed with the token is the handler's own CompleteTx,
		// committed: nothing to renew, and nothing lost.
		renew: q(`WITH k AS (
	SELECT k.token = $2 AS mine, k.result IS NOT NULL AS done, LIVE AS live FROM %[1]s k WHERE k.key = $1
), renewed AS (
	INSERT INTO %[2]s (key, token, expires_at)
	SELECT $1, $2::text, clock_timestamp() + $3::bigint * interval '1 microsecond' FROM k WHERE mine AND live AND NOT done
	ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
	RETURNING true
)
SELECT EXISTS (SELECT FROM renewed) OR EXISTS (SELECT FROM k WHERE mine AND live AND done)`),
		// Saved in place of the token's own claim, expired or not, or of
		// nothing live: the lease ran out and nobody claimed the key since.
		complete: q(`INSERT INTO %[1]s AS k (key, token, fingerprint, result, expires_at)
VALUES ($1, $2, coalesce($3::bytea, ''), coalesce($4::bytea, ''), clock_timestamp() + $5::bigint * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE
SET token = excluded.token, fingerprint = excluded.fingerprint, result = excluded.result, expires_at = excluded.expires_at
WHERE NOT LIVE OR (k.token = excluded.token AND k.result IS NULL)`),
		completed: q(`SELECT token = $2 AND result IS NOT NULL FROM %[1]s WHERE key = $1 AND expires_at > clock_timestamp()`),
		release:   q(`DELETE FROM %[1]s WHERE key = $1 AND token = $2 AND result IS NULL`),
		held:      q(`SELECT EXISTS (SELECT FROM %[1]s k WHERE k.key = $1 AND LIVE)`),
		// In the handler's transaction: only the token's own live claim,
		// as the transaction sees it. The UPDATE locks the row until the
		// transaction ends, so that a claim that would take the key over
		// once the lease runs out waits for the commit, and then finds the
		// result. The isolation level says why nothing was saved.
		completeTx: q(`WITH saved AS (
	UPDATE %[1]s k SET result = $3, expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
	WHERE k.key = $1 AND k.token = $2 AND k.result IS NULL AND LIVE
	RETURNING true
)
SELECT EXISTS (SELECT FROM saved), current_setting('transaction_isolation')`),
		// Fails the handler's transaction, so that even a handler that
		// ignores CompleteTx's error cannot commit: its COMMIT rolls back.
		abortTx: `DO $$ BEGIN RAISE EXCEPTION 'pgstore: the idempotency lease is no longer this request''s: this transaction cannot commit' USING ERRCODE = 'P0001'; END $$`,
		// Bounded, oldest first, on the expires_at index; rows another
		// transaction has locked are left for the next run, and the outer
		// condition is checked again on the rows locked.
		reap: q(`DELETE FROM %[1]s k WHERE k.key IN (
	SELECT k.key FROM %[1]s k WHERE k.expires_at <= clock_timestamp() AND NOT LIVE ORDER BY k.expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
AND NOT LIVE`),
		// Lease rows are few (claims slower than a third of their lease),
		// and each is dead once its lease has run out.
		reapLeases: q(`DELETE FROM %[2]s WHERE key IN (
	SELECT key FROM %[2]s WHERE expires_at <= clock_timestamp() LIMIT $1 FOR UPDATE SKIP LOCKED)
AND expires_at <= clock_timestamp()`),
	}
}

// micros is d in whole microseconds, rounded up so that a lease is never
// shorter than asked.
func micros(d time.Duration) int64 {
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}
