package pgjournal

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// createSQL is the table New creates when it is missing; doc.go shows it
// for the default name. States: 0 pending, 1 succeeded, 2 failed
// (outbox.State). The partial index serves Claim: it holds pending ops
// only, in the order they are claimed.
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
CREATE INDEX IF NOT EXISTS %[2]s ON %[1]s (next_at, id) WHERE state = 0;`

// tableName is a table name New accepts: an unquoted identifier, perhaps
// with a schema, so that it needs no quoting rules of its own.
var tableName = regexp.MustCompile(`^([a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,58}$`)

// sqlText holds the statements for one table name.
type sqlText struct {
	table, create, ready                            string
	lock                                            int64 // advisory lock key of the table's creation
	add, enqueue, update, owner, load, claim, renew string
	release, get, counts, dead, reap                string
}

// cols are the columns of an Entry, in the order scan reads them.
const cols = `id, key, kind, payload, not_after, state, attempts, next_at, last_wait, enqueued, finished, reason, last_error, coalesce(lease, ''), trace`

func newSQL(table string) (sqlText, error) {
	if !tableName.MatchString(table) {
		return sqlText{}, fmt.Errorf("pgjournal: Options.Table %q is not a lower-case identifier (schema.table or table)", table)
	}
	parts := strings.Split(table, ".")
	t := pgx.Identifier(parts).Sanitize()
	index := pgx.Identifier{parts[len(parts)-1] + "_due"}.Sanitize()
	h := fnv.New64a()
	h.Write([]byte("stormguard/outbox/pgjournal " + table))
	const insert = `INSERT INTO %[1]s (key, kind, payload, not_after, state, attempts, next_at, last_wait, enqueued, finished, reason, last_error, trace)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (key) `
	// ready asks the catalog, which takes no lock on the table, whether the
	// table, its trace column and its index are there already.
	indexName := parts[len(parts)-1] + "_due"
	if len(parts) == 2 {
		indexName = parts[0] + "." + indexName
	}
	return sqlText{
		table:  t,
		create: fmt.Sprintf(createSQL, t, index),
		ready: fmt.Sprintf(`SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL AND EXISTS (
	SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'trace' AND NOT attisdropped)`,
			quoteLiteral(table), quoteLiteral(indexName), quoteLiteral(table)),
		lock: int64(h.Sum64()),
		add:  fmt.Sprintf(insert+`DO NOTHING`, t),
		// The same op enqueued again returns its key and changes nothing
		// (the no-op update makes RETURNING answer); another op under the
		// key returns no row: outbox.Enqueue's rules, in one statement.
		enqueue: fmt.Sprintf(insert+`DO UPDATE SET attempts = %[1]s.attempts
WHERE %[1]s.kind = EXCLUDED.kind AND (%[1]s.payload = EXCLUDED.payload OR %[1]s.state = 1) RETURNING key`, t),
		// Fenced: only the lease holder (or anyone, when no lease holds the
		// op) writes; a finished op's lease ends with the write.
		update: fmt.Sprintf(`UPDATE %s SET not_after = $2, state = $3::smallint, attempts = $4, next_at = $5, last_wait = $6,
	finished = $7, reason = $8, last_error = $9, trace = $11,
	lease = CASE WHEN $3::smallint = 0 THEN lease END, lease_until = CASE WHEN $3::smallint = 0 THEN lease_until END
WHERE key = $1 AND lease IS NOT DISTINCT FROM $10::text`, t),
		owner: fmt.Sprintf(`SELECT coalesce(lease, '') FROM %s WHERE key = $1`, t),
		load:  fmt.Sprintf(`SELECT %s FROM %s ORDER BY id`, cols, t),
		claim: fmt.Sprintf(`UPDATE %[1]s SET lease = $1, lease_until = $2
WHERE id IN (SELECT id FROM %[1]s
	WHERE state = 0 AND next_at <= $3 AND (lease_until IS NULL OR lease_until <= $3) AND kind = ANY($4)
	ORDER BY next_at, id LIMIT $5 FOR UPDATE SKIP LOCKED)
RETURNING %[2]s`, t, cols),
		renew: fmt.Sprintf(`UPDATE %s AS t SET lease_until = $3 FROM unnest($1::text[], $2::text[]) AS h(key, lease)
WHERE t.key = h.key AND t.lease = h.lease RETURNING t.key`, t),
		get: fmt.Sprintf(`SELECT %s FROM %s WHERE key = ANY($1)`, cols, t),
		counts: fmt.Sprintf(`SELECT count(*) FILTER (WHERE state = 0 AND (lease_until IS NULL OR lease_until <= $1)),
	count(*) FILTER (WHERE state = 0 AND lease_until > $1), count(*) FILTER (WHERE state = 2),
	min(enqueued) FILTER (WHERE state = 0) FROM %s`, t),
		release: fmt.Sprintf(`UPDATE %s SET lease = NULL, lease_until = NULL WHERE key = $1 AND lease = $2`, t),
		dead:    fmt.Sprintf(`SELECT %s FROM %s WHERE state = 2 ORDER BY id`, cols, t),
		// The succeeded ops finished before $1, at most $2 of them, oldest
		// first, skipping rows another transaction holds.
		reap: fmt.Sprintf(`DELETE FROM %[1]s WHERE id IN (SELECT id FROM %[1]s
	WHERE state = 1 AND finished < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)`, t),
	}, nil
}

// quoteLiteral quotes s, an identifier tableName accepted (letters,
// digits, '_' and '.'), as an SQL string.
func quoteLiteral(s string) string { return "'" + s + "'" }
