// Package exactlyonce is the end-to-end proof that a retried POST has its
// effect once: clients create orders through retryhttp with automatic
// idempotency keys, across a network that refuses some requests and drops
// the answer of others, to a server behind the idempotency middleware. It
// runs with every store of this repository, under each of [Scenarios]:
// slow handlers, a store outage longer than the lease, clients that give
// up mid-request, an outer retry loop around the client; the Redis store
// adds a connection that loses replies.
package exactlyonce

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Config says how hard to push.
type Config struct {
	Requests int     // "create order" POSTs in all
	Clients  int     // goroutines sending them
	Refuse   float64 // share of requests answered 503 before the handler
	Drop     float64 // share whose handler runs and whose connection then closes without an answer
	Seed     uint64  // for the fault layer's draws

	// Slow is the share of handler runs that take Work. A slow run works
	// before it makes the order, and makes it only if its ctx is still
	// live, as a transaction commits or rolls back (503 otherwise); with
	// WorkAfter it makes the order first and then works (sends the
	// confirmation, say), and a run whose ctx ends there fails with 500,
	// its order made: the handler that item "a client disconnect cancels a
	// claimed handler" is about.
	Slow      float64
	Work      time.Duration
	WorkAfter bool

	// Lease is the middleware's Options.Lease that the scenario needs [the
	// default]; the test that builds the middleware reads it.
	Lease time.Duration

	// Outage, if set, takes the store down for that long once a third of
	// the requests have arrived, through Down, which the test sets to its
	// store's switch (see [Switch]).
	Outage time.Duration
	Down   func(down bool)

	// AttemptTimeout is the clients' Policy.AttemptTimeout [none]: shorter
	// than Work, the client gives up on a slow run and retries.
	AttemptTimeout time.Duration

	// Outer wraps each client's request in a retry.Do of its own, to which
	// the Transport defers: each outer attempt makes the request anew.
	Outer bool
}

// Default is the load: 2,000 orders from 16 goroutines, 10% of
// requests refused and 20% dropped after the handler ran.
var Default = Config{Requests: 2000, Clients: 16, Refuse: 0.10, Drop: 0.20, Seed: 1}

// Scenario is a named Config.
type Scenario struct {
	Name string
	Config
}

// Scenarios are the fault kinds every store is proven under, each on top
// of Default's refusals and lost answers unless it says otherwise. Their
// slow runs are few, since each costs a client a Retry-After (1s) of 409s.
var Scenarios = []Scenario{
	{Name: "refused and lost answers", Config: Default},
	// A store outage of 120ms, four leases: the slow runs in flight lose
	// their leases mid-work and must not make their orders, and those that
	// finish after the store is back must still have their results saved.
	// No answer is lost here: a result made while the store is down is
	// saved nowhere, and its lost answer would run again on any server.
	{Name: "store outage longer than the lease", Config: with(Default, func(c *Config) {
		c.Drop = 0
		c.Slow, c.Work = 0.05, 180*time.Millisecond
		c.Lease = 30 * time.Millisecond
		c.Outage = 120 * time.Millisecond
	})},
	// Clients give up on an attempt after 250ms; 1% of runs make the order
	// and then work 600ms, and must not be cut short by the departure. The
	// timeout is long next to a loopback request so that a loaded CI
	// machine (-race, packages tested side by side) does not time out the
	// fast ones too: only the slow runs are meant to outlast it.
	{Name: "clients give up mid-request", Config: with(Default, func(c *Config) {
		c.Slow, c.Work, c.WorkAfter = 0.01, 600*time.Millisecond, true
		c.AttemptTimeout = 250 * time.Millisecond
	})},
	{Name: "outer retry.Do around the client", Config: with(Default, func(c *Config) { c.Outer = true })},
}

func with(c Config, set func(*Config)) Config {
	set(&c)
	return c
}

