package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/internal/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryStoreKeepsTheStoreContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (idempotency.Store, func(time.Duration)) {
			clk := clock.NewMock()
			s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{Clock: clk})
			require.NoError(t, err)
			return s, clk.Add
		},
		Lease: 10 * time.Second,
	})
}

func TestMemoryStoreIsBoundedInEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewMock()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxEntries: 3, Clock: clk})
	require.NoError(t, err)
	var tokens []string
	for i := range 3 {
		c, err := s.Claim(ctx, storetest.Key(strconv.Itoa(i)), nil, time.Minute)
		require.NoError(t, err)
		tokens = append(tokens, c.Token)
	}
	_, err = s.Claim(ctx, storetest.Key("full"), nil, time.Minute)
	require.ErrorIs(t, err, idempotency.ErrStoreFull, "a full store refuses a new key")

	// Nothing is dropped before its time to make room, not even a result.
	require.NoError(t, s.Complete(ctx, storetest.Key("0"), tokens[0], []byte("r"), time.Hour))
	c, err := s.Claim(ctx, storetest.Key("0"), nil, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Completed, c.State)

	// A released key and an expired lease make room.
	require.NoError(t, s.Release(ctx, storetest.Key("1"), tokens[1]))
	_, err = s.Claim(ctx, storetest.Key("a"), nil, time.Minute)
	require.NoError(t, err)
	clk.Add(time.Minute)
	n, _ := s.Len()
	assert.Equal(t, 1, n, "the expired leases are gone, the result stays")
	_, err = s.Claim(ctx, storetest.Key("b"), nil, time.Minute)
	require.NoError(t, err)
}

func TestMemoryStoreIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewMock()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxBytes: 2000, Clock: clk})
	require.NoError(t, err)
	c, err := s.Claim(ctx, storetest.Key("a"), make([]byte, 32), time.Minute)
	require.NoError(t, err)
	require.ErrorIs(t, s.Complete(ctx, storetest.Key("a"), c.Token, make([]byte, 2000), time.Hour), idempotency.ErrStoreFull)
	require.NoError(t, s.Complete(ctx, storetest.Key("a"), c.Token, make([]byte, 1600), time.Hour))
	_, bytes := s.Len()
	assert.Equal(t, int64(64+32+1600+128), bytes, "key, fingerprint, result and bookkeeping")

	_, err = s.Claim(ctx, storetest.Key("b"), make([]byte, 32), time.Minute)
	require.ErrorIs(t, err, idempotency.ErrStoreFull)
	clk.Add(time.Hour)
	_, err = s.Claim(ctx, storetest.Key("b"), make([]byte, 32), time.Minute)
	require.NoError(t, err, "the result's TTL ran out and made room")
	n, bytes := s.Len()
	assert.Equal(t, 1, n)
	assert.Equal(t, int64(64+32+128), bytes)
}

func TestFullMemoryStoreIs503(t *testing.T) {
	t.Parallel()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxEntries: 1})
	require.NoError(t, err)
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: s}), o)
	require.Equal(t, http.StatusCreated, do(t, srv, req{key: "a"}).status)
	requireProblem(t, do(t, srv, req{key: "b"}), http.StatusServiceUnavailable, true)
	assert.Equal(t, "true", do(t, srv, req{key: "a"}).header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, 1, o.total())
}

func TestMiddlewaresSharingAStoreActAsOne(t *testing.T) {
	t.Parallel()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
	require.NoError(t, err)
	o := newOrders()
	var srvs []*httptest.Server
	for range 3 {
		srvs = append(srvs, serve(t, newMiddleware(t, idempotency.Options{Store: s}), o))
	}
	inFlight := doAsync(srvs[0], req{key: "k", body: "{}", header: waiting})
	recv(t, o.started, "the first handler")
	requireProblem(t, do(t, srvs[1], req{key: "k", body: "{}"}), http.StatusConflict, true)
	requireProblem(t, do(t, srvs[2], req{key: "k", body: "other"}), http.StatusUnprocessableEntity, false)
	close(o.release)
	first := recv(t, inFlight, "the first reply")
	for _, srv := range srvs {
		rp := do(t, srv, req{key: "k", body: "{}"})
		assert.Equal(t, first.body, rp.body)
		assert.Equal(t, "true", rp.header.Get(idempotency.ReplayedHeader))
	}
	assert.Equal(t, 1, o.total())
}
