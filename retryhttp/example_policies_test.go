package retryhttp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
)

// A Transport takes each request's policy by name from a Live config,
// which a service can reload without a restart.
func ExampleWithPolicyName() {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()

	cfg, err := retryconfig.Parse([]byte(`{"policies": {
		"default":  {"maxAttempts": 1},
		"payments": {"maxAttempts": 3, "baseBackoff": "1ms", "retryableStatusCodes": [500]}
	}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: &retryhttp.Transport{Policies: retryconfig.NewLive(cfg)}}

	ctx := retryhttp.WithPolicyName(context.Background(), "payments")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, calls.Load())
	// Output: 500 3
}