// Result is what happened, for the test to log.
type Result struct {
	Orders   int           // orders the service created
	Runs     int           // handler runs, those that made no order included
	Aborted  int           // runs whose ctx ended: before the order (no order) or after it (500)
	Arrived  int64         // requests that reached the fault layer
	Refused  int64         // of those, answered 503 before the handler
	Dropped  int64         // of those, handled, then dropped unanswered
	Replays  int64         // replayed responses the middleware sent (dropped ones included)
	Retries  int64         // retries made by the clients' Transport
	Elapsed  time.Duration // from the first request to the last answer
	Attempts float64       // requests that reached the server per order
}

func (r Result) String() string {
	return fmt.Sprintf("%d orders, %d requests at the server (%.2f per order): %d refused with 503, %d dropped after the handler, %d replays; %d handler runs, %d cut short; %d client retries; %v",
		r.Orders, r.Arrived, r.Attempts, r.Refused, r.Dropped, r.Replays, r.Runs, r.Aborted, r.Retries, r.Elapsed.Round(time.Millisecond))
}

// Run serves the orders service, wrapped by wrap (the middleware under
// test) behind the fault layer, on loopback; sends cfg.Requests orders
// from cfg.Clients goroutines through retryhttp; and checks that exactly
// one order exists per request, that every client got a 2xx with the id of
// that order, that no handler ran twice for a key, and that no connection
// is left open. Goroutine leaks are the caller's TestMain's to catch.
func Run(t *testing.T, cfg Config, wrap func(http.Handler) http.Handler) Result {
	t.Helper()
	if cfg.Outage > 0 {
		require.NotNil(t, cfg.Down, "an Outage needs Down")
	}
	rnd := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed))
	svc := &service{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed+1, cfg.Seed)), orders: make(map[int]int), made: make(map[string]int)}
	f := &faults{cfg: cfg, next: wrap(svc), rnd: rnd}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnState = f.track
	srv.Start()
	defer srv.Close()
	defer f.outage.Wait()

	base := &http.Transport{MaxIdleConnsPerHost: cfg.Clients}
	defer base.CloseIdleConnections()
	var retries atomic.Int64
	p := policy(&retries)
	p.AttemptTimeout = cfg.AttemptTimeout
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:               base,
		Policy:             p,
		AutoIdempotencyKey: true,
	}}
	send := func(ref int) answer { return createOrder(client, srv.URL, ref) }
	if cfg.Outer {
		outer := policy(&retries)
		send = func(ref int) answer { return createOrderInLoop(client, srv.URL, ref, outer) }
	}

	refs := make(chan int)
	got := make([]answer, cfg.Requests)
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Clients {
		wg.Go(func() {
			for ref := range refs {
				got[ref] = send(ref)
			}
		})
	}
	for ref := range cfg.Requests {
		refs <- ref
	}
	close(refs)
	wg.Wait()
	elapsed := time.Since(start)
	f.outage.Wait()

	svc.mu.Lock()
	defer svc.mu.Unlock()
	require.Equal(t, cfg.Requests, svc.created, "orders created")
	require.Len(t, svc.orders, cfg.Requests, "one order per request")
	for ref, a := range got {
		require.NoError(t, a.err, "order %d", ref)
		require.True(t, a.status >= 200 && a.status < 300, "order %d got status %d", ref, a.status)
		require.Equal(t, svc.orders[ref], a.id, "order %d: the client got the id the server stored", ref)
	}
	require.Len(t, svc.made, cfg.Requests, "one key per request")
	for key, n := range svc.made {
		require.Equal(t, 1, n, "%d orders made for key %s", n, key)
	}

	base.CloseIdleConnections()
	assert.Eventually(t, func() bool { return f.open.Load() == 0 }, 5*time.Second, time.Millisecond,
		"connections still open: %d; a response body was not closed", f.open.Load())

	return Result{
		Orders:   svc.created,
		Runs:     svc.runs,
		Aborted:  svc.aborted,
		Arrived:  f.arrived.Load(),
		Refused:  f.refused.Load(),
		Dropped:  f.dropped.Load(),
		Replays:  f.replays.Load(),
		Retries:  retries.Load(),
		Elapsed:  elapsed,
		Attempts: float64(f.arrived.Load()) / float64(svc.created),
	}
}

