// Package outboxfix is a test fixture that the panel's and the
// OpenTelemetry tests share: an Outbox over a file journal, running real
// ops, that Fill brings to one op in a handler call, one dead letter and one
// pending op, on a fake clock.
package outboxfix

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// Fixture is a running Outbox; its Run ends with the test.
type Fixture struct {
	Outbox *outbox.Outbox
	Clock  *retrytest.Clock

	secret           string
	started, release chan struct{}
}

// Start returns an empty Outbox whose Run runs until the test ends. Its
// "pay" handler fails the payload "frozen" for good, with an error that
// holds secret, and holds any other payload in its call until Release.
func Start(t testing.TB, secret string) *Fixture {
	t.Helper()
	j, err := outbox.OpenFile(filepath.Join(t.TempDir(), "journal"))
	require.NoError(t, err)
	f := &Fixture{Clock: retrytest.NewClock(), secret: secret, started: make(chan struct{}, 1), release: make(chan struct{})}
	f.Outbox, err = outbox.New(j, outbox.Options{Clock: f.Clock, Concurrency: 2})
	require.NoError(t, err)
	f.Outbox.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		if string(op.Payload) == "frozen" {
			return retry.Permanent(errors.New("declined: " + secret))
		}
		f.started <- struct{}{}
		select {
		case <-f.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Outbox.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
		j.Close()
	})
	return f
}

// Fill enqueues an op of a kind with no handler (its payload the secret),
// a minute later one that fails for good and one that stays in its call,
// and returns once both have got there, the clock two minutes past the
// first enqueue.
func (f *Fixture) Fill(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	_, err := f.Outbox.Enqueue(ctx, outbox.Op{Kind: "later", Payload: []byte(f.secret)}) // no handler: pending
	require.NoError(t, err)
	f.Clock.Add(time.Minute)
	frozen, err := f.Outbox.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("frozen")})
	require.NoError(t, err)
	_, err = f.Outbox.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("slow")})
	require.NoError(t, err)
	f.Clock.Add(time.Minute)
	r, err := f.Outbox.Wait(ctx, frozen)
	require.ErrorIs(t, err, outbox.ErrFailed)
	require.Equal(t, outbox.Failed, r.State)
	<-f.started
}

// Release lets the op held in its call succeed.
func (f *Fixture) Release() { close(f.release) }
