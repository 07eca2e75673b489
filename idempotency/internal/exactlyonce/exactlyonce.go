// Package exactlyonce is the end-to-end proof that a retried POST has its
// effect once: clients create orders through retryhttp with automatic
// idempotency keys, across a network that refuses some requests and drops
// the answer of others, to a server behind the idempotency middleware. It
// runs with every store of this repository.
package exactlyonce

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
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
}

// Default is the load: 2,000 orders from 16 goroutines, 10% of
// requests refused and 20% dropped after the handler ran.
var Default = Config{Requests: 2000, Clients: 16, Refuse: 0.10, Drop: 0.20, Seed: 1}

// Result is what happened, for the test to log.
type Result struct {
	Orders   int           // orders the service created
	Arrived  int64         // requests that reached the fault layer
	Refused  int64         // of those, answered 503 before the handler
	Dropped  int64         // of those, handled, then dropped unanswered
	Replays  int64         // replayed responses the middleware sent (dropped ones included)
	Retries  int64         // retries made by the clients' Transport
	Elapsed  time.Duration // from the first request to the last answer
	Attempts float64       // requests that reached the server per order
}

func (r Result) String() string {
	return fmt.Sprintf("%d orders, %d requests at the server (%.2f per order): %d refused with 503, %d dropped after the handler, %d replays; %d client retries; %v",
		r.Orders, r.Arrived, r.Attempts, r.Refused, r.Dropped, r.Replays, r.Retries, r.Elapsed.Round(time.Millisecond))
}

// Run serves the orders service, wrapped by wrap (the middleware under
// test) behind the fault layer, on loopback; sends cfg.Requests orders
// from cfg.Clients goroutines through retryhttp; and checks that exactly
// one order exists per request, that every client got a 2xx with the id of
// that order, that no handler ran twice for a key, and that no connection
// is left open. Goroutine leaks are the caller's TestMain's to catch.
func Run(t *testing.T, cfg Config, wrap func(http.Handler) http.Handler) Result {
	t.Helper()
	svc := &service{orders: make(map[int]int), runs: make(map[string]int)}
	f := &faults{cfg: cfg, next: wrap(svc), rnd: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed))}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnState = f.track
	srv.Start()
	defer srv.Close()

	base := &http.Transport{MaxIdleConnsPerHost: cfg.Clients}
	defer base.CloseIdleConnections()
	var retries atomic.Int64
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:               base,
		Policy:             policy(&retries),
		AutoIdempotencyKey: true,
	}}

	refs := make(chan int)
	got := make([]answer, cfg.Requests)
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Clients {
		wg.Go(func() {
			for ref := range refs {
				got[ref] = createOrder(client, srv.URL, ref)
			}
		})
	}
	for ref := range cfg.Requests {
		refs <- ref
	}
	close(refs)
	wg.Wait()
	elapsed := time.Since(start)

	svc.mu.Lock()
	defer svc.mu.Unlock()
	require.Equal(t, cfg.Requests, svc.created, "orders created")
	require.Len(t, svc.orders, cfg.Requests, "one order per request")
	for ref, a := range got {
		require.NoError(t, a.err, "order %d", ref)
		require.True(t, a.status >= 200 && a.status < 300, "order %d got status %d", ref, a.status)
		require.Equal(t, svc.orders[ref], a.id, "order %d: the client got the id the server stored", ref)
	}
	require.Len(t, svc.runs, cfg.Requests, "one key per request")
	for key, n := range svc.runs {
		require.Equal(t, 1, n, "the handler ran %d times for key %s", n, key)
	}

	base.CloseIdleConnections()
	assert.Eventually(t, func() bool { return f.open.Load() == 0 }, 5*time.Second, time.Millisecond,
		"connections still open: %d; a response body was not closed", f.open.Load())

	return Result{
		Orders:   svc.created,
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

// service creates an order for each request it runs, and counts its runs
// for each idempotency key.
type service struct {
	mu      sync.Mutex
	created int
	orders  map[int]int    // ref → id of the first order made for it
	runs    map[string]int // Idempotency-Key → runs
}

func (s *service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var o order
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.created++
	o.ID = s.created
	if _, ok := s.orders[o.Ref]; !ok {
		s.orders[o.Ref] = o.ID
	}
	s.runs[r.Header.Get("Idempotency-Key")]++
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/orders/%d", o.ID))
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(o)
}

// faults is the faulty network in front of the server: it answers some
// requests 503 before the handler, and runs the handler for others and
// then closes the connection without an answer, as a proxy or a network
// that loses a response would.
type faults struct {
	cfg  Config
	next http.Handler

	mu  sync.Mutex
	rnd *rand.Rand

	arrived, refused, dropped, replays atomic.Int64
	open                               atomic.Int64 // connections not yet closed or hijacked
}

func (f *faults) track(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		f.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		f.open.Add(-1)
	}
}

func (f *faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.arrived.Add(1)
	f.mu.Lock()
	u := f.rnd.Float64()
	f.mu.Unlock()
	switch {
	case u < f.cfg.Refuse:
		f.refused.Add(1)
		http.Error(w, "injected fault", http.StatusServiceUnavailable)
	case u < f.cfg.Refuse+f.cfg.Drop:
		f.dropped.Add(1)
		rec := httptest.NewRecorder()
		f.next.ServeHTTP(rec, r)
		f.countReplay(rec.Header())
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err) // net/http closes the connection: the drop happens anyway
		}
		conn.Close()
	default:
		f.next.ServeHTTP(&replayCounter{ResponseWriter: w, f: f}, r)
	}
}

func (f *faults) countReplay(h http.Header) {
	if h.Get("Idempotent-Replayed") == "true" {
		f.replays.Add(1)
	}
}

// replayCounter counts the replays that go out.
type replayCounter struct {
	http.ResponseWriter
	f *faults
}

func (c *replayCounter) WriteHeader(code int) {
	c.f.countReplay(c.Header())
	c.ResponseWriter.WriteHeader(code)
}
