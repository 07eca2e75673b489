package browsertest_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

var errUnavailable = errors.New("503 service unavailable")

// Failures before success of each inventory.get call, in order; 4 or more
// is a call that gives up after its 4 attempts.
var inventoryFailures = []int{0, 0, 1, 0, 2, 0, 0, 3, 4, 4}

// What the workload makes of inventory.get: 10 calls, 22 attempts, 2 of
// them given up, and 12 waits, one before each retry.
const (
	inventoryCalls    = 10
	inventoryAttempts = 22
	inventoryGaveUp   = 2
	inventoryWaits    = 12
)

// workload records, in rec, calls of three operations: inventory.get
// through retry.Do, with successes at once, after retries, and give-ups;
// payments.charge, whose small budget refuses retries; and HTTP requests
// through a retryhttp.Transport, retried and not. Time is fake: attempts
// take a few milliseconds and waits are FullJitter's, both from a fixed
// seed, so the page looks the same on every run.
func workload(t *testing.T, rec *retrydebug.Recorder) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	clock := retrytest.NewAutoClock()
	// latency stands for the time an attempt takes.
	latency := func() { clock.Add(time.Duration(5+rng.IntN(40)) * time.Millisecond) }

	inventory := retry.Policy{
		MaxAttempts: 4, BaseBackoff: 100 * time.Millisecond, MaxElapsed: time.Minute,
		Jitter: retrytest.Seeded(retry.FullJitter, 7), Clock: clock,
		Classifier: func(context.Context, retry.Attempt) retry.Decision {
			return retry.Decision{Retry: true, Reason: "503 Service Unavailable"}
		},
		OnDone: rec.OnDone("inventory.get"),
	}
	for _, fails := range inventoryFailures {
		n := 0
		_, _ = retry.Do(ctx, func(context.Context) error {
			latency()
			if n++; n <= fails {
				return errUnavailable
			}
			return nil
		}, inventory)
	}

	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1})
	require.NoError(t, err)
	rec.Budget("payments", budget)
	payments := retry.Policy{MaxElapsed: time.Minute, Clock: clock, Budget: budget, OnDone: rec.OnDone("payments.charge")}
	for _, fail := range []bool{false, false, true, true} {
		_, _ = retry.Do(ctx, func(context.Context) error {
			latency()
			if fail {
				return errUnavailable
			}
			return nil
		}, payments)
	}

	api := 0
	client := &http.Client{Transport: &retryhttp.Transport{
		Base: retrytest.HandlerTransport(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			latency()
			switch api++; {
			case r.URL.Path == "/missing":
				http.NotFound(w, r)
			case api%2 == 1:
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		})),
		Policy: retry.Policy{MaxElapsed: time.Minute, Clock: clock},
		OnDone: rec.RecordHTTP,
	}}
	get := func(ctx context.Context, url string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	route := retryhttp.WithRoute(ctx, "GET /users/{id}/orders")
	for _, id := range []string{"8412", "8413", "8414"} {
		get(route, "http://api.example/users/"+id+"/orders?key=not-shown")
	}
	get(ctx, "http://api.example/missing")
}
