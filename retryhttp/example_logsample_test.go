package retryhttp_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// During an outage, LogSampling writes the first lines of each kind, then
// one summary a window of the rest. (The times are cut from the output to
// keep it stable.)
func ExampleLogSampling() {
	down := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	clk := retrytest.NewAutoClock()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "first", "last", "wait":
				return slog.Attr{}
			}
			return a
		},
	}))
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:        retrytest.HandlerTransport(down),
		Policy:      retry.Policy{MaxAttempts: 2, Jitter: retry.NoJitter, Clock: clk},
		Logger:      logger,
		LogSampling: retryhttp.LogSampling{First: 2, Window: time.Minute},
	}}
	get := func() {
		resp, err := client.Get("https://api.example/orders?token=secret")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
	}
	for range 10 {
		get()
	}
	clk.Add(time.Minute)
	get()
	// Output:
	// level=INFO msg="retryhttp: retrying request" method=GET url=https://api.example/orders?REDACTED attempt=1 status=503 reason="503 Service Unavailable"
	// level=WARN msg="retryhttp: giving up" method=GET url=https://api.example/orders?REDACTED attempt=2 status=503 stop="attempts exhausted" reason="503 Service Unavailable"
	// level=INFO msg="retryhttp: retrying request" method=GET url=https://api.example/orders?REDACTED attempt=1 status=503 reason="503 Service Unavailable"
	// level=WARN msg="retryhttp: giving up" method=GET url=https://api.example/orders?REDACTED attempt=2 status=503 stop="attempts exhausted" reason="503 Service Unavailable"
	// level=INFO msg="retryhttp: suppressed 8 similar retry events" origin=https://api.example event="retryhttp: retrying request" status=503 suppressed=8 last_reason="503 Service Unavailable" max_attempt=1
	// level=WARN msg="retryhttp: suppressed 8 similar retry events" origin=https://api.example event="retryhttp: giving up" status=503 suppressed=8 last_reason="503 Service Unavailable" max_attempt=2
	// level=INFO msg="retryhttp: retrying request" method=GET url=https://api.example/orders?REDACTED attempt=1 status=503 reason="503 Service Unavailable"
	// level=WARN msg="retryhttp: giving up" method=GET url=https://api.example/orders?REDACTED attempt=2 status=503 stop="attempts exhausted" reason="503 Service Unavailable"
}
