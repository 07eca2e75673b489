package idempotency_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retryhttp"
)

// createOrder is a handler that creates an order on each run.
func createOrder() http.Handler {
	var orders atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := orders.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":%d}`, id)
	})
}

func ExampleNew() {
	m, err := idempotency.New(idempotency.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(createOrder()))
	defer srv.Close()

	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"item":"book"}`))
		req.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body), "replayed:", resp.Header.Get("Idempotent-Replayed") == "true")
	}
	// Output:
	// 201 {"order":1} replayed: false
	// 201 {"order":1} replayed: true
}

// A client and a server that agree: retryhttp sends one key on every
// attempt, and the middleware answers a retry with the saved response. Here
// the network loses the first response after the order was made.
func Example_clientAndServer() {
	m, err := idempotency.New(idempotency.Options{})
	if err != nil {
		log.Fatal(err)
	}
	var lost atomic.Bool
	handler := m.Handler(createOrder())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lost.CompareAndSwap(false, true) {
			handler.ServeHTTP(httptest.NewRecorder(), r) // the order is made...
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close() // ...and its response lost
			return
		}
		handler.ServeHTTP(w, r)
	}))
	defer srv.Close()

	client := &http.Client{Transport: &retryhttp.Transport{
		Base:               srv.Client().Transport,
		Policy:             retry.Policy{BaseBackoff: time.Millisecond},
		AutoIdempotencyKey: true,
	}}
	var trace retry.Trace
	ctx := retryhttp.WithTrace(context.Background(), &trace)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"item":"book"}`))
	resp, err := client.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), "replayed:", resp.Header.Get("Idempotent-Replayed"))
	fmt.Println("attempts:", trace.Attempts())
	// Output:
	// 201 {"order":1} replayed: true
	// attempts: 2
}

// A key belongs to the user's intent, not to one attempt or one process:
// make it when the intent is made (the user presses "Pay"), keep it with
// the intent, and send it again after a restart. AutoIdempotencyKey cannot
// do that: its key lives and dies with one RoundTrip.
func Example_keyThatSurvivesARestart() {
	m, err := idempotency.New(idempotency.Options{})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(createOrder()))
	defer srv.Close()

	// The intent, with its key, saved before the first attempt (in a
	// database or a file; a map stands in for it here).
	saved := map[string]string{"checkout-7": "checkout-7-b1946ac9"}

	pay := func(checkout string) string {
		client := &http.Client{Transport: &retryhttp.Transport{
			Base:   srv.Client().Transport,
			Policy: retry.Policy{BaseBackoff: time.Millisecond},
		}}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", bytes.NewReader([]byte(`{"checkout":7}`)))
		req.Header.Set("Idempotency-Key", saved[checkout]) // the caller's key: retryhttp keeps it
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%s replayed: %s", body, resp.Header.Get("Idempotent-Replayed"))
	}
	pay("checkout-7") // the process dies before it records the answer
	// After the restart, the process finds checkout-7 unfinished and pays
	// again, with the saved key: the server replays the first order.
	fmt.Println(pay("checkout-7"))
	// Output:
	// {"order":1} replayed: true
}

// A service that knows who its caller is scopes keys by that, so that a
// retry carrying a refreshed token is still the same caller's.
func ExampleOptions_scope() {
	type userKey struct{}
	m, err := idempotency.New(idempotency.Options{
		Scope: func(r *http.Request) string {
			user, _ := r.Context().Value(userKey{}).(string) // set by the authentication middleware
			return user
		},
		Required: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	authenticate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			user := strings.TrimSuffix(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), "-v2")
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
		})
	}
	srv := httptest.NewServer(authenticate(m.Handler(createOrder())))
	defer srv.Close()

	for _, token := range []string{"alice", "alice-v2"} { // rotated between two attempts
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(token, string(body))
	}
	// Output:
	// alice {"order":1}
	// alice-v2 {"order":1}
}

func ExampleNewMemoryStore() {
	store, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{
		MaxEntries: 100_000,   // the keys that one TTL brings, with room to spare
		MaxBytes:   256 << 20, // 256 MiB
	})
	if err != nil {
		log.Fatal(err)
	}
	m, err := idempotency.New(idempotency.Options{Store: store, TTL: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	_ = m.Handler(createOrder())
	n, bytes := store.Len()
	fmt.Println(n, bytes)
	// Output: 0 0
}

// OnDone sees how each keyed request was answered: here, counted by
// outcome, as a metric labelled by Outcome.String would be. The key is not
// in the Summary, so nothing secret reaches the counter.
func ExampleOptions_onDone() {
	var mu sync.Mutex
	counts := map[string]int{}
	m, err := idempotency.New(idempotency.Options{
		OnDone: func(r *http.Request, s idempotency.Summary) {
			mu.Lock()
			defer mu.Unlock()
			counts[r.URL.Path+" "+s.Outcome.String()]++
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(m.Handler(createOrder()))
	defer srv.Close()

	for _, body := range []string{`{"item":"book"}`, `{"item":"book"}`, `{"item":"pen"}`} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(body))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(counts["/orders executed"], "executed,", counts["/orders replayed"], "replayed,", counts["/orders mismatch"], "mismatch")
	// Output: 1 executed, 1 replayed, 1 mismatch
}
