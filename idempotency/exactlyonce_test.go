package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/internal/exactlyonce"
)

func TestExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	m := newMiddleware(t, idempotency.Options{})
	res := exactlyonce.Run(t, exactlyonce.Default, func(h http.Handler) http.Handler {
		return m.Handler(h)
	})
	t.Logf("in-memory store: %v", res)
}
