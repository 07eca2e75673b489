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
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxEntries: 3, MaxScopeEntries: 3, Clock: clk})
	require.NoError(t, err)
	var tokens []string
	for i := range 3 {
		tok := storetest.Token()
		_, err := s.Claim(ctx, storetest.Key(strconv.Itoa(i)), tok, nil, time.Minute)
		require.NoError(t, err)
		tokens = append(tokens, tok)
	}
	_, err = s.Claim(ctx, storetest.Key("full"), storetest.Token(), nil, time.Minute)
	require.ErrorIs(t, err, idempotency.ErrStoreFull, "a full store refuses a new key")

	// Nothing is dropped before its time to make room, not even a result.
	require.NoError(t, s.Complete(ctx, storetest.Key("0"), tokens[0], nil, []byte("r"), time.Hour))
	c, err := s.Claim(ctx, storetest.Key("0"), storetest.Token(), nil, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Completed, c.State)

	// A released key and an expired lease make room.
	require.NoError(t, s.Release(ctx, storetest.Key("1"), tokens[1]))
	_, err = s.Claim(ctx, storetest.Key("a"), storetest.Token(), nil, time.Minute)
	require.NoError(t, err)
	clk.Add(time.Minute)
	n, _ := s.Len()
	assert.Equal(t, 1, n, "the expired leases are gone, the result stays")
	_, err = s.Claim(ctx, storetest.Key("b"), storetest.Token(), nil, time.Minute)
	require.NoError(t, err)
}

func TestMemoryStoreIsBoundedInBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewMock()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxBytes: 2000, MaxScopeBytes: 2000, Clock: clk})
	require.NoError(t, err)
	k, tok := storetest.Key("a"), storetest.Token()
	_, err = s.Claim(ctx, k, tok, make([]byte, 32), time.Minute)
	require.NoError(t, err)
	// The result of a claim admitted is saved even past the bound: the
	// handler has run. New keys wait until the store is under it again.
	require.NoError(t, s.Complete(ctx, k, tok, nil, make([]byte, 2000), time.Hour))
	_, bytes := s.Len()
	entry := int64(len(k) + len(tok) + 32 + 128)
	assert.Equal(t, entry+2000, bytes, "key, token, fingerprint, result and bookkeeping")

	_, err = s.Claim(ctx, storetest.Key("b"), storetest.Token(), make([]byte, 32), time.Minute)
	require.ErrorIs(t, err, idempotency.ErrStoreFull)

	clk.Add(time.Hour)
	_, err = s.Claim(ctx, storetest.Key("b"), storetest.Token(), make([]byte, 32), time.Minute)
	require.NoError(t, err, "the result's TTL ran out and made room")
	n, bytes := s.Len()
	assert.Equal(t, 1, n)
	assert.Equal(t, entry, bytes)
}

func TestMemoryStoreBoundsEachScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewMock()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxEntries: 10, MaxScopeEntries: 3, Clock: clk})
	require.NoError(t, err)
	var tokens []string
	for i := range 3 {
		tok := storetest.Token()
		_, err := s.Claim(ctx, storetest.ScopedKey("mallory", strconv.Itoa(i)), tok, nil, time.Minute)
		require.NoError(t, err)
		tokens = append(tokens, tok)
	}
	_, err = s.Claim(ctx, storetest.ScopedKey("mallory", "more"), storetest.Token(), nil, time.Minute)
	require.ErrorIs(t, err, idempotency.ErrStoreFull, "a scope that holds its share gets no more")
	assert.Contains(t, err.Error(), "scope")
	for _, who := range []string{"alice", "bob", ""} {
		c, err := s.Claim(ctx, storetest.ScopedKey(who, "0"), storetest.Token(), nil, time.Minute)
		require.NoError(t, err, "scope %q is not refused for mallory's keys", who)
		assert.Equal(t, idempotency.Acquired, c.State)
	}
	// Completing a claim of a full scope still works: it is no new key.
	require.NoError(t, s.Complete(ctx, storetest.ScopedKey("mallory", "0"), tokens[0], nil, []byte("r"), time.Hour))
	// A key whose lease ran out gives its scope room again.
	clk.Add(time.Minute)
	_, err = s.Claim(ctx, storetest.ScopedKey("mallory", "more"), storetest.Token(), nil, time.Minute)
	require.NoError(t, err)
}

func TestMemoryStoreBoundsEachScopeInBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxBytes: 10_000, MaxScopeBytes: 1000})
	require.NoError(t, err)
	k, tok := storetest.ScopedKey("mallory", "0"), storetest.Token()
	_, err = s.Claim(ctx, k, tok, nil, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, k, tok, nil, make([]byte, 1000), time.Hour), "an admitted claim's result, past the scope's share")
	_, err = s.Claim(ctx, storetest.ScopedKey("mallory", "1"), storetest.Token(), nil, time.Minute)
	require.ErrorIs(t, err, idempotency.ErrStoreFull, "the scope is past its share")
	k2 := storetest.ScopedKey("alice", "0")
	tok2 := storetest.Token()
	_, err = s.Claim(ctx, k2, tok2, nil, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, k2, tok2, nil, make([]byte, 700), time.Hour), "another scope has its own share")
}

func TestMemoryStoreDefaultsLeaveRoomForOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
	require.NoError(t, err)
	// One caller sends fresh keys until it is refused.
	var n int
	for ; n <= 100_000; n++ {
		if _, err := s.Claim(ctx, storetest.ScopedKey("mallory", strconv.Itoa(n)), storetest.Token(), nil, time.Minute); err != nil {
			require.ErrorIs(t, err, idempotency.ErrStoreFull)
			break
		}
	}
	assert.Equal(t, 10_000, n, "one scope holds a tenth of the default 100,000 keys")
	for i := range 100 {
		_, err := s.Claim(ctx, storetest.ScopedKey("user"+strconv.Itoa(i), "k"), storetest.Token(), nil, time.Minute)
		require.NoError(t, err, "another caller is served")
	}
}

func TestNewMemoryStoreRejectsAScopeBoundAboveTheStore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts  idempotency.MemoryOptions
		field string
	}{
		{idempotency.MemoryOptions{MaxEntries: 10, MaxScopeEntries: 11}, "MaxScopeEntries"},
		{idempotency.MemoryOptions{MaxScopeEntries: 100_001}, "MaxScopeEntries"},
		{idempotency.MemoryOptions{MaxBytes: 10, MaxScopeBytes: 11}, "MaxScopeBytes"},
		{idempotency.MemoryOptions{MaxScopeEntries: -1}, "MaxScopeEntries"},
		{idempotency.MemoryOptions{MaxScopeBytes: -1}, "MaxScopeBytes"},
	} {
		_, err := idempotency.NewMemoryStore(tc.opts)
		require.ErrorIs(t, err, idempotency.ErrInvalidOptions, "%+v", tc.opts)
		assert.Contains(t, err.Error(), tc.field)
	}
}

func TestOneCallerFillingItsScopeDoesNotLockOthersOut(t *testing.T) {
	t.Parallel()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxEntries: 100, MaxScopeEntries: 3})
	require.NoError(t, err)
	o := newOrders()
	scope := func(r *http.Request) string { return r.Header.Get("X-User") }
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: s, Scope: scope}), o)
	mallory := []string{"X-User", "mallory"}
	for i := range 3 {
		require.Equal(t, http.StatusCreated, do(t, srv, req{key: strconv.Itoa(i), header: mallory}).status)
	}
	requireProblem(t, do(t, srv, req{key: "more", header: mallory}), http.StatusServiceUnavailable, true)
	assert.Equal(t, "true", do(t, srv, req{key: "0", header: mallory}).header.Get(idempotency.ReplayedHeader),
		"the full scope's results are still replayed")
	require.Equal(t, http.StatusCreated, do(t, srv, req{key: "more", header: []string{"X-User", "alice"}}).status,
		"another caller is served")
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

// A claim the store admitted is never refused its result: the handler has
// run. A store whose bytes are nearly used up saves the first request's
// result past its bound, and the retry, after the lease, is a replay.
func TestMemoryStoreNeverRefusesTheResultOfAnAdmittedClaim(t *testing.T) {
	t.Parallel()
	clk := clock.NewMock()
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxBytes: 1000, MaxScopeBytes: 1000, Clock: clk})
	require.NoError(t, err)
	var runs int
	big := make([]byte, 2000) // a claim fits in 1000 bytes; it and this result do not
	m := newMiddleware(t, idempotency.Options{Store: s, Clock: clk, Lease: time.Minute})
	srv := serve(t, m, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs++
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(big)
	}))

	first := do(t, srv, req{key: "k", body: "{}"})
	require.Equal(t, http.StatusCreated, first.status)
	_, used := s.Len()
	assert.Greater(t, used, int64(1000), "the result is kept past MaxBytes")
	clk.Add(time.Minute) // past the lease
	again := do(t, srv, req{key: "k", body: "{}"})
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader), "the retry gets the result")
	assert.Equal(t, 1, runs, "handler runs")

	full := do(t, srv, req{key: "other", body: "{}"})
	assert.Equal(t, http.StatusServiceUnavailable, full.status, "a new key is refused before its handler runs")
	assert.Equal(t, 1, runs, "handler runs")
}
