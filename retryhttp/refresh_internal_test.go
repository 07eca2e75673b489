package retryhttp

import (
	"fmt"
	"testing"
)

// The credential state is kept for a bounded number of origins: a Transport
// that sends webhooks to any number of user-supplied hosts cannot grow it.
func TestOriginsAreBounded(t *testing.T) {
	t.Parallel()
	var o origins
	for i := range 3 * maxOrigins {
		o.get(fmt.Sprintf("https://h%d.example", i), true)
	}
	if n := len(o.m); n > maxOrigins {
		t.Fatalf("%d origins kept, want at most %d", n, maxOrigins)
	}
}
