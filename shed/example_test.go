package shed_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/stormguard/retry/shed"
)

// A server sheds what it cannot serve well: the zero Options is adaptive.
func ExampleLimiter_Handler() {
	l, err := shed.New(shed.Options{})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "[]")
	})
	srv := httptest.NewServer(l.Handler(mux))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/orders")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status, l.Stats().Admitted)
	// Output: 200 OK 1
}

// Any server, not only HTTP, admits its work with Acquire and says how it
// went with release.
func ExampleLimiter_Acquire() {
	l, err := shed.New(shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
	if err != nil {
		panic(err)
	}
	release, err := l.Acquire(context.Background(), shed.Critical)
	if err != nil {
		panic(err)
	}
	// The limit is in use: a second request is shed at once.
	_, err = l.Acquire(context.Background(), shed.Sheddable)
	fmt.Println(errors.Is(err, shed.ErrShed), shed.RetryAfterOf(err) >= 1e9)
	release(shed.Success)
	fmt.Println(l.Stats().InFlight)
	// Output:
	// true true
	// 0
}

func ExampleParsePriority() {
	p, ok := shed.ParsePriority("sheddable_plus")
	fmt.Println(p, ok, p < shed.Critical)
	// Output: sheddable_plus true true
}
