package pgjournal

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// createSQL is what Migrate runs; doc.go shows it for the default name.
// States: 0 pending, 1 succeeded, 2 failed (outbox.State). The two partial
// indexes serve Claim: %[2]s holds the pending ops no lease holds, in the
// order they are claimed, so that a claim never reads the rows running
// elsewhere; %[3]s the leased ones, by the lease's end, for those whose
// lease lapsed. The index of earlier versions, %[4]s, which held running
// ops too, is dropped.
const createSQL = `CREATE TABLE IF NOT EXISTS %[1]s (
	id          bigserial   PRIMARY KEY,
	key         text        NOT NULL UNIQUE,
	kind        text        NOT NULL,
	payload     bytea       NOT NULL,
	not_after   timestamptz NOT NULL,
	state       smallint    NOT NULL DEFAULT 0,
	attempts    integer     NOT NULL DEFAULT 0,
	next_at     timestamptz,
	last_wait   bigint      NOT NULL DEFAULT 0,
	enqueued    timestamptz NOT NULL,
	finished    timestamptz,
	reason      text        NOT NULL DEFAULT '',
	last_error  text        NOT NULL DEFAULT '',
	lease       text,
	lease_until timestamptz,
	trace       bytea       NOT NULL DEFAULT ''
);
ALTER TABLE %[1]s ADD COLUMN IF NOT EXISTS trace bytea NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS %[2]s ON %[1]s (next_at, id) WHERE state = 0 AND lease IS NULL;
CREATE INDEX IF NOT EXISTS %[3]s ON %[1]s (lease_until) WHERE state = 0 AND lease IS NOT NULL;
DROP INDEX IF EXISTS %[4]s;`

// columns are the table's columns, which New checks are there.
var columns = []string{"id", "key", "kind", "payload", "not_after", "state", "attempts", "next_at", "last_wait",
	"enqueued", "finished", "reason", "last_error", "lease", "lease_until", "trace"}

// tableName is a table name New accepts: an unquoted identifier, perhaps
// with a schema, so that it needs no quoting rules of its own.
var tableName = regexp.MustCompile(`^([a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,58}$`)

// sqlText holds the statements for one table name.
type sqlText struct {
	table, create, ready, channel           string
	lock                                    int64 // advisory lock key of the table's creation
	add, enqueue, batch, load, claim, renew string
	// addQuiet and enqueueQuiet are add and enqueue without the notice:
	// see notice.go.
	addQuiet, enqueueQuiet  string
	get, counts, dead, reap string
}

// cols are the columns of an Entry, in the order scan reads them.
const cols = `id, key, kind, payload, not_after, state, attempts, next_at, last_wait, enqueued, finished, reason, last_error, coalesce(lease, ''), trace`

