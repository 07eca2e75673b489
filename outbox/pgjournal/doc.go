// Package pgjournal is an outbox.SharedJournal in PostgreSQL: many
// processes share one table of ops, each op claimed by one of them at a
// time under a lease, and an op can be enqueued in the caller's own
// transaction, so that it commits with the business rows that made it (the
// transactional outbox).
//
// # The table
//
// [New] asks the catalog whether the table, its columns and its index are
// there, which takes no lock on the table, and creates what is missing
// only then, under an advisory lock (pg_advisory_xact_lock), so that
// processes starting together do not race and a process starting behind
// an open transaction does not wait for it. [Migrate] runs the same
// statements, for a deploy step. For the default name, outbox_ops:
//
//	CREATE TABLE IF NOT EXISTS outbox_ops (
//		id          bigserial   PRIMARY KEY,
//		key         text        NOT NULL UNIQUE,
//		kind        text        NOT NULL,
//		payload     bytea       NOT NULL,
//		not_after   timestamptz NOT NULL,
//		state       smallint    NOT NULL DEFAULT 0,
//		attempts    integer     NOT NULL DEFAULT 0,
//		next_at     timestamptz,
//		last_wait   bigint      NOT NULL DEFAULT 0,
//		enqueued    timestamptz NOT NULL,
//		finished    timestamptz,
//		reason      text        NOT NULL DEFAULT '',
//		last_error  text        NOT NULL DEFAULT '',
//		lease       text,
//		lease_until timestamptz,
//		trace       bytea       NOT NULL DEFAULT ''
//	);
//	ALTER TABLE outbox_ops ADD COLUMN IF NOT EXISTS trace bytea NOT NULL DEFAULT '';
//	CREATE INDEX IF NOT EXISTS outbox_ops_due ON outbox_ops (next_at, id) WHERE state = 0;
//
// A row is an outbox.Entry: state is 0 pending, 1 succeeded, 2 failed;
// last_wait is in nanoseconds; lease is the token of the claim that holds
// the op (the claimer's name, '#', 64 random bits) and lease_until its end;
// trace is the op's retry.Trace as JSON (stop reason and kept attempts,
// never an error's text), empty while it has none.
// The table is as sensitive as the ops' payloads and last errors.
//
// # How each call uses it
//
// Every call is one statement. Add and EnqueueTx insert (ON CONFLICT on the
// key, so that a duplicate never aborts the caller's transaction). Claim
// is
//
//	UPDATE outbox_ops SET lease = $token, lease_until = $until
//	WHERE id IN (SELECT id FROM outbox_ops
//		WHERE state = 0 AND next_at <= $now AND (lease_until IS NULL OR lease_until <= $now)
//		  AND kind = ANY($kinds)
//		ORDER BY next_at, id LIMIT $limit FOR UPDATE SKIP LOCKED)
//	RETURNING …
//
// so that concurrent claims skip each other's rows instead of waiting.
// Update is fenced: its WHERE clause requires the lease it was given
// (lease IS NOT DISTINCT FROM $lease), so that a process whose lease
// lapsed and was taken changes nothing and gets outbox.ErrLeaseLost; an
// Update to succeeded or failed clears the lease. Renew and Release match
// the key and the token too.
//
// Times are the Outbox's clock readings, not the database's: the clocks of
// the processes must agree to well within Options.Lease of the Outbox.
//
// Ops that succeeded stay in the table until you delete them, e.g. daily:
//
//	DELETE FROM outbox_ops WHERE state = 1 AND finished < now() - interval '1 day';
//
// The caller builds and owns the pool; the Journal never closes it.
package pgjournal
