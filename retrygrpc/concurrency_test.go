package retrygrpc_test

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
)

// Many calls at once share one interceptor, its Policy and its Budget.
func TestConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable), reply{messages: 1})
		p := fast()
		p.Budget = &guard.Budget{}
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()), withStreamRetry(p, retrygrpc.WithAllIdempotent()))
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := unary(t.Context(), c, "x")
				assert.NoError(t, err)
			}()
			go func() {
				defer wg.Done()
				_, err := drain(watch(t.Context(), t, c, "x"))
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		assert.Len(t, srv.seen(), 33, "only the very first call failed")
	})
}
