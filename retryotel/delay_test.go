package retryotel_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryotel"
)

// retry.call.retry_delay counts the time no attempt ran (gRFC A96), not the
// hedge delay, during which the first attempt was running: a call that
// hedged after 50ms, lost both copies and retried after 400ms waited 400ms.
func TestRetryDelayIsIdleTimeOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink(t)
		var n atomic.Int32
		op := func(ctx context.Context) error {
			switch n.Add(1) {
			case 1: // fails at 100ms, while the hedge runs
				time.Sleep(100 * time.Millisecond)
				return errUnavailable
			case 2: // the hedge, from 50ms: fails at 120ms, and nothing runs
				time.Sleep(70 * time.Millisecond)
				return errUnavailable
			}
			return nil // the retry, after a wait of 400ms (the second retry's backoff)
		}
		p := retry.Policy{MaxAttempts: 4, Jitter: retry.NoJitter, OnDone: s.obs.OnDone("search")}
		tr, err := retry.Hedge(t.Context(), &retry.Hedger{Delay: 50 * time.Millisecond}, op, p)
		require.NoError(t, err)
		require.Equal(t, 3, tr.Attempts())
		require.Equal(t, []time.Duration{50 * time.Millisecond, 400 * time.Millisecond}, tr.Waits())

		delay := byOutcome(t, s.metrics(t)[retryotel.RetryDelayName])["ok"]
		assert.Equal(t, 1.0, delay[0])
		assert.InDelta(t, 0.4, delay[1], 1e-9, "retry_delay = %vs, want the 0.4s of idle time", delay[1])
	})
}
