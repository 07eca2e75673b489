package retryhttp_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Transport.OnDone sees a request that a panic ended, once, before the
// panic goes on: from Base or a hook, on the plain path and the hedged one,
// during the attempts or after them.
func TestOnDoneSeesAPanic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		arm      func(tr *retryhttp.Transport)
		attempts int // the attempts the Trace shows; -1: not checked
	}{
		{"Base", func(tr *retryhttp.Transport) {
			tr.Base = panicOnCall(tr.Base, 2, false)
		}, 2},
		{"Base, hedged", func(tr *retryhttp.Transport) {
			tr.Base = panicOnCall(tr.Base, 2, false)
			tr.Hedger = &retry.Hedger{Delay: time.Hour}
		}, -1}, // what the Trace keeps after a panic is Hedge's to say
		{"Classifier", func(tr *retryhttp.Transport) {
			tr.Policy.Classifier = func(context.Context, retry.Attempt) retry.Decision { panic("boom") }
		}, 1},
		{"Logger, giving up", func(tr *retryhttp.Transport) {
			tr.Policy.MaxAttempts = 2
			tr.Logger = slog.New(panicOnMessage("retryhttp: giving up"))
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			var got retryhttp.Summary
			tr := &retryhttp.Transport{
				Base:   retrytest.HandlerTransport(status(503)),
				Policy: retry.Policy{Clock: retrytest.NewAutoClock()},
				OnDone: func(_ context.Context, s retryhttp.Summary) {
					calls.Add(1)
					got = s
				},
			}
			tt.arm(tr)
			req := get(t, "http://svc.test/")
			req = req.WithContext(retryhttp.WithRoute(req.Context(), "GET /thing"))
			require.PanicsWithValue(t, "boom", func() { _, _ = tr.RoundTrip(req) })
			require.Equal(t, int32(1), calls.Load(), "OnDone calls")
			assert.Equal(t, "GET /thing", got.Route)
			assert.Zero(t, got.Status)
			assert.Error(t, got.Err)
			if tt.attempts >= 0 {
				assert.Equal(t, tt.attempts, got.Trace.Attempts())
			}
		})
	}
}

// A panic in OnDone itself goes on, and OnDone is not called again for it.
func TestOnDoneThatPanicsIsCalledOnce(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	tr := &retryhttp.Transport{
		Base: retrytest.HandlerTransport(status(200)),
		OnDone: func(context.Context, retryhttp.Summary) {
			calls.Add(1)
			panic("boom")
		},
	}
	require.PanicsWithValue(t, "boom", func() { _, _ = tr.RoundTrip(get(t, "http://svc.test/")) })
	assert.Equal(t, int32(1), calls.Load())
}

// Both OnDone hooks see a panic: the Policy's, as retry.Do promises, and
// the Transport's.
func TestBothOnDonesSeeAPanic(t *testing.T) {
	t.Parallel()
	var policyDone, transportDone atomic.Int32
	tr := &retryhttp.Transport{
		Base: panicOnCall(retrytest.HandlerTransport(status(503)), 2, false),
		Policy: retry.Policy{
			Clock:  retrytest.NewAutoClock(),
			OnDone: func(_ context.Context, tr retry.Trace, _ error) { policyDone.Add(1) },
		},
		OnDone: func(_ context.Context, s retryhttp.Summary) {
			transportDone.Add(1)
			assert.Equal(t, retry.StopPanicked, s.Trace.Stop())
		},
	}
	require.PanicsWithValue(t, "boom", func() { _, _ = tr.RoundTrip(get(t, "http://svc.test/")) })
	assert.Equal(t, int32(1), policyDone.Load())
	assert.Equal(t, int32(1), transportDone.Load())
}

// panicOnMessage is a slog.Handler that panics with "boom" on a record
// with message msg.
type panicOnMessage string

func (panicOnMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h panicOnMessage) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h panicOnMessage) WithGroup(string) slog.Handler          { return h }

func (h panicOnMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == string(h) {
		panic("boom")
	}
	return nil
}
