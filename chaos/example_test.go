package chaos_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/chaos"
)

// A client whose calls fail with 503 a fifth of the time, once the switch
// is on. Run after run, the same seed fails the same calls.
func ExampleTransport() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	sw := chaos.NewSwitch(6) // off until On
	client := &http.Client{Transport: chaos.Transport(nil,
		chaos.Fault{Switch: sw, Rate: 0.2, Status: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"1"}}},
	)}
	defer client.CloseIdleConnections()

	get := func() {
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Print(resp.StatusCode, " ")
	}
	for range 5 {
		get()
	}
	fmt.Println("(off)")
	sw.On()
	for range 5 {
		get()
	}
	fmt.Println("(on)")
	fmt.Printf("%+v\n", sw.Stats().Faults)
	// Output:
	// 200 200 200 200 200 (off)
	// 200 503 200 200 503 (on)
	// [{Name:503 Requests:5 Injected:2}]
}

// A server that, for one request in twenty, makes the order and loses the
// answer: the failure that idempotency keys are for. Put chaos.Handler
// outermost, in front of the idempotency middleware.
func ExampleHandler() {
	var made atomic.Int64
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		made.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	sw := chaos.NewSwitch(1)
	sw.On()
	h := chaos.Handler(orders,
		chaos.Fault{Switch: sw, Rate: 1, Drop: true, Match: func(r *http.Request) bool { return r.Method == http.MethodPost }},
	)
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()

	_, err := srv.Client().Post(srv.URL+"/orders", "application/json", nil)
	fmt.Println("answer lost:", err != nil, "- orders made:", made.Load())
	// Output: answer lost: true - orders made: 1
}

// An integration of your own asks Active first, the fast path, and only
// then builds what Decide needs.
func ExampleInjector() {
	sw := chaos.NewSwitch(3)
	in := chaos.NewInjector(chaos.Fault{Switch: sw, Rate: 1, Latency: 200 * time.Millisecond})
	fmt.Println("active:", in.Active())
	sw.On()
	if in.Active() {
		d := in.Decide(nil) // no Match: no request needed
		fmt.Println("latency:", d.Latency)
	}
	// Output:
	// active: false
	// latency: 200ms
}