func newSQL(table string) (sqlText, error) {
	if !tableName.MatchString(table) {
		return sqlText{}, fmt.Errorf("pgjournal: Options.Table %q is not a lower-case identifier (schema.table or table)", table)
	}
	parts := strings.Split(table, ".")
	t := pgx.Identifier(parts).Sanitize()
	name := parts[len(parts)-1]
	schema := ""
	if len(parts) == 2 {
		schema = parts[0] + "."
	}
	h := fnv.New64a()
	h.Write([]byte("stormguard/outbox/pgjournal " + table))
	const insert = `INSERT INTO %[1]s (key, kind, payload, not_after, state, attempts, next_at, last_wait, enqueued, finished, reason, last_error, trace)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (key) `
	ident := func(suffix string) string { return pgx.Identifier{name + suffix}.Sanitize() }
	// The channel of the table's notifications, named from its hash: a
	// channel's name is at most 63 bytes, a table's with its schema more.
	channel := fmt.Sprintf("pgjournal_%016x", h.Sum64())
	old := pgx.Identifier{name + "_due"}
	if schema != "" {
		old = pgx.Identifier{parts[0], name + "_due"}
	}
	q := sqlText{
		table:   t,
		channel: channel,
		create:  fmt.Sprintf(createSQL, t, ident("_ready"), ident("_leased"), old.Sanitize()),
		// ready asks the catalog, which takes no lock on the table, what
		// of the table, its columns and its indexes is missing.
		ready: fmt.Sprintf(`SELECT CASE WHEN to_regclass(%[1]s) IS NULL THEN ARRAY['table ' || %[1]s]
	ELSE ARRAY(SELECT 'column ' || c FROM unnest($1::text[]) AS c WHERE NOT EXISTS (
		SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%[1]s) AND attname = c AND NOT attisdropped))
	|| ARRAY(SELECT 'index ' || i FROM unnest(ARRAY[%[2]s, %[3]s]) AS i WHERE to_regclass(i) IS NULL) END`,
			quoteLiteral(table), quoteLiteral(schema+name+"_ready"), quoteLiteral(schema+name+"_leased")),
		lock: int64(h.Sum64()),
		// Add and EnqueueTx notify the table's channel in their statement:
		// the Runs that LISTEN (listen.go) claim at once, at the commit.
		add: fmt.Sprintf(`WITH ins AS (`+insert+`DO NOTHING RETURNING 1)
SELECT count(*) FROM ins CROSS JOIN LATERAL (SELECT pg_notify(%[2]s, '')) AS n`, t, quoteLiteral(channel)),
		// The same op enqueued again returns its key and changes nothing
		// (the no-op update makes RETURNING answer); another op under the
		// key returns no row: outbox.Enqueue's rules, in one statement.
		enqueue: fmt.Sprintf(`WITH ins AS (`+insert+`DO UPDATE SET attempts = %[1]s.attempts
WHERE %[1]s.kind = EXCLUDED.kind AND (%[1]s.payload = EXCLUDED.payload OR %[1]s.state = 1) RETURNING key)
SELECT ins.key FROM ins CROSS JOIN LATERAL (SELECT pg_notify(%[2]s, '')) AS n`, t, quoteLiteral(channel)),
		// The statements that write many rows lock them first in the
		// order of their keys (l; the count makes the whole of l run
		// before the first row is written), so that two of them, from
		// processes whose leases overlap after a lapse, never wait for
		// each other: PostgreSQL would end one with a deadlock error
		// after a second, and its Run with it.
		//
		// Fenced: only the lease holder (or anyone, when no lease holds the
		// op) writes; a finished op's lease ends with the write. One
		// statement for a batch of Updates ($1-$11, an array each) and
		// Releases ($12, $13): see batch.go. The Releases' CTE runs though
		// nothing reads it, as every data-modifying CTE does.
		batch: fmt.Sprintf(`WITH l AS MATERIALIZED (SELECT key FROM %[1]s WHERE key = ANY($1) OR key = ANY($12) ORDER BY key FOR UPDATE),
u AS (UPDATE %[1]s AS t SET not_after = v.not_after, state = v.state, attempts = v.attempts,
	next_at = v.next_at, last_wait = v.last_wait, finished = v.finished, reason = v.reason, last_error = v.last_error, trace = v.trace,
	lease = CASE WHEN v.state = 0 AND NOT v.free THEN t.lease END, lease_until = CASE WHEN v.state = 0 AND NOT v.free THEN t.lease_until END
FROM unnest($1::text[], $2::timestamptz[], $3::smallint[], $4::integer[], $5::timestamptz[], $6::bigint[], $7::timestamptz[],
	$8::text[], $9::text[], $10::text[], $11::bytea[], $14::boolean[])
	AS v(key, not_after, state, attempts, next_at, last_wait, finished, reason, last_error, lease, trace, free)
WHERE t.key = v.key AND t.lease IS NOT DISTINCT FROM v.lease AND (SELECT count(*) FROM l) >= 0 RETURNING t.key),
r AS (UPDATE %[1]s AS t SET lease = NULL, lease_until = NULL FROM unnest($12::text[], $13::text[]) AS h(key, lease)
WHERE t.key = h.key AND t.lease = h.lease AND (SELECT count(*) FROM l) >= 0)
SELECT key FROM u`, t),
		load: fmt.Sprintf(`SELECT %s FROM %s ORDER BY id`, cols, t),
		// The ops no lease holds, from their index, and those whose lease
		// lapsed, from theirs; $6 is added to each one's attempts (1 when
		// the claim counts the attempt it is for, see outbox.ClaimRequest).
		claim: fmt.Sprintf(`WITH free AS (SELECT id FROM %[1]s WHERE state = 0 AND lease IS NULL AND next_at <= $3 AND kind = ANY($4)
		ORDER BY next_at, id LIMIT $5 FOR UPDATE SKIP LOCKED),
	lapsed AS (SELECT id FROM %[1]s WHERE state = 0 AND lease IS NOT NULL AND lease_until <= $3 AND next_at <= $3 AND kind = ANY($4)
		ORDER BY lease_until LIMIT $5 FOR UPDATE SKIP LOCKED)
UPDATE %[1]s SET lease = $1, lease_until = $2, attempts = attempts + $6
WHERE id IN (SELECT id FROM (SELECT id FROM free UNION ALL SELECT id FROM lapsed) AS due LIMIT $5)
RETURNING %[2]s`, t, cols),
		renew: fmt.Sprintf(`WITH l AS MATERIALIZED (SELECT key FROM %[1]s WHERE key = ANY($1) ORDER BY key FOR UPDATE)
UPDATE %[1]s AS t SET lease_until = $3 FROM unnest($1::text[], $2::text[]) AS h(key, lease)
WHERE t.key = h.key AND t.lease = h.lease AND (SELECT count(*) FROM l) >= 0 RETURNING t.key`, t),
		get: fmt.Sprintf(`SELECT %s FROM %s WHERE key = ANY($1)`, cols, t),
		counts: fmt.Sprintf(`SELECT count(*) FILTER (WHERE state = 0 AND (lease_until IS NULL OR lease_until <= $1)),
	count(*) FILTER (WHERE state = 0 AND lease_until > $1), count(*) FILTER (WHERE state = 2),
	min(enqueued) FILTER (WHERE state = 0) FROM %s`, t),
		dead: fmt.Sprintf(`SELECT %s FROM %s WHERE state = 2 ORDER BY id`, cols, t),
		// The succeeded ops finished before $1, at most $2 of them, oldest
		// first, skipping rows another transaction holds.
		reap: fmt.Sprintf(`DELETE FROM %[1]s WHERE id IN (SELECT id FROM %[1]s
	WHERE state = 1 AND finished < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)`, t),
	}
	notice := fmt.Sprintf(" CROSS JOIN LATERAL (SELECT pg_notify(%s, '')) AS n", quoteLiteral(channel))
	q.addQuiet = strings.Replace(q.add, notice, "", 1)
	q.enqueueQuiet = strings.Replace(q.enqueue, notice, "", 1)
	return q, nil
}

// quoteLiteral quotes s, an identifier tableName accepted (letters,
// digits, '_' and '.'), as an SQL string.
func quoteLiteral(s string) string { return "'" + s + "'" }
