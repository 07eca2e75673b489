package redisstore_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deafProxy forwards connections to a Redis until deaf is set; from then
// on it still accepts connections and reads what is sent, and answers
// nothing: a Redis that hangs (a long fork for a snapshot, a frozen VM, a
// network that drops replies).
type deafProxy struct {
	ln     net.Listener
	target string
	deaf   atomic.Bool

	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

func startDeafProxy(t *testing.T, target string) *deafProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &deafProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *deafProxy) addr() string { return p.ln.Addr().String() }

func (p *deafProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.wg.Add(2)
		go func() { // client to Redis: dropped once deaf
			defer p.wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 && !p.deaf.Load() {
					if _, werr := up.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // Redis to client
			defer p.wg.Done()
			_, _ = io.Copy(c, up)
		}()
	}
}

// track keeps the connections for close; it reports false once closed.
func (p *deafProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

// close stops the proxy: every connection ends, so that the calls that
// hang on it return (with an error) and their goroutines end.
func (p *deafProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns, p.closed = nil, true
	p.mu.Unlock()
	p.wg.Wait()
}

func TestStoreTimeoutBoundsARedisThatNeverAnswers(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	var created atomic.Int32
	orders := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		created.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	reports := make(chan idempotency.Summary, 4)
	// Registered before the proxy, so closed after it: the proxy's close
	// ends the calls that the server's handlers may still wait on.
	var srv *httptest.Server
	t.Cleanup(func() {
		if srv != nil {
			srv.Close()
		}
	})
	proxy := startDeafProxy(t, addr)
	// go-redis as most services build it: no ContextTimeoutEnabled, so
	// ctx deadlines do not reach the socket; and a ReadTimeout longer than
	// any test (-1: none), so that only the middleware can end the wait.
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr(), ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	m, err := idempotency.New(idempotency.Options{
		Store:        newStore(t, rdb),
		StoreTimeout: 50 * time.Millisecond,
		OnDone:       func(_ *http.Request, s idempotency.Summary) { reports <- s },
	})
	require.NoError(t, err)
	srv = httptest.NewServer(m.Handler(orders))

	post := func(key string) <-chan int {
		codes := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader("{}"))
			req.Header.Set("Idempotency-Key", key)
			resp, err := srv.Client().Do(req)
			if err != nil {
				codes <- -1
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
		return codes
	}
	require.Equal(t, http.StatusCreated, recv(t, post("before"), "a request while Redis answers"))
	require.Equal(t, idempotency.OutcomeExecuted, recv(t, reports, "its report").Outcome)

	proxy.deaf.Store(true)
	for _, key := range []string{"before", "fresh"} { // a replay and a new key
		assert.Equal(t, http.StatusServiceUnavailable, recv(t, post(key), "the answer while Redis hangs"), key)
		s := recv(t, reports, "its report")
		assert.Equal(t, idempotency.OutcomeStoreFailed, s.Outcome, key)
		assert.ErrorIs(t, s.Err, context.DeadlineExceeded, key)
	}
	assert.Equal(t, int32(1), created.Load(), "no handler ran while the store could not answer")
}
