package idempotency_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFirstRequestRunsAndItsResponseIsReplayed(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), o)
	rq := req{key: "k1", body: `{"item":"book"}`}

	first := do(t, srv, rq)
	require.Equal(t, http.StatusCreated, first.status)
	assert.Equal(t, `{"id":1,"request":"{\"item\":\"book\"}"}`, first.body, "the handler got the body")
	assert.Empty(t, first.header.Get(idempotency.ReplayedHeader))

	for range 3 {
		again := do(t, srv, rq)
		assert.Equal(t, first.status, again.status)
		assert.Equal(t, first.body, again.body, "the body is replayed byte for byte")
		assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
		want := withoutDate(first.header)
		want.Set(idempotency.ReplayedHeader, "true")
		assert.Equal(t, want, withoutDate(again.header), "the headers are replayed")
	}
	assert.Equal(t, 1, o.ran("k1"), "the handler ran once")
}

// savedFirst is a Store and a ResponseWriter that log, in order, when the
// result is saved and when the response starts to go out.
type savedFirst struct {
	idempotency.Store
	http.ResponseWriter
	log []string
}

func (s *savedFirst) Complete(ctx context.Context, key, token string, fp, result []byte, ttl time.Duration) error {
	s.log = append(s.log, "saved")
	return s.Store.Complete(ctx, key, token, fp, result, ttl)
}

func (s *savedFirst) Release(ctx context.Context, key, token string) error {
	s.log = append(s.log, "released")
	return s.Store.Release(ctx, key, token)
}

func (s *savedFirst) WriteHeader(code int) {
	s.log = append(s.log, "sent")
	s.ResponseWriter.WriteHeader(code)
}

func TestResponseIsSavedBeforeItIsSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   []string
	}{
		{http.StatusCreated, []string{"saved", "sent"}},
		{http.StatusServiceUnavailable, []string{"released", "sent"}},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			t.Parallel()
			mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
			require.NoError(t, err)
			rec := httptest.NewRecorder()
			s := &savedFirst{Store: mem, ResponseWriter: rec}
			m := newMiddleware(t, idempotency.Options{Store: s})
			o := newOrders()
			o.status = tc.status
			r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("{}"))
			r.Header.Set("Idempotency-Key", "k")
			m.Handler(o).ServeHTTP(s, r)
			assert.Equal(t, tc.want, s.log)
			assert.Equal(t, tc.status, rec.Code)
		})
	}
}

func TestSameKeyDifferentRequestIs422(t *testing.T) {
	t.Parallel()
	base := req{method: http.MethodPost, path: "/orders?x=1", key: "k", body: `{"n":1}`}
	for _, tc := range []struct {
		name string
		rq   req
	}{
		{"body", req{method: http.MethodPost, path: "/orders?x=1", key: "k", body: `{"n":2}`}},
		{"method", req{method: http.MethodPatch, path: "/orders?x=1", key: "k", body: `{"n":1}`}},
		{"path", req{method: http.MethodPost, path: "/refunds?x=1", key: "k", body: `{"n":1}`}},
		{"query", req{method: http.MethodPost, path: "/orders?x=2", key: "k", body: `{"n":1}`}},
		{"content type", req{method: http.MethodPost, path: "/orders?x=1", key: "k", body: `{"n":1}`, header: []string{"Content-Type", "text/plain"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := newOrders()
			srv := serve(t, newMiddleware(t, idempotency.Options{}), o)
			require.Equal(t, http.StatusCreated, do(t, srv, base).status)
			requireProblem(t, do(t, srv, tc.rq), http.StatusUnprocessableEntity, false)
			assert.Equal(t, 1, o.total(), "the handler ran for the first request only")
			assert.Equal(t, http.StatusCreated, do(t, srv, base).status, "the first request still replays")
		})
	}
}

func TestInFlightIs409AndNeverWaits(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), o)
	rq := req{key: "k", body: "{}", header: waiting}

	first := doAsync(srv, rq)
	recv(t, o.started, "the first request's handler")
	// The first request is blocked in its handler: an answer now proves the
	// second did not wait for it.
	p := requireProblem(t, do(t, srv, rq), http.StatusConflict, true)
	assert.Contains(t, p.Detail, "being processed")
	assert.Equal(t, "about:blank", p.Type)

	close(o.release)
	assert.Equal(t, http.StatusCreated, recv(t, first, "the first reply").status)
	again := do(t, srv, rq)
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, 1, o.ran("k"))
}

func TestMismatchIsCheckedBeforeInFlight(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), o)

	first := doAsync(srv, req{key: "k", body: `{"n":1}`, header: waiting})
	recv(t, o.started, "the first request's handler")
	requireProblem(t, do(t, srv, req{key: "k", body: `{"n":2}`}), http.StatusUnprocessableEntity, false)
	close(o.release)
	assert.Equal(t, http.StatusCreated, recv(t, first, "the first reply").status)
	assert.Equal(t, 1, o.total())
}

