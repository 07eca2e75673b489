package retrygrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// gRFC A6: a unary call has committed once its response header has come,
// and is not retried after, whatever its status; a failure with no header
// (a trailers-only response, the usual form of an error) is retried.
func TestUnaryCommittedByHeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		first   reply
		seen    int
		reasons []string
	}{
		{"header then UNAVAILABLE", reply{code: codes.Unavailable, header: true}, 1,
			[]string{"Unavailable; call committed: response header received"}},
		{"UNAVAILABLE alone", fail(codes.Unavailable), 2, []string{"Unavailable", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.first, reply{})
				c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))
				var md metadata.MD
				tr, err := unary(t.Context(), c, "x", grpc.Header(&md))
				assert.Len(t, srv.seen(), tc.seen)
				assert.Equal(t, tc.reasons, reasons(tr))
				if tc.seen == 1 {
					require.Error(t, err)
					assert.Equal(t, codes.Unavailable, status.Code(err), "the status as it came")
					assert.NotErrorIs(t, err, retry.ErrGaveUp, "not retried, so no retries ran out")
					assert.Equal(t, []string{"header"}, md.Get("attempt"), "the caller's own Header option still works")
				} else {
					require.NoError(t, err)
				}
			})
		})
	}
}
