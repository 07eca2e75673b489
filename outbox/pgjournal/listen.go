package pgjournal

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stormguard/retry/outbox"
)

var _ outbox.ListeningJournal = (*Journal)(nil)

// Bounds of Listen's backoff between connections: the poll covers the
// ops committed meanwhile, so a long backoff only costs latency.
const (
	listenMinBackoff = 10 * time.Millisecond
	listenMaxBackoff = 5 * time.Second
	closeTimeout     = 5 * time.Second
)

// Listen LISTENs on the table's channel, on a connection of its own (made
// with the pool's config, outside the pool, so that it never holds one of
// the pool's), and calls wake at each notice of Add or EnqueueTx, once
// more 10 ms after a notice (for the statements that sent none, see the
// package doc), and once after each time it connects. A connection that fails is made again
// after a backoff that doubles from 10 ms to at most 5 s, and starts again
// from 10 ms once a connection has held. It returns nil when ctx ends;
// outbox.Outbox.Run calls it.
func (j *Journal) Listen(ctx context.Context, wake func()) error {
	backoff := listenMinBackoff
	for {
		began := time.Now()
		err := j.listen(ctx, wake)
		if ctx.Err() != nil {
			return nil
		}
		_ = err // the poll covers the time without a connection
		if time.Since(began) > listenMaxBackoff {
			backoff = listenMinBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listen holds one connection, until it fails or ctx ends.
func (j *Journal) listen(ctx context.Context, wake func()) error {
	if err := j.check(); err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, j.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("pgjournal: listen: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{j.sql.channel}.Sanitize()); err != nil {
		return fmt.Errorf("pgjournal: listen: %w", err)
	}
	wake() // what was committed before the LISTEN had no listener
	// trail is when to wake once more after a notice, for the ops whose
	// statements sent none (notice.go); zero when none is due.
	var trail time.Time
	for {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if !trail.IsZero() {
			wctx, cancel = context.WithDeadline(ctx, trail)
		}
		_, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			wake()
			if trail.IsZero() {
				trail = time.Now().Add(j.notices.trailing())
			}
		case ctx.Err() == nil && wctx.Err() != nil && !trail.IsZero():
			// The trailing wake: the wait's deadline passed. pgx keeps a
			// connection whose read timed out; if it closed it anyway, the
			// next listen connects again.
			wake()
			trail = time.Time{}
			if conn.IsClosed() {
				return nil
			}
		default:
			return fmt.Errorf("pgjournal: listen: %w", err)
		}
	}
}
