package retryhttp_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: no
// attempt, timer, refresh or response body of the Transport may leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// watchdog bounds how long a test waits for something that happens at once
// when the code works; it is never reached then, so it costs no time.
const watchdog = 10 * time.Second

// server is an httptest.Server on loopback that answers its i-th request
// with the i-th handler (the last one answers the rest), and records what
// each request carried and how many connections were opened.
type server struct {
	*httptest.Server
	handlers []http.HandlerFunc
	connCount

	mu   sync.Mutex
	seen []seen
}

// connCount counts a test server's connections, through its ConnState hook.
type connCount struct {
	conns atomic.Int32 // connections opened
	open  atomic.Int32 // connections neither closed nor hijacked yet
}

func (c *connCount) track(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		c.conns.Add(1)
		c.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.open.Add(-1)
	}
}

// seen is what one request carried to the server.
type seen struct {
	header http.Header
	body   string
}

func newServer(t *testing.T, handlers ...http.HandlerFunc) *server {
	t.Helper()
	s := &server{handlers: handlers}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = s.track
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := len(s.seen)
	s.seen = append(s.seen, seen{header: r.Header.Clone(), body: string(body)})
	s.mu.Unlock()
	s.handlers[min(i, len(s.handlers)-1)](w, r)
}

// hits returns how many requests reached the server.
func (s *server) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// requests returns what every request carried, in order.
func (s *server) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

// client returns a client whose Transport is tr over the server's own
// transport, so that the server's Close closes its connections.
func (s *server) client(tr *retryhttp.Transport) *http.Client {
	if tr.Base == nil {
		tr.Base = s.Client().Transport
	}
	return &http.Client{Transport: tr}
}

// status answers with code, the header pairs kv and a short body.
func status(code int, kv ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Header().Set(kv[i], kv[i+1])
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d", code)
	}
}

// hangUp answers by closing the connection without a response. With reset,
// the close is abortive: the client sees a connection reset, not an EOF.
func hangUp(reset bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		if tcp, ok := conn.(*net.TCPConn); ok && reset {
			_ = tcp.SetLinger(0)
		}
		conn.Close()
	}
}

// fakePolicy is a policy on clk with waits of exactly 200ms, 400ms, 800ms.
func fakePolicy(clk *retrytest.Clock) retry.Policy {
	return retry.Policy{Jitter: retry.NoJitter, Clock: clk}
}

// result is what a request sent with do came back with.
type result struct {
	resp  *http.Response
	err   error
	waits []time.Duration // the waits the Transport started, in order
	trace retry.Trace
}

// do sends req on c and ends at once each wait the Transport starts on clk.
// The response's body is closed when the test ends.
func do(t *testing.T, c *http.Client, clk *retrytest.Clock, req *http.Request) result {
	t.Helper()
	var r result
	req = req.WithContext(retryhttp.WithTrace(req.Context(), &r.trace))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.resp, r.err = c.Do(req)
	}()
	for {
		select {
		case <-done:
			if r.resp != nil {
				t.Cleanup(func() { r.resp.Body.Close() })
			}
			return r
		case d := <-clk.Waits():
			r.waits = append(r.waits, d)
			clk.Add(d)
		case <-time.After(watchdog):
			require.FailNow(t, "the request did not finish")
		}
	}
}

// get returns a GET request for url.
func get(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

// reasons returns each attempt's Reason from tr.
func reasons(tr retry.Trace) []string {
	var rs []string
	for a := range tr.All() {
		rs = append(rs, a.Reason)
	}
	return rs
}

// readAll reads and closes body.
func readAll(t *testing.T, body io.ReadCloser) string {
	t.Helper()
	defer body.Close()
	b, err := io.ReadAll(body)
	require.NoError(t, err)
	return string(b)
}

// closeTracker is a request body that records whether it was closed.
type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error {
	c.closed.Store(true)
	return nil
}

// recv receives from ch, or fails the test if nothing comes in time.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(watchdog):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}
