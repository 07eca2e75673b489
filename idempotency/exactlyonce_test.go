package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/internal/exactlyonce"
	"github.com/stretchr/testify/require"
)

// Exactly once with the in-memory store, under every scenario: 2,000
// orders, each client told its own.
func TestExactlyOnceUnderFaults(t *testing.T) {
	t.Parallel()
	for _, sc := range exactlyonce.Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
			require.NoError(t, err)
			cfg := sc.Config
			var store idempotency.Store = mem
			if cfg.Outage > 0 {
				sw := exactlyonce.NewSwitch(mem)
				store, cfg.Down = sw, sw.Down
			}
			m := newMiddleware(t, idempotency.Options{Store: store, Lease: cfg.Lease})
			res := exactlyonce.Run(t, cfg, func(h http.Handler) http.Handler { return m.Handler(h) })
			t.Logf("in-memory store, %s: %v", sc.Name, res)
		})
	}
}
