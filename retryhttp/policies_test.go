package retryhttp_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

const policiesDoc = `{"policies": {
	"default":  {"maxAttempts": 1},
	"payments": {"maxAttempts": 3, "baseBackoff": "1ms", "jitter": "none", "retryableStatusCodes": [500]},
	"feed":     {"maxAttempts": 4, "baseBackoff": "1ms", "jitter": "none"}
}}`

// countingStatus answers every request with code, counting them; before
// answering the n-th, it calls hook if set.
func countingStatus(calls *atomic.Int32, code int, hook func(n int32)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := calls.Add(1)
		if hook != nil {
			hook(n)
		}
		w.WriteHeader(code)
	})
}

func TestTransportPolicies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		ctx    func(context.Context) context.Context
		status int
		want   int32
	}{
		{"named, listed status", func(ctx context.Context) context.Context { return retryhttp.WithPolicyName(ctx, "payments") }, 500, 3},
		{"the list replaces the default statuses", func(ctx context.Context) context.Context { return retryhttp.WithPolicyName(ctx, "payments") }, 503, 1},
		{"no list: the default statuses", func(ctx context.Context) context.Context { return retryhttp.WithPolicyName(ctx, "feed") }, 503, 4},
		{"no list: 500 is not retried", func(ctx context.Context) context.Context { return retryhttp.WithPolicyName(ctx, "feed") }, 500, 1},
		{"unnamed: default", func(ctx context.Context) context.Context { return ctx }, 500, 1},
		{"unknown name: default", func(ctx context.Context) context.Context { return retryhttp.WithPolicyName(ctx, "search") }, 503, 1},
		{"WithPolicy wins", func(ctx context.Context) context.Context {
			return retryhttp.WithPolicy(retryhttp.WithPolicyName(ctx, "payments"), retry.Policy{MaxAttempts: 2, BaseBackoff: 1})
		}, 503, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				cfg, err := retryconfig.Parse([]byte(policiesDoc))
				require.NoError(t, err)
				var calls atomic.Int32
				tr := &retryhttp.Transport{
					Base:     retrytest.HandlerTransport(countingStatus(&calls, tt.status, nil)),
					Policy:   retry.Policy{MaxAttempts: 9}, // Policies takes its place
					Policies: retryconfig.NewLive(cfg),
				}
				req := get(t, "http://svc.test/")
				resp, err := tr.RoundTrip(req.WithContext(tt.ctx(req.Context())))
				if err == nil {
					resp.Body.Close()
				}
				assert.Equal(t, tt.want, calls.Load(), "attempts")
			})
		})
	}
}

// A request takes its policy once, at its start: an update during its
// attempts does not change it, and the next request gets the new one. A
// rejected update changes nothing.
func TestTransportPoliciesUpdateInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg, err := retryconfig.Parse([]byte(policiesDoc))
		require.NoError(t, err)
		live := retryconfig.NewLive(cfg)
		var calls atomic.Int32
		hook := func(n int32) {
			if n == 1 {
				require.Error(t, live.Update([]byte(`{"policies": {"payments": {"maxAttempts": "1"}}}`)))
				require.NoError(t, live.Update([]byte(`{"policies": {"payments": {"maxAttempts": 1, "retryableStatusCodes": [500]}}}`)))
			}
		}
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(countingStatus(&calls, 500, hook)), Policies: live}
		ctx := retryhttp.WithPolicyName(context.Background(), "payments")

		resp, err := tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, int32(3), calls.Load(), "the request in flight keeps the policy it started with")
		assert.Equal(t, uint64(2), live.Version())

		calls.Store(0)
		resp, err = tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, int32(1), calls.Load(), "the next request takes the new policy")
	})
}

// An outer retry.Do around a Transport with Policies: the inner request
// makes one attempt and leaves retrying to the outer loop, as with any
// Policy, so that the layers do not multiply their attempts.
func TestTransportPoliciesNested(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg, err := retryconfig.Parse([]byte(policiesDoc))
		require.NoError(t, err)
		var calls atomic.Int32
		client := &http.Client{Transport: &retryhttp.Transport{
			Base:     retrytest.HandlerTransport(countingStatus(&calls, 500, nil)),
			Policies: retryconfig.NewLive(cfg),
		}}
		ctx := retryhttp.WithPolicyName(context.Background(), "payments")
		_, err = retry.Do(ctx, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			return nil
		}, retry.Policy{MaxAttempts: 2, BaseBackoff: 1, Jitter: retry.NoJitter})
		require.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, int32(2), calls.Load(), "the outer loop's 2 attempts, one request each, not 2×3")
	})
}
