// Package pgjournal is an outbox.SharedJournal in PostgreSQL: many
// processes share one table of ops, each op claimed by one of them at a
// time under a lease, and an op can be enqueued in the caller's own
// transaction, so that it commits with the business rows that made it (the
// transactional outbox).
//
// # The table
//
// [Migrate] creates the table, its columns and its indexes where they are
// missing, under an advisory lock (pg_advisory_xact_lock), so that runs
// from processes starting together take turns: run it at deploy time.
// [New] only asks the catalog, which takes no lock on the table, and fails
// with [ErrNotMigrated], naming what is missing, on a table Migrate has not
// made; so a process starting behind an open transaction neither waits
// for it nor makes every other process's statements queue behind DDL. For
// the default name, outbox_ops, Migrate runs:
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
//	CREATE INDEX IF NOT EXISTS outbox_ops_ready ON outbox_ops (next_at, id) WHERE state = 0 AND lease IS NULL;
//	CREATE INDEX IF NOT EXISTS outbox_ops_leased ON outbox_ops (lease_until) WHERE state = 0 AND lease IS NOT NULL;
//	DROP INDEX IF EXISTS outbox_ops_due;
//
// The ready index holds the pending ops no lease holds, so that a claim
// never reads the rows running elsewhere; the leased index finds those
// whose lease lapsed. outbox_ops_due is the claim index of earlier
// versions.
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
// Every call is one statement, and concurrent Updates and Releases share
// theirs: a write that finds another being committed waits for it, and
// the writes that queued meanwhile go in one statement and one commit
// (up to 500), each returning once it is committed, so that an outcome
// Update has returned is durable before Wait reports the op done. While
// writes keep coming, the writer also waits for more after each batch, as
// long as that batch's statement took (1 to 10 ms) unless 256 are
// queued, as PostgreSQL's commit_delay does: a busy Journal writes its
// outcomes in under half as many statements (BENCHMARKS.md), and a
// write that finds it idle goes at once. A
// process that dies runs none of the writes it had queued: their ops,
// whose handlers ran, run again under their keys once their leases end
// (with Run's defaults, up to 8 × Concurrency of them). Add
// and EnqueueTx insert (ON CONFLICT on the
// key, so that a duplicate never aborts the caller's transaction) and call
// pg_notify in the same statement, on a channel named after the table;
// PostgreSQL sends the notice at commit, and every Run over the table,
// which LISTENs on a connection of its own (see [Journal.Listen]), claims
// at once instead of at its next poll. Commits that notify take turns in
// PostgreSQL, so a statement that runs while another of the Journal's does,
// within 5 ms of a notice, sends none; every Run claims again 10 ms after
// each notice it hears, which finds those. Claim is
//
//	WITH free AS (SELECT id FROM outbox_ops WHERE state = 0 AND lease IS NULL
//			AND next_at <= $now AND kind = ANY($kinds)
//			ORDER BY next_at, id LIMIT $limit FOR UPDATE SKIP LOCKED),
//		lapsed AS (SELECT id FROM outbox_ops WHERE state = 0 AND lease IS NOT NULL
//			AND lease_until <= $now AND next_at <= $now AND kind = ANY($kinds)
//			ORDER BY lease_until LIMIT $limit FOR UPDATE SKIP LOCKED)
//	UPDATE outbox_ops SET lease = $token, lease_until = $until, attempts = attempts + $count
//	WHERE id IN (SELECT id FROM (SELECT id FROM free UNION ALL SELECT id FROM lapsed) AS due LIMIT $limit)
//	RETURNING …
//
// so that concurrent claims skip each other's rows instead of waiting;
// $count is 1 when the claim counts the attempt it is for
// (outbox.ClaimRequest.Count, as Run asks), so that an attempt that
// succeeds costs one Update after it, its outcome.
// Update is fenced: its WHERE clause requires the lease it was given
// (lease IS NOT DISTINCT FROM $lease), so that a process whose lease
// lapsed and was taken changes nothing and gets outbox.ErrLeaseLost; an
// Update to succeeded or failed clears the lease. Renew and Release match
// the key and the token too. The statements that write many rows
// (a batch, Renew) lock them first in key order, so that two processes
// whose leases overlap after a lapse never deadlock.
//
// Times are the Outbox's clock readings, not the database's: the clocks of
// the processes must agree to well within Options.Lease of the Outbox.
//
// Ops that succeeded stay in the table until [Journal.Reap] deletes them
// (run it on a ticker, from any process).
//
// The caller builds and owns the pool; the Journal never closes it.
package pgjournal
