package idempotency_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPanicPastMaxResponseBytesReleasesTheKey(t *testing.T) {
	t.Parallel()
	const limit = 100
	var runs atomic.Int32
	m := newMiddleware(t, idempotency.Options{MaxResponseBytes: limit})
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(strings.Repeat("x", 3*limit))) // past the limit: it streams
		if n == 1 {
			panic("boom mid-stream")
		}
	}))
	serveOnce := func() (rec *httptest.ResponseRecorder, panicked any) {
		defer func() { panicked = recover() }()
		return serveDirect(h, req{key: "k"}), nil
	}
	_, p := serveOnce()
	require.Equal(t, "boom mid-stream", p, "the panic goes on to net/http")

	rec, p := serveOnce()
	require.Nil(t, p)
	assert.Equal(t, int32(2), runs.Load(), "the retry ran the handler: the panic released the key")
	assert.Empty(t, rec.Header().Get(idempotency.ReplayedHeader), "nothing of the run that panicked is replayed")
	assert.Empty(t, rec.Header().Get(idempotency.BodyOmittedHeader))

	// The run that finished is saved, as any large response is.
	rec = serveDirect(h, req{key: "k"})
	assert.Equal(t, "true", rec.Header().Get(idempotency.ReplayedHeader))
	assert.Equal(t, "true", rec.Header().Get(idempotency.BodyOmittedHeader))
	assert.Equal(t, int32(2), runs.Load())
}

func TestSessionHeadersAreNeverSavedOrReplayed(t *testing.T) {
	t.Parallel()
	srv := serve(t, newMiddleware(t, idempotency.Options{}), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "alice-secret"})
		w.Header().Set("Authentication-Info", `nextnonce="abc"`)
		w.Header().Set("Location", "/orders/1")
		w.WriteHeader(http.StatusCreated)
	}))
	first := do(t, srv, req{key: "k"})
	assert.Contains(t, first.header.Get("Set-Cookie"), "alice-secret", "the caller that ran the handler gets its cookie")
	assert.NotEmpty(t, first.header.Get("Authentication-Info"))

	again := do(t, srv, req{key: "k"})
	require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Empty(t, again.header.Values("Set-Cookie"), "a replay never sets the first caller's session")
	assert.Empty(t, again.header.Values("Authentication-Info"))
	assert.Equal(t, "/orders/1", again.header.Get("Location"), "the response's own headers are replayed")
}

func TestSessionHeadersOfAnOldRecordAreNotReplayed(t *testing.T) {
	t.Parallel()
	// A record saved with a Set-Cookie (by an older release, in a shared
	// store) is replayed without it.
	saved := idempotency.EncodeRecordRaw(http.StatusOK, http.Header{"Set-Cookie": {"session=bob"}, "X-Id": {"1"}}, nil)
	rec := httptest.NewRecorder()
	idempotency.Replay(rec, saved)
	assert.Equal(t, "1", rec.Header().Get("X-Id"))
	assert.Empty(t, rec.Header().Values("Set-Cookie"))
}

// trailerReply is a reply with its trailers, read after its body.
type trailerReply struct {
	reply
	trailer http.Header
}

func postForTrailers(t *testing.T, srv *httptest.Server, key string) trailerReply {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, srv.URL+"/exports", nil)
	require.NoError(t, err)
	r.Header.Set("Idempotency-Key", key)
	resp, err := srv.Client().Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return trailerReply{reply{resp.StatusCode, resp.Header, string(b)}, resp.Trailer}
}

func TestTrailersAreSentAndReplayed(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	handler := func(body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			runs.Add(1)
			w.Header().Set("Trailer", "X-Checksum")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, body)
			w.Header().Set("X-Checksum", "sha256:abc")          // declared
			w.Header().Set(http.TrailerPrefix+"X-Rows", "1000") // undeclared, by prefix
		})
	}
	t.Run("saved whole", func(t *testing.T) {
		srv := serve(t, newMiddleware(t, idempotency.Options{}), handler("rows"))
		for i, rp := range []trailerReply{postForTrailers(t, srv, "k"), postForTrailers(t, srv, "k")} {
			assert.Equal(t, "rows", rp.body, "reply %d", i)
			assert.Equal(t, "sha256:abc", rp.trailer.Get("X-Checksum"), "reply %d: the declared trailer", i)
			assert.Equal(t, "1000", rp.trailer.Get("X-Rows"), "reply %d: the trailer set by prefix", i)
			assert.Empty(t, rp.header.Get("X-Checksum"), "reply %d: a trailer is not a header", i)
		}
		assert.Equal(t, int32(1), runs.Load())
	})
	t.Run("body past MaxResponseBytes", func(t *testing.T) {
		runs.Store(0)
		big := strings.Repeat("r", 1000)
		srv := serve(t, newMiddleware(t, idempotency.Options{MaxResponseBytes: 100}), handler(big))
		first := postForTrailers(t, srv, "k")
		assert.Equal(t, big, first.body)
		assert.Equal(t, "sha256:abc", first.trailer.Get("X-Checksum"), "the streamed response has its trailers")
		again := postForTrailers(t, srv, "k")
		require.Equal(t, "true", again.header.Get(idempotency.BodyOmittedHeader))
		assert.Empty(t, again.trailer, "a replay without the body announces and sends no trailers")
		assert.Equal(t, int32(1), runs.Load())
	})
}

func TestResponseControllerFeaturesAreNotSupported(t *testing.T) {
	t.Parallel()
	// The documented limits: a wrapped handler's ResponseWriter holds the
	// response until it is saved, and the body was read before it ran.
	errs := make(chan map[string]error, 1)
	srv := serve(t, newMiddleware(t, idempotency.Options{}), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		_, _, hijackErr := rc.Hijack()
		errs <- map[string]error{
			"Flush":            rc.Flush(),
			"Hijack":           hijackErr,
			"SetReadDeadline":  rc.SetReadDeadline(time.Time{}),
			"SetWriteDeadline": rc.SetWriteDeadline(time.Time{}),
			"EnableFullDuplex": rc.EnableFullDuplex(),
		}
		w.WriteHeader(http.StatusCreated)
	}))
	require.Equal(t, http.StatusCreated, do(t, srv, req{key: "k"}).status)
	for name, err := range recv(t, errs, "the handler's results") {
		assert.ErrorIs(t, err, http.ErrNotSupported, name)
	}
}

// lengthSpy is a request body that declares a large Content-Length but
// sends a few bytes and stalls (ends here), and records the largest buffer
// a Read was given: what the reader allocated for it.
type lengthSpy struct {
	sent    bool
	largest int
}

func (s *lengthSpy) Read(p []byte) (int, error) {
	s.largest = max(s.largest, len(p))
	if !s.sent {
		s.sent = true
		return copy(p, "{\"n\":"), nil
	}
	return 0, io.ErrUnexpectedEOF // the client went away
}

func TestDeclaredContentLengthIsNotAllocatedUpFront(t *testing.T) {
	t.Parallel()
	o := newOrders()
	h := newMiddleware(t, idempotency.Options{}).Handler(o)
	spy := &lengthSpy{}
	r := newRequest(req{key: "k"})
	r.Body = io.NopCloser(spy)
	r.ContentLength = 1 << 20 // what the headers declare: MaxBodyBytes
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	requireProblem(t, reply{rec.Code, rec.Header(), rec.Body.String()}, http.StatusBadRequest, false)
	assert.Less(t, spy.largest, 64<<10, "the buffer grows with what arrives, not to the declared 1 MiB")
	assert.Zero(t, o.total())
}
