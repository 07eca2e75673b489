package retryhttp_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A response replayed by an idempotency server is the saved answer for its
// key and can never change: retrying it gets it again. The Transport
// returns it at once, whatever its status and however it is sent.
func TestReplayedAnswerIsFinal(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]http.HandlerFunc{
		"409 with Retry-After": status(409, "Retry-After", "1", "Idempotent-Replayed", "true"),
		"429":                  status(429, "Idempotent-Replayed", "true"),
		"503, any case":        status(503, "idempotent-replayed", " TRUE"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, hedged := range []bool{false, true} {
				srv := newServer(t, answer, status(201))
				clk := retrytest.NewClock()
				tr := &retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}
				if hedged {
					tr.Hedger, tr.HedgeWrites = &retry.Hedger{Delay: time.Hour}, true
				}
				r := do(t, srv.client(tr), clk, newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x")))
				require.NoError(t, r.err)
				assert.NotEqual(t, 201, r.resp.StatusCode, "hedged=%v: the replay is the answer", hedged)
				assert.Equal(t, 1, srv.hits(), "hedged=%v: not retried", hedged)
				assert.Equal(t, retry.StopNotRetryable, r.trace.Stop(), "hedged=%v", hedged)
				assert.Contains(t, r.trace.Last().Reason, "replayed", "hedged=%v: the Trace says why", hedged)
			}
		})
	}
}

// The same header without "true" is no replay: the answer is retried as
// usual.
func TestNotReplayedAnswerIsRetried(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(409, "Retry-After", "1", "Idempotent-Replayed", "false"), status(201))
	clk := retrytest.NewClock()
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}), clk,
		newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x")))
	require.NoError(t, r.err)
	assert.Equal(t, 201, r.resp.StatusCode)
	assert.Equal(t, 2, srv.hits())
}

// Inside an outer retry loop, a replayed answer comes back as the response,
// not as an error for the outer loop to retry.
func TestReplayedAnswerIsFinalInsideAnOuterLoop(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(409, "Retry-After", "1", "Idempotent-Replayed", "true"), status(201))
	c := srv.client(&retryhttp.Transport{AutoIdempotencyKey: true})
	var got []int
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		got = append(got, resp.StatusCode)
		return nil
	}, retry.Policy{})
	require.NoError(t, err)
	assert.Equal(t, []int{409}, got)
	assert.Equal(t, 1, srv.hits())
}
