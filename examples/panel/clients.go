package main

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
)

// maxInFlight bounds the calls running at once, so that a slow service
// does not pile up goroutines.
const maxInFlight = 32

// clients calls the service at base, through a retrying Transport and
// through retry.Do, and records every call in a Recorder.
type clients struct {
	base     string
	client   *http.Client
	payments retry.Policy // a Policy of its own, with a shared Budget
	cache    retry.Policy // for an in-process call retried by retry.Do
}

func newClients(base string, rec *retrydebug.Recorder) (*clients, error) {
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	if err != nil {
		return nil, err
	}
	rec.Budget("payments", budget)
	transport := &retryhttp.Transport{
		Policy: retry.Policy{
			MaxAttempts: 4,
			BaseBackoff: 50 * time.Millisecond,
			MaxBackoff:  time.Second,
			// MaxElapsed also makes Do time a call from its first attempt,
			// so the panel's elapsed times include first tries.
			MaxElapsed: 3 * time.Second,
		},
		AutoIdempotencyKey: true, // so that POST /payments may be retried
		AttemptHeader:      "Retry-Attempt",
		OnDone:             rec.RecordHTTP, // one line: every request reaches the panel
	}
	return &clients{
		base:   base,
		client: &http.Client{Transport: transport},
		payments: retry.Policy{
			MaxAttempts: 3,
			BaseBackoff: 100 * time.Millisecond,
			MaxElapsed:  3 * time.Second,
			Budget:      budget,
		},
		cache: retry.Policy{
			MaxAttempts: 3,
			BaseBackoff: 20 * time.Millisecond,
			MaxElapsed:  time.Second,
			OnDone:      rec.OnDone("cache.get"), // one line for retry.Do
		},
	}, nil
}

// run makes about rate calls a second until ctx ends, then waits for the
// calls in flight.
func (c *clients) run(ctx context.Context, rate float64) {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxInFlight)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			continue // too many in flight: skip this tick
		}
		wg.Go(func() {
			defer func() { <-slots }()
			c.one(ctx)
		})
	}
}

// one makes a call of a random kind.
func (c *clients) one(ctx context.Context) {
	id := strconv.Itoa(rand.IntN(10000))
	switch r := rand.Float64(); {
	case r < 0.35:
		c.get(retryhttp.WithRoute(ctx, "GET /users/{id}/orders"), "/users/"+id+"/orders")
	case r < 0.55:
		c.get(retryhttp.WithRoute(ctx, "GET /inventory/{sku}"), "/inventory/"+id)
	case r < 0.70:
		ctx = retryhttp.WithPolicy(retryhttp.WithRoute(ctx, "POST /payments"), c.payments)
		c.send(ctx, http.MethodPost, "/payments")
	case r < 0.82:
		// No route: the panel names it by method and origin, never by path.
		c.get(ctx, "/catalog/"+id+"?session=not-shown")
	default:
		_, _ = retry.Do(ctx, lookupCache, c.cache)
	}
}

func (c *clients) get(ctx context.Context, path string) { c.send(ctx, http.MethodGet, path) }

func (c *clients) send(ctx context.Context, method, path string) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return // the panel has it: the Transport recorded the request
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

var errCacheMiss = errors.New("cache: connection reset")

// lookupCache stands for a call to an in-process cache client that fails
// now and then.
func lookupCache(ctx context.Context) error {
	if rand.Float64() < 0.3 {
		return errCacheMiss
	}
	return nil
}
