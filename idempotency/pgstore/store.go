package pgstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stormguard/retry/idempotency"
)

const (
	defaultTable     = "idempotency_keys"
	defaultReapBatch = 1000
	indexSuffix      = "_expires_at"
	leasesSuffix     = "_leases"
)

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// Table names the table that holds the keys ["idempotency_keys"]: a
	// lower-case unquoted PostgreSQL name, optionally with its schema
	// ("billing.idempotency_keys"), of at most 52 characters (its index
	// adds "_expires_at" within PostgreSQL's 63).
	Table string

	// ReapBatch is the most rows that one statement of Reap deletes
	// [1000]: Reap runs as many as it needs, each a short transaction.
	ReapBatch int
}

// Store is an [idempotency.Store] in a PostgreSQL table, whose handlers
// can save their response in their own transaction with [Store.CompleteTx].
// It is safe for concurrent use, as the pool is.
type Store struct {
	pool      *pgxpool.Pool
	table     string // as given, for errors
	ident     string // quoted
	index     string // quoted
	leases    string // quoted: the lease table
	reapBatch int
	q         queries
}

var unquoted = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// New returns a Store that keeps its keys in pool's database, in the table
// that [Store.Migrate] creates. It does not contact the database: the first
// request does. Invalid options give an error that names the field and
// matches [idempotency.ErrInvalidOptions]. The caller owns pool: the store
// never closes it.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: pgstore: the pool is nil", idempotency.ErrInvalidOptions)
	}
	if opts.Table == "" {
		opts.Table = defaultTable
	}
	if opts.ReapBatch == 0 {
		opts.ReapBatch = defaultReapBatch
	}
	if opts.ReapBatch < 0 {
		return nil, fmt.Errorf("%w: pgstore: ReapBatch %d is negative", idempotency.ErrInvalidOptions, opts.ReapBatch)
	}
	parts := strings.Split(opts.Table, ".")
	name := parts[len(parts)-1]
	for _, p := range parts {
		if len(parts) > 2 || !unquoted.MatchString(p) {
			return nil, fmt.Errorf("%w: pgstore: Table %q is not a lower-case unquoted name (letters, digits, '_'), with at most one schema",
				idempotency.ErrInvalidOptions, opts.Table)
		}
	}
	if len(name)+len(indexSuffix) > 63 {
		return nil, fmt.Errorf("%w: pgstore: Table %q is longer than 52 characters", idempotency.ErrInvalidOptions, opts.Table)
	}
	ident := pgx.Identifier(parts).Sanitize()
	leaseParts := append(parts[:len(parts)-1:len(parts)-1], name+leasesSuffix)
	leases := pgx.Identifier(leaseParts).Sanitize()
	s := &Store{
		pool:      pool,
		table:     opts.Table,
		ident:     ident,
		index:     pgx.Identifier{name + indexSuffix}.Sanitize(),
		leases:    leases,
		reapBatch: opts.ReapBatch,
		q:         newQueries(ident, leases),
	}
	return s, nil
}

// errVanished is the error of a call that found the key live and then, at
// each of its tries, gone: it cannot happen but by a clock that jumps back
// and forth.
var errVanished = errors.New("pgstore: the key's row changed under every try")

// tries bounds the loops in which a row that was live at one statement has
// expired (or been reaped) at the next.
const tries = 3

// Claim implements [idempotency.Store]: one statement for a fresh key, a
// takeover or a live key (in flight, completed, or claimed with this token
// already). It never waits for the lock of a live key's row: a duplicate
// is answered at once, whatever the holder's transaction is doing.
func (s *Store) Claim(ctx context.Context, key, token string, fingerprint []byte, lease time.Duration) (idempotency.Claim, error) {
	if lease <= 0 {
		return idempotency.Claim{}, fmt.Errorf("pgstore: claim: lease %v is not positive", lease)
	}
	if fingerprint == nil {
		fingerprint = []byte{} // NOT NULL
	}
	for range tries {
		var (
			acquired, complete bool
			holder             string
			fp, res            []byte
		)
		err := s.pool.QueryRow(ctx, s.q.claim, key, token, fingerprint, micros(lease)).Scan(&acquired, &holder, &fp, &complete, &res)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue // the row changed as the claim ran: ask again
		case err != nil:
			return idempotency.Claim{}, fmt.Errorf("pgstore: claim: %w", err)
		case acquired:
			return idempotency.Claim{State: idempotency.Acquired}, nil
		case complete:
			return idempotency.Claim{State: idempotency.Completed, Fingerprint: fp, Result: res}, nil
		case holder == token: // the same call, sent again
			return idempotency.Claim{State: idempotency.Acquired}, nil
		}
		return idempotency.Claim{State: idempotency.InFlight, Fingerprint: fp}, nil
	}
	return idempotency.Claim{}, fmt.Errorf("pgstore: claim: %w", errVanished)
}

// Renew implements [idempotency.Store]. It writes the lease table, never
// the key's row, so that it neither waits for a handler's transaction
// that holds the row's lock nor makes one in REPEATABLE READ or
// SERIALIZABLE fail. A key completed with token (the handler's CompleteTx
// has committed, and the handler is still running) is no lost lease: Renew
// returns nil and changes nothing.
func (s *Store) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("pgstore: renew: lease %v is not positive", lease)
	}
	var held bool
	if err := s.pool.QueryRow(ctx, s.q.renew, key, token, micros(lease)).Scan(&held); err != nil {
		return fmt.Errorf("pgstore: renew: %w", err)
	}
	if !held {
		return idempotency.ErrLeaseLost
	}
	return nil
}

// Complete implements [idempotency.Store]. It finds the key completed with
// token already, and keeps what is saved, when the handler saved its
// response with CompleteTx and then wrote another.
func (s *Store) Complete(ctx context.Context, key, token string, fingerprint, result []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("pgstore: complete: ttl %v is not positive", ttl)
	}
	for range tries {
		tag, err := s.pool.Exec(ctx, s.q.complete, key, token, fingerprint, result, micros(ttl))
		if err != nil {
			return fmt.Errorf("pgstore: complete: %w", err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		var mine bool
		err = s.pool.QueryRow(ctx, s.q.completed, key, token).Scan(&mine)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return fmt.Errorf("pgstore: complete: %w", err)
		case mine: // the same call, sent again, or CompleteTx's commit
			return nil
		}
		return idempotency.ErrLeaseLost
	}
	return fmt.Errorf("pgstore: complete: %w", errVanished)
}

// Release implements [idempotency.Store].
func (s *Store) Release(ctx context.Context, key, token string) error {
	tag, err := s.pool.Exec(ctx, s.q.release, key, token)
	if err != nil {
		return fmt.Errorf("pgstore: release: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var held bool
	if err := s.pool.QueryRow(ctx, s.q.held, key).Scan(&held); err != nil {
		return fmt.Errorf("pgstore: release: %w", err)
	}
	if held {
		return idempotency.ErrLeaseLost
	}
	return nil // released already, or expired
}
