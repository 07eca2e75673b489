package retrydebug_test

import (
	"fmt"
	"net/http"

	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/shed"
)

// A server's load shedder on the page: its limit, what is in flight and
// queued, and how many requests it admitted and shed.
func ExampleRecorder_ShedLimiter() {
	l, err := shed.New(shed.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := retrydebug.NewRecorder(0, 0)
	rec.ShedLimiter("api", l)
	mux := http.NewServeMux()
	mux.Handle("/api/", l.Handler(http.NotFoundHandler())) // the service, behind its Limiter
	mux.Handle("/debug/retries", rec)                      // on an internal listener, in a real service

	for _, s := range rec.Snapshot().ShedLimiters {
		fmt.Println(s.Name, "limit", s.Limit, "in flight", s.InFlight, "shed", s.Shed)
	}
	// Output:
	// api limit 20 in flight 0 shed 0
}
