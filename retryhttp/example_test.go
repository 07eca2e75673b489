package retryhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

// flaky returns a server that answers 503 to its first n requests, then 200.
func flaky(n int32) *httptest.Server {
	var calls atomic.Int32
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= n {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "hello")
	}))
}

// NewClient retries a GET through two 503s.
func ExampleNewClient() {
	srv := flaky(2)
	defer srv.Close()

	// BaseBackoff is a millisecond only so that the example runs fast.
	client := retryhttp.NewClient(retry.Policy{BaseBackoff: time.Millisecond})
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, string(body))
	// Output:
	// 200 OK hello
}

// WithTrace shows what the Transport did for one request.
func ExampleWithTrace() {
	srv := flaky(2)
	defer srv.Close()
	client := retryhttp.NewClient(retry.Policy{BaseBackoff: time.Millisecond})

	var trace retry.Trace
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req = req.WithContext(retryhttp.WithTrace(req.Context(), &trace))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	for a := range trace.All() {
		fmt.Printf("attempt %d: %q\n", a.Number, a.Reason)
	}
	fmt.Println(trace.Stop())
	// Output:
	// attempt 1: "503 Service Unavailable"
	// attempt 2: "503 Service Unavailable"
	// attempt 3: ""
	// ok
}

// A POST is retried only with an idempotency key. AutoIdempotencyKey makes
// one per request and sends it on every attempt.
func ExampleTransport_idempotencyKey() {
	var (
		mu   sync.Mutex
		keys []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	client := &http.Client{Transport: &retryhttp.Transport{
		Policy:             retry.Policy{BaseBackoff: time.Millisecond},
		AutoIdempotencyKey: true,
	}}
	resp, err := client.Post(srv.URL+"/orders", "application/json", strings.NewReader(`{"sku":"A-1"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(resp.Status, len(keys), "attempts, same key:", keys[0] == keys[1])
	// Output:
	// 201 Created 2 attempts, same key: true
}

// A Classifier opts in to retrying 500 Internal Server Error, for a server
// whose contract says that a 500 is transient; everything else is left to
// DefaultClassifier. A status of 400 or more reaches it as a *StatusError.
func ExampleTransport_classifier() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()

	client := &http.Client{Transport: &retryhttp.Transport{
		Policy: retry.Policy{
			BaseBackoff: time.Millisecond,
			Classifier: func(ctx context.Context, a retry.Attempt) retry.Decision {
				var se *retryhttp.StatusError
				if errors.As(a.Err, &se) && se.StatusCode == http.StatusInternalServerError {
					return retry.Decision{Retry: true, Reason: "500 Internal Server Error"}
				}
				return retryhttp.DefaultClassifier(ctx, a)
			},
		},
	}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, "after", calls.Load(), "attempts")
	// Output:
	// 200 OK after 2 attempts
}

// CheckResponse fails a GraphQL answer whose errors say the server is
// busy, although its status is 200 OK, so that it is retried; the check
// sees the start of the body, and the caller still reads all of it.
func ExampleTransport_checkResponse() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) == 1 {
			fmt.Fprint(w, `{"errors":[{"message":"try later","extensions":{"code":"UNAVAILABLE"}}]}`)
			return
		}
		fmt.Fprint(w, `{"data":{"user":{"name":"Ada"}}}`)
	}))
	defer srv.Close()

	errUnavailable := errors.New("graphql: server unavailable")
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy: retry.Policy{BaseBackoff: time.Millisecond},
		CheckResponse: func(resp *http.Response, head []byte) error {
			var answer struct {
				Errors []struct {
					Extensions struct{ Code string }
				}
			}
			// A head cut at 4 KiB does not parse: then it is not judged.
			if json.Unmarshal(head, &answer) != nil {
				return nil
			}
			for _, e := range answer.Errors {
				if e.Extensions.Code == "UNAVAILABLE" {
					return errUnavailable // retried; retry.Permanent(err) would not be
				}
			}
			return nil
		},
	}}
	var trace retry.Trace
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"query":"{user{name}}"}`))
	req.Header.Set("Idempotency-Key", "query-42") // a query is safe to repeat: say so
	req = req.WithContext(retryhttp.WithTrace(req.Context(), &trace))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for a := range trace.All() {
		fmt.Printf("attempt %d: %q\n", a.Number, a.Reason)
	}
	fmt.Println(string(body))
	// Output:
	// attempt 1: "200 OK, CheckResponse failed"
	// attempt 2: ""
	// {"data":{"user":{"name":"Ada"}}}
}

// Inside an outer retry loop, the Transport makes one attempt per outer
// attempt and hands a retryable status back as an error (a
// *retryhttp.StatusError that carries the Retry-After): an op that checks
// only the error still has its 503s retried, by the outer loop alone.
func ExampleTransport_outerLoop() {
	srv := flaky(2)
	defer srv.Close()
	client := retryhttp.NewClient(retry.Policy{})

	trace, err := retry.Do(context.Background(), func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err // a 503 lands here
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}, retry.Policy{BaseBackoff: time.Millisecond})
	fmt.Println(err, trace.Attempts())
	var se *retryhttp.StatusError
	for a := range trace.All() {
		if errors.As(a.Err, &se) {
			fmt.Println("attempt", a.Number, "got", se.StatusCode)
		}
	}
	// Output:
	// <nil> 3
	// attempt 1 got 503
	// attempt 2 got 503
}

// One Transport serves requests that may be retried freely and requests
// that must be sent at most twice: WithPolicy gives a request its own.
func ExampleWithPolicy() {
	srv := flaky(5)
	defer srv.Close()
	client := retryhttp.NewClient(retry.Policy{MaxAttempts: 4, BaseBackoff: time.Millisecond})

	var trace retry.Trace
	ctx := retryhttp.WithPolicy(context.Background(), retry.Policy{MaxAttempts: 2, BaseBackoff: time.Millisecond})
	ctx = retryhttp.WithTrace(ctx, &trace)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/payments/7", strings.NewReader("{}"))
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, trace.Attempts(), trace.Stop())
	// Output:
	// 503 2 attempts exhausted
}

// OnDone sees each request end, named by its route (or its method and
// origin), with its final status and Trace: the hook for metrics.
func ExampleTransport_onDone() {
	srv := flaky(1)
	defer srv.Close()
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy:        retry.Policy{BaseBackoff: time.Millisecond},
		AttemptHeader: "Retry-Attempt", // servers can tell a retry from a first try
		OnDone: func(_ context.Context, s retryhttp.Summary) {
			fmt.Println(s.Name(), s.Status, s.Trace.Attempts(), s.Trace.Stop())
		},
	}}
	ctx := retryhttp.WithRoute(context.Background(), "GET /users/{id}/orders")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/users/8412/orders", nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	// Output:
	// GET /users/{id}/orders 200 2 ok
}
