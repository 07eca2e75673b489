package pgjournal_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
)

// statements records the SQL a pool sends, as bench/pgriver counts it.
type statements struct {
	mu  sync.Mutex
	sql []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	s.sql = append(s.sql, d.SQL)
	s.mu.Unlock()
	return ctx
}

func (*statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// count returns how many statements sent contain each of parts.
func (s *statements) count(part string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.sql {
		if strings.Contains(q, part) {
			n++
		}
	}
	return n
}

// tracedJournal returns a Journal on a new database whose pool records
// its statements.
func tracedJournal(t *testing.T) (*pgjournal.Journal, *statements) {
	t.Helper()
	url := pg(t).NewDatabase(t)
	migrate(t, newPool(t, url))
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	st := &statements{}
	cfg.ConnConfig.Tracer = st
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	j, err := pgjournal.New(pool, pgjournal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j, st
}

// The fragments that tell the journal's statements apart.
const (
	updateSQL = "SET not_after" // Update: an attempt's count or outcome
	claimSQL  = "attempts = attempts +"
)

// runUntil runs o until done returns true (bounded), then stops it.
func runUntil(t *testing.T, o *outbox.Outbox, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- o.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !done() {
		require.True(t, time.Now().Before(deadline), "not done in 30s")
		time.Sleep(2 * time.Millisecond)
	}
	cancel()
	require.ErrorIs(t, <-stopped, context.Canceled)
}

// An op claimed and succeeded is one write after its claim, the outcome:
// the claim counted the attempt, durably, so that no Update writes the
// count before the call. (There were two Updates per op: 2.04 statements
// per job in bench/pgriver.)
func TestClaimedSuccessIsOneUpdate(t *testing.T) {
	j, st := tracedJournal(t)
	o, err := outbox.New(j, outbox.Options{PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	o.Handle("send", func(context.Context, outbox.Op) error { return nil })
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send", Payload: []byte("x")})
	require.NoError(t, err)
	runUntil(t, o, func() bool {
		es, err := j.Get(context.Background(), []string{key})
		require.NoError(t, err)
		return len(es) == 1 && es[0].State == outbox.Succeeded
	})
	es, err := j.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, 1, es[0].Attempts)
	assert.GreaterOrEqual(t, st.count(claimSQL), 1)
	assert.Equal(t, 1, st.count(updateSQL), "one Update per claimed op that succeeded: its outcome")
}

// A claim that an open Breaker then refuses leaves the op's attempts as
// they were: the claim's count is given back with the write that puts
// the op back, and nothing was sent.
func TestRefusalAfterClaimLeavesAttempts(t *testing.T) {
	j, _ := tracedJournal(t)
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, OpenFor: time.Hour, Probes: 1})
	require.NoError(t, err)
	_, err = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") }, retry.Policy{MaxAttempts: 1, Breaker: br})
	require.Error(t, err)
	require.Equal(t, guard.BreakerOpen, br.State())
	o, err := outbox.New(j, outbox.Options{PollInterval: 5 * time.Millisecond, Policy: retry.Policy{MaxAttempts: 5, Breaker: br}})
	require.NoError(t, err)
	var mu sync.Mutex
	calls := 0
	o.Handle("send", func(context.Context, outbox.Op) error { mu.Lock(); calls++; mu.Unlock(); return nil })
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send", Payload: []byte("x")})
	require.NoError(t, err)
	var got outbox.Entry
	runUntil(t, o, func() bool {
		es, err := j.Get(context.Background(), []string{key})
		require.NoError(t, err)
		require.Len(t, es, 1)
		got = es[0]
		return got.Reason != "" && got.Lease == ""
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 0, calls, "the open breaker refused the call")
	assert.Equal(t, outbox.Pending, got.State)
	assert.Equal(t, "circuit breaker open; not sent", got.Reason)
	assert.Equal(t, 0, got.Attempts, "the refused claim's count was given back")
}

// The claim's count is durable before the call: what a process that dies
// mid-call leaves (seen here from inside the call) holds the attempt, so
// that the next claim resumes with it counted.
func TestClaimCountIsDurableBeforeTheCall(t *testing.T) {
	j, st := tracedJournal(t)
	o, err := outbox.New(j, outbox.Options{PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	seen := make(chan outbox.Entry, 1)
	o.Handle("send", func(ctx context.Context, op outbox.Op) error {
		es, err := j.Get(ctx, []string{op.Key})
		if err == nil && len(es) == 1 {
			seen <- es[0]
		}
		return err
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send", Payload: []byte("x")})
	require.NoError(t, err)
	runUntil(t, o, func() bool { return len(seen) == 1 })
	mid := <-seen
	assert.Equal(t, key, mid.Op.Key)
	assert.Equal(t, 1, mid.Attempts, "counted before the call")
	assert.NotEmpty(t, mid.Lease, "under the claim's lease")
	assert.GreaterOrEqual(t, st.count(claimSQL), 1)
}
