package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowStore is a Store on which each call takes 5ms of clk's time, so
// that a Summary's StoreTime is known exactly; its calls fail as told.
type slowStore struct {
	idempotency.Store
	clk                   *clock.Mock
	claimErr, completeErr error
}

const storeCallTime = 5 * time.Millisecond

func (s *slowStore) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (idempotency.Claim, error) {
	s.clk.Add(storeCallTime)
	if s.claimErr != nil {
		return idempotency.Claim{}, s.claimErr
	}
	return s.Store.Claim(ctx, key, token, fp, lease)
}

func (s *slowStore) Complete(ctx context.Context, key, token string, fp, result []byte, ttl time.Duration) error {
	s.clk.Add(storeCallTime)
	if s.completeErr != nil {
		return s.completeErr
	}
	return s.Store.Complete(ctx, key, token, fp, result, ttl)
}

func (s *slowStore) Release(ctx context.Context, key, token string) error {
	s.clk.Add(storeCallTime)
	return s.Store.Release(ctx, key, token)
}

func TestOnDoneReportsEachKeyedRequestOnce(t *testing.T) {
	t.Parallel()
	const handlerTime = 7 * time.Millisecond
	clk := clock.NewMock()
	mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{Clock: clk})
	require.NoError(t, err)
	store := &slowStore{Store: mem, clk: clk}
	var got []idempotency.Summary
	m := newMiddleware(t, idempotency.Options{
		Store: store, Clock: clk, MaxBodyBytes: 10,
		OnDone: func(_ *http.Request, s idempotency.Summary) { got = append(got, s) },
	})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clk.Add(handlerTime)
		switch r.URL.Path {
		case "/unavailable":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/panic":
			panic("boom")
		default:
			w.WriteHeader(http.StatusCreated)
		}
	}))
	storeDown := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name  string
		rq    req
		setup func()
		want  idempotency.Summary // Elapsed and StoreTime are checked from StoreCalls and ran
		ran   bool                // the handler ran
	}{
		{name: "fresh key", rq: req{key: "a", body: "{}"}, ran: true,
			want: idempotency.Summary{Outcome: idempotency.OutcomeExecuted, Status: http.StatusCreated, StoreCalls: 2}},
		{name: "replay", rq: req{key: "a", body: "{}"},
			want: idempotency.Summary{Outcome: idempotency.OutcomeReplayed, Status: http.StatusCreated, StoreCalls: 1}},
		{name: "key reused", rq: req{key: "a", body: `{"x":1}`},
			want: idempotency.Summary{Outcome: idempotency.OutcomeMismatch, Status: http.StatusUnprocessableEntity, StoreCalls: 1}},
		{name: "malformed key", rq: req{key: `"open`},
			want: idempotency.Summary{Outcome: idempotency.OutcomeRejected, Status: http.StatusBadRequest}},
		{name: "body too large", rq: req{key: "b", body: strings.Repeat("x", 11)},
			want: idempotency.Summary{Outcome: idempotency.OutcomeRejected, Status: http.StatusRequestEntityTooLarge}},
		{name: "retryable status", rq: req{key: "c", path: "/unavailable"}, ran: true,
			want: idempotency.Summary{Outcome: idempotency.OutcomeReleased, Status: http.StatusServiceUnavailable, StoreCalls: 2}},
		{name: "store down", rq: req{key: "d"}, setup: func() { store.claimErr = storeDown },
			want: idempotency.Summary{Outcome: idempotency.OutcomeStoreFailed, Status: http.StatusServiceUnavailable, StoreCalls: 2, Err: storeDown}}, // Claim, and the Release that settles it
		{name: "lease lost", rq: req{key: "e"}, ran: true, setup: func() { store.claimErr, store.completeErr = nil, idempotency.ErrLeaseLost },
			want: idempotency.Summary{Outcome: idempotency.OutcomeLeaseLost, Status: http.StatusConflict, StoreCalls: 2, Err: idempotency.ErrLeaseLost}},
		{name: "result not saved", rq: req{key: "f"}, ran: true, setup: func() { store.completeErr = idempotency.ErrStoreFull },
			want: idempotency.Summary{Outcome: idempotency.OutcomeLeaseLost, Status: http.StatusCreated, StoreCalls: 2, Err: idempotency.ErrStoreFull}},
	} {
		got = nil
		if tc.setup != nil {
			tc.setup()
		}
		rec := serveDirect(h, tc.rq)
		require.Len(t, got, 1, "%s: one report", tc.name)
		s := got[0]
		assert.Equal(t, tc.want.Status, rec.Code, "%s: the status sent", tc.name)
		assert.Equal(t, tc.want.Outcome, s.Outcome, "%s: outcome %v", tc.name, s.Outcome)
		assert.Equal(t, tc.want.Status, s.Status, tc.name)
		assert.Equal(t, tc.want.StoreCalls, s.StoreCalls, tc.name)
		assert.Equal(t, time.Duration(s.StoreCalls)*storeCallTime, s.StoreTime, tc.name)
		wantElapsed := s.StoreTime
		if tc.ran {
			wantElapsed += handlerTime
		}
		assert.Equal(t, wantElapsed, s.Elapsed, tc.name)
		if tc.want.Err == nil {
			assert.NoError(t, s.Err, tc.name)
		} else {
			assert.ErrorIs(t, s.Err, tc.want.Err, tc.name)
		}
	}
	store.completeErr = nil

	t.Run("in flight", func(t *testing.T) {
		o := newOrders()
		var reports = make(chan idempotency.Summary, 2)
		srv := serve(t, newMiddleware(t, idempotency.Options{OnDone: func(_ *http.Request, s idempotency.Summary) { reports <- s }}), o)
		first := doAsync(srv, req{key: "k", body: "{}", header: waiting})
		recv(t, o.started, "the first handler")
		requireProblem(t, do(t, srv, req{key: "k", body: "{}"}), http.StatusConflict, true)
		s := recv(t, reports, "the second request's report")
		assert.Equal(t, idempotency.OutcomeInFlight, s.Outcome)
		assert.Equal(t, http.StatusConflict, s.Status)
		close(o.release)
		recv(t, first, "the first reply")
		assert.Equal(t, idempotency.OutcomeExecuted, recv(t, reports, "the first request's report").Outcome)
	})

	t.Run("panic", func(t *testing.T) {
		got = nil
		func() {
			defer func() { assert.Equal(t, "boom", recover()) }()
			serveDirect(h, req{key: "p", path: "/panic"})
		}()
		require.Len(t, got, 1, "a panicking handler is reported, before the panic goes on")
		assert.Equal(t, idempotency.OutcomeReleased, got[0].Outcome)
		assert.Zero(t, got[0].Status, "nothing was sent")
		assert.Equal(t, 2, got[0].StoreCalls, "claim and release")
	})

	t.Run("unreadable result", func(t *testing.T) {
		var s []idempotency.Summary
		hr := newMiddleware(t, idempotency.Options{Store: resultStore{[]byte("junk")}, OnDone: func(_ *http.Request, x idempotency.Summary) {
			s = append(s, x)
		}}).Handler(newOrders())
		assert.Equal(t, http.StatusInternalServerError, serveDirect(hr, req{key: "k"}).Code)
		require.Len(t, s, 1)
		assert.Equal(t, idempotency.OutcomeStoreFailed, s[0].Outcome)
		assert.Equal(t, http.StatusInternalServerError, s[0].Status)
		assert.Error(t, s[0].Err)
	})

	t.Run("not keyed: not reported", func(t *testing.T) {
		got = nil
		serveDirect(h, req{body: "{}"})
		serveDirect(h, req{method: http.MethodGet, key: "a"})
		assert.Empty(t, got)
	})
}

func TestOutcomeNames(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for o := idempotency.OutcomeExecuted; o <= idempotency.OutcomeLeaseLost; o++ {
		name := o.String()
		assert.NotEqual(t, "unknown", name, "Outcome(%d)", o)
		assert.False(t, seen[name], "Outcome(%d) = %q twice", o, name)
		seen[name] = true
	}
	assert.Equal(t, "unknown", idempotency.Outcome(0).String())
	assert.Equal(t, "in_flight", idempotency.OutcomeInFlight.String())
}
