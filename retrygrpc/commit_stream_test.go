package retrygrpc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A server stream that has sent its response header has committed (gRFC
// A6) and belongs to the caller's ctx alone: neither AttemptTimeout nor
// MaxElapsed ends it while it waits for its first message, when the caller
// calls Recv first (the usual way) as when it calls Header first.
func TestServerStreamCommittedByHeaderOutlivesTimeouts(t *testing.T) {
	for _, headerFirst := range []bool{false, true} {
		name := map[bool]string{false: "Recv first", true: "Header first"}[headerFirst]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(reply{header: true, delay: 5 * time.Second, messages: 2})
				p := fast()
				p.AttemptTimeout = time.Second
				p.MaxElapsed = 2 * time.Second
				c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))

				var tr retry.Trace
				st := watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req")
				if headerFirst {
					md, err := st.Header()
					require.NoError(t, err)
					assert.Equal(t, []string{"header"}, md.Get("attempt"))
				}
				start := time.Now()
				got, err := drain(st)
				require.NoError(t, err)
				assert.Equal(t, "ab", got)
				assert.Equal(t, []string{""}, reasons(tr), "one attempt, committed")
				assert.Len(t, srv.seen(), 1)
				assert.GreaterOrEqual(t, time.Since(start), 5*time.Second, "the stream ran past both limits")
			})
		})
	}
}

// MaxElapsed bounds the first attempt of a server stream, the one NewStream
// opened before the retry loop began, as it bounds every later one.
func TestServerStreamMaxElapsedBoundsFirstAttempt(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Hour} {
		t.Run("AttemptTimeout "+timeout.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(reply{block: true})
				p := fast()
				p.MaxElapsed = 50 * time.Millisecond
				p.AttemptTimeout = timeout
				c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))

				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
				defer cancel()
				st := watch(ctx, t, c, "req")
				start := time.Now()
				_, err := drain(st)
				require.Error(t, err)
				assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
				assert.ErrorIs(t, err, retry.ErrGaveUp, "MaxElapsed, not the caller's ctx, ended it")
				assert.Equal(t, p.MaxElapsed, time.Since(start))
			})
		})
	}
}
