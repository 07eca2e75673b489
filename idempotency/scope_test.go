package idempotency_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeysAreScopedByAuthorizationByDefault(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), o)
	alice := req{key: "same", body: "{}", header: []string{"Authorization", "Bearer alice"}}
	bob := req{key: "same", body: "{}", header: []string{"Authorization", "Bearer bob"}}
	anon := req{key: "same", body: "{}"}

	a := do(t, srv, alice)
	b := do(t, srv, bob)
	n := do(t, srv, anon)
	for _, rp := range []reply{a, b, n} {
		require.Equal(t, http.StatusCreated, rp.status)
		assert.Empty(t, rp.header.Get(idempotency.ReplayedHeader), "another caller's result is never replayed")
	}
	assert.Equal(t, 3, o.ran("same"), "the same key from three callers runs three times")

	again := do(t, srv, alice)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, a.body, again.body, "each caller gets its own result")

	// The default's documented limit: a rotated token is another caller.
	rotated := req{key: "same", body: "{}", header: []string{"Authorization", "Bearer alice-v2"}}
	assert.Empty(t, do(t, srv, rotated).header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, 4, o.ran("same"))
}

func TestScopeByPrincipalSurvivesTokenRotation(t *testing.T) {
	t.Parallel()
	o := newOrders()
	// A service that knows who the caller is scopes by that, not by the
	// credential: here a header that an authenticating proxy sets.
	m := newMiddleware(t, idempotency.Options{Scope: func(r *http.Request) string {
		return r.Header.Get("X-User")
	}})
	srv := serve(t, m, o)
	first := do(t, srv, req{key: "k", body: "{}", header: []string{"X-User", "alice", "Authorization", "Bearer v1"}})
	again := do(t, srv, req{key: "k", body: "{}", header: []string{"X-User", "alice", "Authorization", "Bearer v2"}})
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, first.body, again.body)
	other := do(t, srv, req{key: "k", body: "{}", header: []string{"X-User", "bob"}})
	assert.Empty(t, other.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, 2, o.ran("k"))
}

// keyLog is a Store that records the keys it is given.
type keyLog struct {
	idempotency.Store
	keys chan string
}

func (k *keyLog) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (idempotency.Claim, error) {
	k.keys <- key
	return k.Store.Claim(ctx, key, token, fp, lease)
}

func TestStoreKeysHoldNoClientText(t *testing.T) {
	t.Parallel()
	mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
	require.NoError(t, err)
	log := &keyLog{Store: mem, keys: make(chan string, 10)}
	scope := "{tag}:user"
	m := newMiddleware(t, idempotency.Options{Store: log, Scope: func(*http.Request) string { return scope }})
	srv := serve(t, m, newOrders())
	keys := []string{`"{slot}"`, `"with space and \" quote"`, strings.Repeat("k", idempotency.MaxKeyLength)}
	for _, k := range keys {
		require.Equal(t, http.StatusCreated, do(t, srv, req{key: k, body: "{}"}).status)
	}
	seen := map[string]bool{}
	for range keys {
		k := recv(t, log.keys, "a store key")
		assert.Regexp(t, `^[0-9a-f]{16}:[0-9a-f]{64}$`, k, "a store key is a digest of the scope and one of scope and key")
		seen[k] = true
	}
	assert.Len(t, seen, len(keys), "different keys, different store keys")
}

func TestDefaultScopeSeparatesEveryCredential(t *testing.T) {
	t.Parallel()
	cert := func(raw string) func(*http.Request) {
		return func(r *http.Request) {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Raw: []byte(raw)}}}
		}
	}
	header := func(name, value string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set(name, value) }
	}
	for _, tc := range []struct {
		name       string
		alice, bob func(*http.Request)
	}{
		{"Authorization", header("Authorization", "Bearer alice"), header("Authorization", "Bearer bob")},
		{"Cookie", header("Cookie", "session=alice"), header("Cookie", "session=bob")},
		{"API key", header("X-API-Key", "alice"), header("X-API-Key", "bob")},
		{"Proxy-Authorization", header("Proxy-Authorization", "Basic YWxpY2U6"), header("Proxy-Authorization", "Basic Ym9iOg==")},
		{"TLS client certificate", cert("alice's certificate"), cert("bob's certificate")},
		{"a credential against none", header("Cookie", "session=alice"), func(*http.Request) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := newOrders()
			h := newMiddleware(t, idempotency.Options{}).Handler(o)
			send := func(as func(*http.Request)) *httptest.ResponseRecorder {
				r := newRequest(req{key: "same", body: "{}"})
				as(r)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				return rec
			}
			a := send(tc.alice)
			b := send(tc.bob)
			require.Equal(t, http.StatusCreated, b.Code)
			assert.Empty(t, b.Header().Get(idempotency.ReplayedHeader), "bob, with alice's key and body, does not get her result")
			assert.NotEqual(t, a.Body.String(), b.Body.String())
			again := send(tc.alice)
			assert.Equal(t, "true", again.Header().Get(idempotency.ReplayedHeader), "alice's retry is still hers")
			assert.Equal(t, a.Body.String(), again.Body.String())
			assert.Equal(t, 2, o.ran("same"))
		})
	}
}
