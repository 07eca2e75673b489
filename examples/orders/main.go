// Command orders runs a client and a server of "create order" requests in
// one process, on loopback, across a network that fails on purpose, and
// shows that every order is made exactly once.
//
// The server is an orders handler behind the idempotency middleware (in
// memory). Between it and the clients, a fault layer answers 10% of
// requests 503 before the handler and, for 20%, runs the handler and then
// drops the connection without an answer, as a lost response would look.
// The clients send through retryhttp with AutoIdempotencyKey: one key per
// order, sent on every attempt.
//
//	go run ./examples/orders
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retryhttp"
)

const (
	clients         = 8
	ordersPerClient = 25
)

type order struct {
	ID     int    `json:"id,omitempty"`
	Client int    `json:"client"`
	Item   string `json:"item"`
}

// shop is the server's database: the orders it made.
type shop struct {
	mu     sync.Mutex
	orders []order
}

func (s *shop) createOrder(w http.ResponseWriter, r *http.Request) {
	var o order
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	o.ID = len(s.orders) + 1
	s.orders = append(s.orders, o)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(o)
}

// network is the faulty network in front of the server.
type network struct {
	next                      http.Handler
	mu                        sync.Mutex
	rnd                       *rand.Rand
	requests, refused, losses atomic.Int64
	replays                   atomic.Int64
}

func (n *network) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.requests.Add(1)
	n.mu.Lock()
	u := n.rnd.Float64()
	n.mu.Unlock()
	switch {
	case u < 0.10:
		n.refused.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	case u < 0.30:
		n.losses.Add(1)
		rec := httptest.NewRecorder()
		n.next.ServeHTTP(rec, r) // the order may be made...
		n.countReplay(rec.Header())
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // ...but its answer never arrives
		}
	default:
		n.next.ServeHTTP(w, r)
		n.countReplay(w.Header())
	}
}

func (n *network) countReplay(h http.Header) {
	if h.Get(idempotency.ReplayedHeader) == "true" {
		n.replays.Add(1)
	}
}

func main() {
	start := time.Now()
	s := &shop{}
	mw, err := idempotency.New(idempotency.Options{})
	if err != nil {
		log.Fatal(err)
	}
	nw := &network{next: mw.Handler(http.HandlerFunc(s.createOrder)), rnd: rand.New(rand.NewPCG(7, 7))}
	srv := httptest.NewServer(nw)
	defer srv.Close()

	var retries atomic.Int64
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy: retry.Policy{
			MaxAttempts: 10,
			BaseBackoff: 5 * time.Millisecond,
			MaxBackoff:  50 * time.Millisecond,
			OnRetry:     func(context.Context, retry.Attempt, time.Duration) { retries.Add(1) },
		},
		AutoIdempotencyKey: true,
	}}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		got      = map[int]order{} // order id → what the client was told
		failures []string
		example  string
	)
	for c := range clients {
		wg.Go(func() {
			for i := range ordersPerClient {
				o, trace, err := place(client, srv.URL, order{Client: c, Item: fmt.Sprintf("item-%d-%d", c, i)})
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				default:
					got[o.ID] = o
					if example == "" && trace.Attempts() > 2 {
						example = fmt.Sprintf("client %d, %s: %v", c, o.Item, trace)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	agree := len(got) == len(s.orders)
	for _, o := range s.orders {
		if got[o.ID] != o {
			agree = false
		}
	}
	fmt.Printf("%d clients placed %d orders through a network that refused %d requests with 503 and lost the answers of %d.\n",
		clients, clients*ordersPerClient, nw.refused.Load(), nw.losses.Load())
	resent := nw.requests.Load() - int64(clients*ordersPerClient) - retries.Load()
	fmt.Printf("The server saw %d requests: retryhttp retried %d times, net/http re-sent %d on reused connections by itself, and the middleware replayed %d saved answers.\n",
		nw.requests.Load(), retries.Load(), resent, nw.replays.Load())
	fmt.Printf("Orders in the server's database: %d. Orders the clients were told about: %d. The same orders: %v. Failed: %d.\n",
		len(s.orders), len(got), agree, len(failures))
	if example != "" {
		fmt.Printf("One order that needed retries: %s.\n", example)
	}
	fmt.Printf("Done in %v.\n", time.Since(start).Round(time.Millisecond))
}

// place sends one order and returns what the server said it made.
func place(client *http.Client, url string, o order) (order, retry.Trace, error) {
	var trace retry.Trace
	body, _ := json.Marshal(o)
	ctx := retryhttp.WithTrace(context.Background(), &trace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/orders", bytes.NewReader(body))
	if err != nil {
		return order{}, trace, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return order{}, trace, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return order{}, trace, fmt.Errorf("%s: status %d", o.Item, resp.StatusCode)
	}
	var made order
	err = json.NewDecoder(resp.Body).Decode(&made)
	return made, trace, err
}
