package retrydebug_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// A Recorder wired to a Policy in one line records every call of Do.
func ExampleRecorder_OnDone() {
	rec := retrydebug.NewRecorder(0, 0)
	p := retry.Policy{Jitter: retry.NoJitter}
	p.OnDone = rec.OnDone("inventory.get")

	calls := 0
	getInventory := func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("503 service unavailable")
		}
		return nil
	}
	// In a service: retry.Do(ctx, getInventory, p). retrytest.Do runs the
	// same loop on a fake clock, so that the example waits no real time.
	_, _ = retrytest.Do(context.Background(), getInventory, p)

	op := rec.Snapshot().Operations[0]
	fmt.Println(op.Name, op.Calls, "call,", op.Attempts, "attempts, waits", op.Recent[0].Waits)
	// Output:
	// inventory.get 1 call, 3 attempts, waits [200ms 400ms]
}

// A Recorder wired to a retryhttp.Transport in one line records every
// request, named by its route, or else by method and origin.
func ExampleRecorder_RecordHTTP() {
	rec := retrydebug.NewRecorder(0, 0)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable) // always down
	}))
	defer api.Close()
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy: retry.Policy{MaxAttempts: 2, Clock: retrytest.NewAutoClock()},
		OnDone: rec.RecordHTTP,
	}}
	ctx := retryhttp.WithRoute(context.Background(), "GET /users/{id}/orders")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/users/8412/orders", nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
	client.CloseIdleConnections()

	c := rec.Snapshot().Operations[0].Recent[0]
	fmt.Println(c.Name, c.Attempts, c.Status, c.Stop, c.GaveUp)
	// Output:
	// GET /users/{id}/orders 2 503 attempts exhausted true
}

// The Recorder is an http.Handler: mount it on an internal listener, here
// loopback only, as net/http/pprof's pages are, never on the one that
// serves users.
func ExampleRecorder_ServeHTTP() {
	rec := retrydebug.NewRecorder(0, 0)
	rec.Record("inventory.get", retry.Trace{})

	mux := http.NewServeMux()
	mux.Handle("/debug/retries", rec)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // an internal address
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/retries?format=json")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var s retrydebug.Snapshot
	body, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(body, &s)
	fmt.Println(resp.Header.Get("Content-Type"), s.Operations[0].Name, s.Operations[0].Calls)
	// Output:
	// application/json inventory.get 1
}

// Past its cap of operations, a Recorder counts the calls of new names in
// one overflow bucket, so that no traffic pattern can grow its memory.
func ExampleNewRecorder() {
	rec := retrydebug.NewRecorder(10, 2) // the last 10 calls of at most 2 operations
	for _, name := range []string{"a", "b", "c", "d", "a"} {
		rec.Record(name, retry.Trace{})
	}
	for _, op := range rec.Snapshot().Operations {
		fmt.Println(op.Name, op.Calls, op.Other)
	}
	// Output:
	// a 2 false
	// b 1 false
	// (other operations) 2 true
}

// A registered Budget shows how many tokens it has left.
func ExampleRecorder_Budget() {
	rec := retrydebug.NewRecorder(0, 0)
	budget, _ := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	rec.Budget("payments", budget)
	p := retry.Policy{Budget: budget, MaxAttempts: 3, OnDone: rec.OnDone("payments.charge")}
	_, _ = retrytest.Do(context.Background(), func(context.Context) error { return errors.New("503") }, p)
	for _, b := range rec.Snapshot().Budgets {
		fmt.Println(b.Name, b.Tokens)
	}
	// Output:
	// payments 7
}

// Guards registers the sets of a guard.Keyed in one call: each key of the
// Budgets shows its tokens, the emptiest first, and each key of the
// Breakers and Throttles its state.
func ExampleRecorder_Guards() {
	rec := retrydebug.NewRecorder(0, 0)
	budgets, _ := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 100)
	breakers, _ := guard.NewBreakers(guard.BreakerOptions{}, 100)
	k := guard.Keyed{Budgets: budgets, Breakers: breakers}
	rec.Guards("origins", k)
	for _, origin := range []string{"https://a.example", "https://b.example"} {
		p := retry.Policy{MaxAttempts: 3}.WithGuards(&k, origin)
		fails := origin == "https://b.example"
		_, _ = retrytest.Do(context.Background(), func(context.Context) error {
			if fails {
				return errors.New("503")
			}
			return nil
		}, p)
	}
	s := rec.Snapshot()
	for _, b := range s.Budgets {
		fmt.Println(b.Name, b.Key, b.Tokens)
	}
	for _, b := range s.Breakers {
		fmt.Println(b.Name, b.Key, b.State)
	}
	// Output:
	// origins https://b.example 7
	// origins https://a.example 10
	// origins https://a.example closed
	// origins https://b.example closed
}

// A Recorder records gRPC calls through retrygrpc.WithOnDone, which hands
// its hook a Summary; RecordGRPC takes the Summary's parts, so that this
// package does not depend on grpc. Here a call is fed by hand:
//
//	retrygrpc.WithOnDone(func(ctx context.Context, s retrygrpc.Summary) {
//		rec.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace)
//	})
func ExampleRecorder_RecordGRPC() {
	rec := retrydebug.NewRecorder(0, 0)
	tr, _ := retrytest.Do(context.Background(), retrytest.Script(errors.New("unavailable")).Call, retry.Policy{})
	const ok = 0 // codes.OK
	rec.RecordGRPC(context.Background(), "/inventory.v1.Stock/Get", ok, tr)

	c := rec.Snapshot().Operations[0].Recent[0]
	fmt.Println(c.Name, c.Attempts, "attempts,", c.GRPCCode)
	// Output:
	// inventory.v1.Stock/Get 2 attempts, OK
}

// A Recorder wired to an idempotency middleware in one line counts its
// keyed requests per route, by outcome. Here the middleware's report of a
// replay is fed by hand.
func ExampleRecorder_RecordIdempotency() {
	rec := retrydebug.NewRecorder(0, 0)
	opts := idempotency.Options{OnDone: rec.RecordIdempotency}

	r := httptest.NewRequest(http.MethodPost, "/orders", nil)
	r.Pattern = "POST /orders" // as the http.ServeMux sets it
	opts.OnDone(r, idempotency.Summary{Outcome: idempotency.OutcomeReplayed, Status: 201, StoreCalls: 1})

	route := rec.Snapshot().Idempotency[0]
	fmt.Println(route.Route, route.Requests, route.Outcomes)
	// Output:
	// POST /orders 1 map[replayed:1]
}

// Registered breakers and throttles show their state on the page and in
// the Snapshot; a Breakers or Throttles shows each key.
func ExampleRecorder_Breakers() {
	rec := retrydebug.NewRecorder(0, 0)
	breakers, _ := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1}, 100)
	rec.Breakers("per-host", breakers)
	p := retry.Policy{MaxAttempts: 1, Breaker: breakers.Get("https://api.example")}
	_, _ = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") }, p)
	fmt.Println(rec.Snapshot().Breakers)
	// Output:
	// [{per-host https://api.example open}]
}
