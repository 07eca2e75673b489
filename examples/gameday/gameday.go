package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
)

// policies is the service's retry configuration, with the game day's
// faults declared on the orders policy: a config change, armed by the
// program's switch.
const policies = `{
  "budgets": {"shop": {"maxTokens": 20, "tokenRatio": 0.5}},
  "policies": {
    "orders": {"maxAttempts": 5, "baseBackoff": "10ms", "maxBackoff": "100ms", "budget": "shop",
      "chaos": [
        {"name": "slow", "rate": 0.1, "latency": "200ms"},
        {"name": "overloaded", "rate": 0.2, "status": 503},
        {"name": "answer lost", "rate": 0.05, "drop": true}
      ]},
    "ship": {"maxAttempts": 10, "baseBackoff": "10ms", "maxBackoff": "100ms"}
  }
}`

// options are what a run is made of.
type options struct {
	Orders, Clients int
	Seed            int64
	LatencyScale    float64 // of the faults' latency: 1 is the document's 200ms
	Retries         bool    // the library's retries, or one attempt each
}

// result is what a run measured.
type result struct {
	Calls, Succeeded int
	P99              time.Duration
	OrdersTwice      int
	Shipments        int // enqueued, one per order the user was told of
	Shipped          int // shipments the shop made
	ShippedTwice     int
	DeadLetters      int
	Faults           []chaos.FaultStats
	Why              map[string]int // the calls with retries that failed, by why their retries stopped
}

func run(ctx context.Context, opt options) (result, error) {
	cfg, err := retryconfig.Parse([]byte(policies))
	if err != nil {
		return result{}, err
	}
	sw := chaos.NewSwitch(opt.Seed)
	faults := cfg.Chaos("orders", sw)
	for i := range faults {
		faults[i].Latency = time.Duration(float64(faults[i].Latency) * opt.LatencyScale)
	}
	s := newShop()
	mw, err := idempotency.New(idempotency.Options{})
	if err != nil {
		return result{}, err
	}
	// The faults are outermost, as a network's would be: a dropped answer
	// is one the middleware saved.
	srv := httptest.NewServer(chaos.Handler(mw.Handler(s.routes()), faults...))
	defer srv.Close()

	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	users := &http.Client{Transport: base}
	shipPolicy := retry.Policy{MaxAttempts: 1}
	if opt.Retries {
		users.Transport = &retryhttp.Transport{Base: base, Policy: cfg.Policy("orders"), AutoIdempotencyKey: true}
		shipPolicy = cfg.Policy("ship")
	}

	ob, closeOutbox, err := openOutbox(shipPolicy, &http.Client{Transport: base})
	if err != nil {
		return result{}, err
	}
	defer closeOutbox()
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- ob.Run(runCtx) }()
	defer func() { stop(); <-ran }()

	sw.On()
	var (
		mu    sync.Mutex
		times []time.Duration
		keys  []string
		ok    int
		why   = map[string]int{}
		errs  []error
		wg    sync.WaitGroup
	)
	for c := range opt.Clients {
		wg.Go(func() {
			for i := c; i < opt.Orders; i += opt.Clients {
				start := time.Now()
				var trace retry.Trace // why a call with retries stopped
				made, err := place(retryhttp.WithTrace(ctx, &trace), users, srv.URL, order{Client: c, Item: fmt.Sprintf("item-%d", i)})
				took := time.Since(start)
				var key string
				failed := err != nil // the user's call failed: a result, not an error of the run
				if !failed {
					key, err = enqueueShipment(ctx, ob, srv.URL, made)
				}
				mu.Lock()
				times = append(times, took)
				switch {
				case ctx.Err() != nil || err != nil && !failed:
					errs = append(errs, err)
				case !failed:
					ok++
					keys = append(keys, key)
				case opt.Retries:
					why[trace.Stop().String()]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return result{}, errs[0]
	}
	dead := 0
	for _, k := range keys {
		switch _, err := ob.Wait(ctx, k); {
		case errors.Is(err, outbox.ErrFailed):
			dead++ // a dead letter: the outbox gave up on it
		case err != nil:
			return result{}, err
		}
	}
	sw.Off()
	return result{
		Calls: opt.Orders, Succeeded: ok, P99: p99(times),
		OrdersTwice: s.twice(s.orders), Shipments: len(keys), Shipped: s.count(s.shipments),
		ShippedTwice: s.twice(s.shipments), DeadLetters: dead, Faults: sw.Stats().Faults, Why: why,
	}, nil
}

// openOutbox opens an outbox over a file journal in a directory of its
// own, whose ships go through client.
func openOutbox(p retry.Policy, client *http.Client) (*outbox.Outbox, func(), error) {
	dir, err := os.MkdirTemp("", "gameday")
	if err != nil {
		return nil, nil, err
	}
	j, err := outbox.OpenFile(filepath.Join(dir, "journal"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	closeAll := func() { j.Close(); os.RemoveAll(dir) }
	o, err := outbox.New(j, outbox.Options{Policy: p, Concurrency: 8})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	o.Handle("ship", outbox.HTTPHandler(client, nil))
	return o, closeAll, nil
}

// place sends one order, as a user's call, and returns what the shop made.
func place(ctx context.Context, client *http.Client, url string, o order) (order, error) {
	body, _ := json.Marshal(o)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/orders", bytes.NewReader(body))
	if err != nil {
		return order{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return order{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return order{}, fmt.Errorf("%s: status %d", o.Item, resp.StatusCode)
	}
	var made order
	err = json.NewDecoder(resp.Body).Decode(&made)
	return made, err
}

// enqueueShipment writes the shipment of an order the user was told of
// to the outbox, which sends it until the shop has it, under one key.
func enqueueShipment(ctx context.Context, o *outbox.Outbox, url string, made order) (string, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/shipments", bytes.NewBufferString(strconv.Itoa(made.ID)))
	if err != nil {
		return "", err
	}
	op, err := outbox.HTTPOp(req, "ship")
	if err != nil {
		return "", err
	}
	return o.Enqueue(ctx, op)
}

// p99 is the 99th percentile of ds, by the nearest-rank method.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[(len(ds)*99+99)/100-1]
}