func TestMissingKey(t *testing.T) {
	t.Parallel()
	t.Run("required: 400", func(t *testing.T) {
		t.Parallel()
		o := newOrders()
		srv := serve(t, newMiddleware(t, idempotency.Options{Required: true}), o)
		p := requireProblem(t, do(t, srv, req{body: "{}"}), http.StatusBadRequest, false)
		assert.Contains(t, p.Detail, "Idempotency-Key")
		assert.Zero(t, o.total())
	})
	t.Run("not required: passes through every time", func(t *testing.T) {
		t.Parallel()
		o := newOrders()
		srv := serve(t, newMiddleware(t, idempotency.Options{}), o)
		for range 2 {
			rp := do(t, srv, req{body: "{}"})
			assert.Equal(t, http.StatusCreated, rp.status)
			assert.Empty(t, rp.header.Get(idempotency.ReplayedHeader))
		}
		assert.Equal(t, 2, o.total())
	})
}

func TestMalformedKeyIs400(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), o)
	for _, tc := range []struct {
		name  string
		value string
	}{
		{"empty quoted string", `""`},
		{"spaces only", "   "},
		{"too long", strings.Repeat("a", idempotency.MaxKeyLength+1)},
		{"too long quoted", `"` + strings.Repeat("a", idempotency.MaxKeyLength+1) + `"`},
		{"space inside a bare key", "a b"},
		{"bare key with a quote", `a"b`},
		{"unterminated string", `"abc`},
		{"bad escape", `"a\nb"`},
		{"parameters", `"abc";v=1`},
		{"two strings", `"a", "b"`},
		{"non-ASCII", "ключ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
			require.NoError(t, err)
			r.Header["Idempotency-Key"] = []string{tc.value}
			resp, err := srv.Client().Do(r)
			require.NoError(t, err)
			rp := readReply(t, resp)
			p := requireProblem(t, rp, http.StatusBadRequest, false)
			assert.Contains(t, p.Detail, "Malformed Idempotency-Key")
		})
	}
	t.Run("two headers", func(t *testing.T) {
		r, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
		require.NoError(t, err)
		r.Header["Idempotency-Key"] = []string{"a", "b"}
		resp, err := srv.Client().Do(r)
		require.NoError(t, err)
		requireProblem(t, readReply(t, resp), http.StatusBadRequest, false)
	})
	assert.Zero(t, o.total(), "the handler never ran")
}

func TestQuotedAndBareFormsAreOneKey(t *testing.T) {
	t.Parallel()
	const uuid = "8e03978e-40d5-43e8-bc93-6894a57f9324"
	for _, tc := range []struct{ first, then string }{
		{`"` + uuid + `"`, uuid},
		{uuid, `"` + uuid + `"`},
		{` "` + uuid + `" `, uuid},
		{`"a\"b"`, `"a\"b"`},
	} {
		t.Run(tc.first+" then "+tc.then, func(t *testing.T) {
			t.Parallel()
			o := newOrders()
			srv := serve(t, newMiddleware(t, idempotency.Options{}), o)
			first := do(t, srv, req{key: tc.first, body: "{}"})
			require.Equal(t, http.StatusCreated, first.status)
			again := do(t, srv, req{key: tc.then, body: "{}"})
			assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
			assert.Equal(t, first.body, again.body)
			assert.Equal(t, 1, o.total())
		})
	}
}

func TestOtherMethodsPassThrough(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Methods: []string{http.MethodPost}}), o)
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		for range 2 {
			rp := do(t, srv, req{method: method, key: "k-" + method})
			assert.Equal(t, http.StatusCreated, rp.status, method)
			assert.Empty(t, rp.header.Get(idempotency.ReplayedHeader), method)
		}
		assert.Equal(t, 2, o.ran("k-"+method), "%s ran every time", method)
	}
	// A malformed key on a method the middleware leaves alone is not its
	// business either.
	assert.Equal(t, http.StatusCreated, do(t, srv, req{method: http.MethodGet, key: `"open`}).status)
}

func TestRequestBodyTooLargeIs413(t *testing.T) {
	t.Parallel()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{MaxBodyBytes: 10}), o)
	t.Run("with Content-Length", func(t *testing.T) {
		requireProblem(t, do(t, srv, req{key: "a", body: strings.Repeat("x", 11)}), http.StatusRequestEntityTooLarge, false)
	})
	t.Run("chunked", func(t *testing.T) {
		r, err := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader(strings.Repeat("x", 11))))
		require.NoError(t, err)
		r.Header.Set("Idempotency-Key", "b")
		r.ContentLength = -1 // unknown: the body goes chunked
		resp, err := srv.Client().Do(r)
		require.NoError(t, err)
		requireProblem(t, readReply(t, resp), http.StatusRequestEntityTooLarge, false)
	})
	t.Run("at the limit", func(t *testing.T) {
		assert.Equal(t, http.StatusCreated, do(t, srv, req{key: "c", body: strings.Repeat("x", 10)}).status)
	})
	assert.Equal(t, 1, o.total(), "only the request at the limit ran")
}

func TestNilHandlerIs404(t *testing.T) {
	t.Parallel()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), nil)
	assert.Equal(t, http.StatusNotFound, do(t, srv, req{key: "k"}).status)
}

// readReply reads and closes resp.
func readReply(t *testing.T, resp *http.Response) reply {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}
