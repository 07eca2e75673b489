package retrygrpc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
)

// TestHedgingFollowsA6 checks the interceptor's hedging against the text
// of gRFC A6 ("Hedging Policy", "Summary of Retry and Hedging Logic",
// "Throttling Retry Attempts and Hedged RPCs", "Pushback"), one row per
// rule, quoted. It stands in for a differential test against grpc-go,
// which parses hedgingPolicy but does not implement it (A6's header:
// "Implemented in: ... Go except hedging"): a ClientConn given the same
// service config sends one copy of every call.
func TestHedgingFollowsA6(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		a6          string // the rule, as A6 writes it
		maxAttempts int
		delay       string
		nonFatal    []string
		script      []copyReply // by copy: the n-th copy gets script[n]
		want        []time.Duration
		wantCode    codes.Code
		cancelled   []bool // by copy: ended by the interceptor
	}{
		{
			a6:          "the original RPC is sent immediately ... After hedgingDelay has elapsed without a successful response, the second RPC will be issued ... up to maxAttempts",
			maxAttempts: 4, delay: "0.5s",
			script:    []copyReply{{after: 2 * time.Second}},
			want:      []time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms},
			wantCode:  codes.OK,
			cancelled: []bool{false, true, true, true},
		},
		{
			a6:          "OK: Successful response, cancel previous and pending hedges",
			maxAttempts: 3, delay: "0.1s",
			script:    []copyReply{{after: time.Second}, {after: 10 * ms}},
			want:      []time.Duration{0, 100 * ms},
			wantCode:  codes.OK,
			cancelled: []bool{true, false},
		},
		{
			a6:          "Fatal Status Code: Cancel previous and pending hedges",
			maxAttempts: 3, delay: "0.1s", nonFatal: []string{"UNAVAILABLE"},
			script:    []copyReply{{after: time.Second}, {after: 10 * ms, code: codes.InvalidArgument}},
			want:      []time.Duration{0, 100 * ms},
			wantCode:  codes.InvalidArgument,
			cancelled: []bool{true, false},
		},
		{
			a6:          "Non-Fatal Status Code without Server Pushback: Immediately send next scheduled hedged request, if any. Subsequent hedged requests will resume at hedgingDelay",
			maxAttempts: 3, delay: "0.1s", nonFatal: []string{"UNAVAILABLE"},
			script:   []copyReply{{after: 10 * ms, code: codes.Unavailable}, {after: time.Second, code: codes.Unavailable}},
			want:     []time.Duration{0, 10 * ms, 110 * ms},
			wantCode: codes.Unavailable,
		},
		{
			a6:          "If all instances of a hedged RPC fail, there are no additional retry attempts",
			maxAttempts: 3, delay: "0.1s", nonFatal: []string{"UNAVAILABLE"},
			script:   []copyReply{{code: codes.Unavailable}},
			want:     []time.Duration{0, 0, 0},
			wantCode: codes.Unavailable,
		},
		{
			a6:          "maxAttempts ... higher values will be treated as equal to the maximum value [5]",
			maxAttempts: 9, delay: "0s", nonFatal: []string{"UNAVAILABLE"},
			script:   []copyReply{{code: codes.Unavailable}},
			want:     []time.Duration{0, 0, 0, 0, 0},
			wantCode: codes.Unavailable,
		},
		{
			a6:          "Pushback: Don't Retry: Don't send any more hedged requests",
			maxAttempts: 3, delay: "0.1s", nonFatal: []string{"UNAVAILABLE"},
			script:   []copyReply{{after: 10 * ms, code: codes.Unavailable, pushback: "-1"}},
			want:     []time.Duration{0},
			wantCode: codes.Unavailable,
		},
		{
			a6:          "Hedged RPCs are returned to the client application when all outstanding and pending requests have either received a response or been canceled [a pushback that says stop leaves the copy already sent to answer]",
			maxAttempts: 3, delay: "0.1s", nonFatal: []string{"UNAVAILABLE"},
			script:   []copyReply{{after: time.Second}, {after: 10 * ms, code: codes.Unavailable, pushback: "-1"}},
			want:     []time.Duration{0, 100 * ms},
			wantCode: codes.OK,
		},
		{
			a6:          "Pushback: Retry in n ms: Send next hedged request in n ms. Subsequent hedged requests will resume at n + hedgingDelay",
			maxAttempts: 3, delay: "0.1s", nonFatal: []string{"UNAVAILABLE"},
			script:   []copyReply{{after: 10 * ms, code: codes.Unavailable, pushback: "300"}, {after: time.Second, code: codes.Unavailable}},
			want:     []time.Duration{0, 310 * ms, 410 * ms},
			wantCode: codes.Unavailable,
		},
		{
			a6:          "hedgingDelay ... 0s: all copies at once [A6's example with hedgingDelay \"0s\"]",
			maxAttempts: 3, delay: "0s",
			script:    []copyReply{{after: time.Second}, {after: time.Second}, {after: 10 * ms}},
			want:      []time.Duration{0, 0, 0},
			wantCode:  codes.OK,
			cancelled: []bool{true, true, false},
		},
	} {
		t.Run(tc.a6, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newHedgeServer(tc.script...)
				c := dialHedged(t, srv, hedgingConfig(t, tc.maxAttempts, tc.delay, tc.nonFatal, ""))
				_, err := callHedged(t.Context(), c)
				assert.Equal(t, tc.wantCode, status.Code(err), "%v", err)
				assert.Equal(t, tc.want, srv.arrivals(), "when each copy was sent")
				if tc.cancelled != nil {
					synctest.Wait()
					var got []bool
					for _, cp := range srv.copies() {
						got = append(got, cp.cancelled)
					}
					assert.Equal(t, tc.cancelled, got, "copies cancelled")
				}
			})
		})
	}
}