// policy is how the clients retry: often, with millisecond waits, since
// the faults are on loopback. The chance that 20 attempts all meet a fault
// at 30% each is 3.5e-11 per order.
func policy(retries *atomic.Int64) retry.Policy {
	return retry.Policy{
		MaxAttempts: 20,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  4 * time.Millisecond,
		OnRetry:     func(context.Context, retry.Attempt, time.Duration) { retries.Add(1) },
	}
}

// answer is what one client got for one order.
type answer struct {
	status int
	id     int
	err    error
}

// createOrder sends one "create order" POST and reads the order id.
func createOrder(client *http.Client, url string, ref int) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang fails, not blocks, the test
	defer cancel()
	return postOrder(ctx, client, url, ref)
}

// createOrderInLoop is createOrder inside a retry.Do of the caller's: each
// outer attempt builds the request anew, and the Transport defers to it.
func createOrderInLoop(client *http.Client, url string, ref int, p retry.Policy) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var a answer
	_, err := retry.Do(ctx, func(ctx context.Context) error {
		a = postOrder(ctx, client, url, ref)
		switch {
		case a.err != nil && a.status == 0:
			return a.err // the Transport marks what it would not retry Permanent
		case a.err != nil:
			return retry.Permanent(a.err) // a final answer that is not an order
		}
		return nil
	}, p)
	if err != nil && a.err == nil {
		a.err = err
	}
	return a
}

// postOrder sends the POST on ctx.
func postOrder(ctx context.Context, client *http.Client, url string, ref int) answer {
	body, _ := json.Marshal(order{Ref: ref})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/orders", bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	var o order
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		return answer{status: resp.StatusCode, err: fmt.Errorf("status %d: %w", resp.StatusCode, err)}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return answer{status: resp.StatusCode, id: o.ID}
}

type order struct {
	ID  int `json:"id,omitempty"`
	Ref int `json:"ref"`
}

// service creates an order for each request it runs, and counts the
// orders it made for each idempotency key.
type service struct {
	cfg Config

	mu      sync.Mutex
	rnd     *rand.Rand
	runs    int
	aborted int
	created int
	orders  map[int]int    // ref → id of the first order made for it
	made    map[string]int // Idempotency-Key → orders made
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var o order
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	s.mu.Lock()
	s.runs++
	slow := s.cfg.Slow > 0 && s.rnd.Float64() < s.cfg.Slow
	s.mu.Unlock()
	if slow && !s.cfg.WorkAfter && !work(ctx, s.cfg.Work) {
		s.abort()
		http.Error(w, "canceled before the order was made", http.StatusServiceUnavailable)
		return
	}
	s.mu.Lock()
	if slow && !s.cfg.WorkAfter && ctx.Err() != nil { // the commit: only on a live ctx
		s.aborted++
		s.mu.Unlock()
		http.Error(w, "canceled before the order was made", http.StatusServiceUnavailable)
		return
	}
	s.created++
	o.ID = s.created
	if _, ok := s.orders[o.Ref]; !ok {
		s.orders[o.Ref] = o.ID
	}
	s.made[r.Header.Get("Idempotency-Key")]++
	s.mu.Unlock()
	if slow && s.cfg.WorkAfter && !work(ctx, s.cfg.Work) {
		s.abort()
		http.Error(w, "the order was made, then the confirmation failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/orders/%d", o.ID))
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(o)
}

func (s *service) abort() {
	s.mu.Lock()
	s.aborted++
	s.mu.Unlock()
}

// work takes d, or less if ctx ends first; it reports whether ctx lived.
func work(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
