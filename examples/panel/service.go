package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// flakyService is the service the clients call. Its failures are random,
// at rates chosen so that the panel soon shows every kind of call: first
// successes, calls that succeed after retries, and calls that give up.
func flakyService() http.Handler {
	mux := http.NewServeMux()
	// Orders fail one time in three, transiently: most calls succeed on the
	// first or second retry.
	mux.HandleFunc("GET /users/{id}/orders", func(w http.ResponseWriter, r *http.Request) {
		pause(5 * time.Millisecond)
		if rand.Float64() < 0.33 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"user":%q,"orders":[]}`, r.PathValue("id"))
	})
	// Inventory sheds load with 429 and a Retry-After, which the Transport
	// waits for (within MaxElapsed).
	mux.HandleFunc("GET /inventory/{sku}", func(w http.ResponseWriter, r *http.Request) {
		pause(2 * time.Millisecond)
		if rand.Float64() < 0.15 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintf(w, `{"sku":%q,"count":%d}`, r.PathValue("sku"), rand.IntN(100))
	})
	// Payments are having a bad day: most attempts fail, so calls run out
	// of attempts, and the shared retry budget starts refusing retries.
	mux.HandleFunc("POST /payments", func(w http.ResponseWriter, r *http.Request) {
		pause(10 * time.Millisecond)
		if rand.Float64() < 0.5 {
			http.Error(w, "gateway down", http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	// Unknown SKUs are a client error: not retried.
	mux.HandleFunc("GET /catalog/{sku}", func(w http.ResponseWriter, r *http.Request) {
		if rand.Float64() < 0.2 {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{}`)
	})
	return mux
}

// pause sleeps up to d, as a real service takes a while to answer.
func pause(d time.Duration) {
	time.Sleep(rand.N(d) + d/2)
}