// TestHedgingThrottledAsA6Says: "The first outgoing RPC will always be
// sent, but subsequent hedged RPCs will only be sent if token_count is
// greater than the threshold" (maxTokens/2), and "Every failed RPC will
// decrement the token_count by 1" where failed means a non-fatal status;
// "Every successful RPC will increment the token_count by tokenRatio".
func TestHedgingThrottledAsA6Says(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(copyReply{code: codes.Unavailable})
		// maxTokens 4, threshold 2: each copy fails at once, which sends
		// the next at once while more than 2 tokens are left.
		c := dialHedged(t, srv, hedgingConfig(t, 5, "0.1s", []string{"UNAVAILABLE"}, `{"maxTokens": 4, "tokenRatio": 1}`))
		perCall := func() int {
			before := len(srv.copies())
			_, err := callHedged(t.Context(), c)
			assert.Equal(t, codes.Unavailable, status.Code(err))
			return len(srv.copies()) - before
		}
		assert.Equal(t, 2, perCall(), "4 tokens: the first copy, then one hedge at 3 tokens; 2 left")
		var tr retry.Trace
		_, err := callHedged(retrygrpc.WithTrace(t.Context(), &tr), c)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, "hedged: 1 copies sent; Unavailable; budget refused the next copy", tr.Last().Reason)
		assert.Equal(t, 1, perCall(), "1 token: the first copy only; 0 left")
		srv.mu.Lock()
		srv.script = []copyReply{{}} // OK from now on: +1 token each
		srv.mu.Unlock()
		before := len(srv.copies())
		for range 4 {
			_, err := callHedged(t.Context(), c)
			assert.NoError(t, err)
		}
		assert.Equal(t, 4, len(srv.copies())-before, "one copy each: they answer at once")
		srv.mu.Lock()
		srv.script = []copyReply{{code: codes.Unavailable}}
		srv.mu.Unlock()
		assert.Equal(t, 2, perCall(), "back to 4 tokens")
	})
}
