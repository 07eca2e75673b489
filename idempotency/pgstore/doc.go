// Package pgstore is an idempotency.Store in a PostgreSQL table, whose
// handlers can save their response in the same transaction as their
// business rows, so that the two commit together or not at all.
//
// This is Brandur Leach's design, "Implementing Stripe-like Idempotency
// Keys in Postgres" (https://brandur.org/idempotency-keys): the key, the
// request's fingerprint and the response live in the database that holds
// the business data. Any store beside that database (memory, Redis) leaves
// a window: the handler commits the order, the process dies before the
// result reaches the store, the lease runs out, and the retry runs the
// handler again, a second order. Fencing tokens protect the store's record,
// not the business write. [Store.CompleteTx] closes the window:
//
//	lease, keyed := idempotency.FromContext(ctx)
//	tx, _ := pool.Begin(ctx)
//	defer tx.Rollback(ctx)
//	// ... the business rows, in tx ...
//	if keyed {
//		if err := store.CompleteTx(ctx, tx, lease, http.StatusCreated, header, body); err != nil {
//			return err // the lease is lost: roll back, answer 503
//		}
//	}
//	if err := tx.Commit(ctx); err != nil { ... }
//	// write status, header and body: the middleware sends them as they are
//
// After a crash at any point a retry either gets the committed response
// replayed or runs the handler on a clean slate. A handler that does not
// call CompleteTx uses the store as any other: the middleware claims,
// completes and releases keys in statements of their own.
//
// # Leases on the database's clock
//
// Every lease and TTL is set and checked with clock_timestamp(), the
// database's clock at the moment of the check: not the clocks of the
// processes, which differ, and not now(), which inside a transaction is
// the time it began. CompleteTx succeeds only while its token holds a
// claim whose lease runs (UPDATE ... WHERE key AND token AND result IS NULL
// AND the lease runs), and it locks the row until the transaction ends: a
// request that would take the key over waits for the commit and then finds
// the result. A duplicate that comes while the lease runs waits for
// nothing: a claim reads a live key's committed row without locking it, and
// answers at once that the key is in flight. Renewals write a lease table
// of their own, never the key's row, so they neither wait for a handler's
// transaction nor make it fail; a renewal that finds the key completed
// with the request's own token (its CompleteTx has committed, and the
// handler still runs) answers that the lease holds.
//
// A handler paused past its lease (a GC pause, a stopped VM) cannot
// commit: its CompleteTx fails, and fails its transaction (a second
// statement raises an error in it), so that even a handler that ignores
// the error cannot commit its business rows. Two handlers never both
// commit, and the one that holds the key is the one whose result every
// retry gets.
//
// # Isolation levels
//
// The handler's transaction may run at any level:
//
//   - READ COMMITTED, PostgreSQL's default: CompleteTx sees the latest
//     renewal, however long the transaction.
//   - REPEATABLE READ and SERIALIZABLE work too, across any number of
//     renewals, but CompleteTx sees the lease as the transaction's snapshot
//     does (taken at its first statement): only the renewals made before
//     it. A lease that had run out as of the snapshot fails CompleteTx with
//     an error that matches [idempotency.ErrLeaseLost] and names the
//     isolation level. Renewals come every third of the lease, so the
//     snapshot's lease runs about two thirds of a lease past the first
//     statement at least: keep the time from the first statement to
//     CompleteTx under that, or lengthen the lease. A takeover, release or
//     reap of the key after the snapshot makes CompleteTx's UPDATE a
//     serialization failure (SQLSTATE 40001): CompleteTx reports it as
//     ErrLeaseLost too, joined with the driver's error, and fails the
//     transaction.
//
// The store's own statements (Claim, Renew, Complete, Release, Reap) run
// on its pool, one at a time, and expect READ COMMITTED: leave the pool's
// default_transaction_isolation at PostgreSQL's default.
//
// # Cost
//
// A fresh key costs the claim (one statement, outside the handler's
// transaction) and one statement in it, CompleteTx's (two when it fails);
// the middleware saves nothing after. A replay costs one statement, which
// writes nothing; a renewal, for a handler slower than a third of the
// lease, one. BenchmarkFreshKey measures it against the Redis store
// and the bare handler.
//
// # The table
//
// [Store.Migrate] runs this, with the table's name from Options.Table; a
// team that runs its own migrations runs it instead:
//
//	CREATE TABLE IF NOT EXISTS idempotency_keys (
//		key         text        PRIMARY KEY,
//		token       text        NOT NULL,
//		fingerprint bytea       NOT NULL,
//		result      bytea,
//		expires_at  timestamptz NOT NULL
//	);
//	CREATE INDEX IF NOT EXISTS idempotency_keys_expires_at ON idempotency_keys (expires_at);
//	CREATE TABLE IF NOT EXISTS idempotency_keys_leases (
//		key         text        PRIMARY KEY,
//		token       text        NOT NULL,
//		expires_at  timestamptz NOT NULL
//	);
//
// A row is a claim while result is NULL, and a saved response after;
// expires_at is the end of the claim's lease as claimed, or of the result's
// TTL. A renewal writes the claim's lease end in the lease table instead,
// keyed by the key and kept with the token: a claim is live while either
// runs. A
// row past its expires_at is absent to every statement; the primary key
// serves every statement on one key and the index serves [Store.Reap].
// Keep the table in the database of the business rows: CompleteTx needs
// the handler's transaction to reach it.
//
// # Reaping
//
// Expired rows cost only space. [Store.Reap] deletes them in bounded
// batches (Options.ReapBatch rows, each batch a short transaction of its
// own, skipping rows locked by others), and never a live claim or a result
// within its TTL. Run it on a ticker, every minute or so: the table then
// holds about one TTL of keys (24h by default) and a minute more. Every
// process of a fleet may run it.
//
// # database/sql
//
// [Store.CompleteSQLTx] is CompleteTx for a *sql.Tx, on a driver for the
// same database (github.com/jackc/pgx/v5/stdlib, lib/pq): the statements
// are the same. The Store itself runs on a *pgxpool.Pool, which
// stdlib.OpenDBFromPool can share with database/sql code.
//
// # Crashes, measured
//
// TestCrashHarnessPostgresStore runs the orders service in a child process
// that sends itself SIGKILL at random points inside the handler (before
// the business write, between it and the commit, after the commit before
// the answer), while clients create orders through retryhttp with
// idempotency keys; TestCrashHarnessRedisStoreMakesDoubleOrders runs the
// same harness with the Redis store and the order rows still in
// PostgreSQL. Its default size is modest for CI (200 orders, 6 kills); the
// full run, on a 2-core VM:
//
//	PGSTORE_CRASH_ORDERS=2000 PGSTORE_CRASH_KILLS=40 go test -run TestCrashHarness -v ./idempotency/pgstore
//
//	PostgreSQL store: 2000 orders, 2000 order rows (0 orders made more than once),
//	  0 clients told another order than their own; 40 kills (10 at each point), 41 children
//	Redis store, orders in PostgreSQL: 2000 orders, 2018 order rows (17 orders made more
//	  than once), 17 clients told another order than their own; 40 kills (10 at each point)
//
// The double orders come from the kills after a commit: the Redis store
// never learned that the order was made.
package pgstore
