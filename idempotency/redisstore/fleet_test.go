package redisstore_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/internal/exactlyonce"
	"github.com/stormguard/retry/idempotency/redisstore"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleet is n servers, each with its own middleware and its own Redis
// client, as n processes would have, sharing one Redis and one handler.
type fleet struct {
	srvs   []*httptest.Server
	prefix string
}

func newFleet(t *testing.T, addr string, n int, h http.Handler, opts func(i int) idempotency.Options) *fleet {
	t.Helper()
	f := &fleet{prefix: fmt.Sprintf("fleet%d:", prefixes.Add(1))}
	for i := range n {
		s, err := redisstore.New(client(t, addr), redisstore.Options{Prefix: f.prefix})
		require.NoError(t, err)
		o := opts(i)
		o.Store = s
		m, err := idempotency.New(o)
		require.NoError(t, err)
		srv := httptest.NewServer(m.Handler(h))
		t.Cleanup(srv.Close)
		f.srvs = append(f.srvs, srv)
	}
	return f
}

// orders creates an order per run; runs of requests with X-Wait wait for
// release.
type orders struct {
	release chan struct{}
	started chan struct{}
	n       atomic.Int32
}

func newOrders() *orders {
	return &orders{release: make(chan struct{}), started: make(chan struct{}, 8)}
}

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Wait") != "" {
		o.started <- struct{}{}
		<-o.release
	}
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":%d}`, o.n.Add(1))
}

type reply struct {
	status int
	header http.Header
	body   string
}

func post(srv *httptest.Server, key, body string, wait bool) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Idempotency-Key", key)
	if wait {
		req.Header.Set("X-Wait", "1")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}, err
}

func mustPost(t *testing.T, srv *httptest.Server, key, body string) reply {
	t.Helper()
	r, err := post(srv, key, body, false)
	require.NoError(t, err)
	return r
}

func postAsync(srv *httptest.Server, key, body string) <-chan reply {
	ch := make(chan reply, 1)
	go func() {
		r, err := post(srv, key, body, true)
		if err != nil {
			r = reply{status: -1, body: err.Error()}
		}
		ch <- r
	}()
	return ch
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}

func TestThreeInstancesActAsOneServer(t *testing.T) {
	t.Parallel()
	o := newOrders()
	f := newFleet(t, startRedis(t), 3, o, func(int) idempotency.Options { return idempotency.Options{} })
	a, b, c := f.srvs[0], f.srvs[1], f.srvs[2]

	first := postAsync(a, "k", "{}")
	recv(t, o.started, "the handler on A")
	assert.Equal(t, http.StatusConflict, mustPost(t, b, "k", "{}").status, "B sees A's request in flight")
	assert.Equal(t, http.StatusUnprocessableEntity, mustPost(t, c, "k", `{"other":1}`).status, "C sees A's fingerprint")
	close(o.release)
	done := recv(t, first, "A's reply")
	require.Equal(t, http.StatusCreated, done.status)

	for _, srv := range f.srvs {
		r := mustPost(t, srv, "k", "{}")
		assert.Equal(t, done.body, r.body)
		assert.Equal(t, "true", r.header.Get(idempotency.ReplayedHeader))
	}
	assert.Equal(t, int32(1), o.n.Load(), "the handler ran once in the fleet")
}

func TestFleetLeaseIsRenewedAndACrashedHolderIsTakenOver(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	rdb := client(t, addr)
	const lease = 3 * time.Second
	// A renews on clk, whose waits the test ends one by one; B's clock
	// never moves, so B never renews: a process that hangs or died. Redis's
	// time is moved by shifting expiries (advance), never by sleeping.
	clk := retrytest.NewClock()
	o := newOrders()
	f := newFleet(t, addr, 2, o, func(i int) idempotency.Options {
		if i == 0 {
			return idempotency.Options{Lease: lease, Clock: clk}
		}
		return idempotency.Options{Lease: lease, Clock: clock.NewMock()}
	})
	a, b := f.srvs[0], f.srvs[1]

	t.Run("renewed while the handler runs", func(t *testing.T) {
		slow := postAsync(a, "slow", "{}")
		recv(t, o.started, "the handler on A")
		for range 9 { // 9s: three leases; a renewal every Lease/3
			advance(t, rdb, f.prefix, time.Second)
			clk.Add(time.Second)
			awaitRenewal(t, rdb, f.prefix, lease)
		}
		assert.Equal(t, http.StatusConflict, mustPost(t, b, "slow", "{}").status, "A still holds its key")
		o.release <- struct{}{}
		assert.Equal(t, http.StatusCreated, recv(t, slow, "A's reply").status)
	})

	t.Run("taken over one lease after a crash", func(t *testing.T) {
		hung := postAsync(b, "crash", "{}")
		recv(t, o.started, "the handler on B")
		// Redis's real clock runs too, so the margin is wide: a second.
		advance(t, rdb, f.prefix, lease-time.Second)
		assert.Equal(t, http.StatusConflict, mustPost(t, a, "crash", "{}").status, "within the lease")
		advance(t, rdb, f.prefix, time.Second)
		taken := mustPost(t, a, "crash", "{}")
		require.Equal(t, http.StatusCreated, taken.status, "after the lease, not the TTL")

		o.release <- struct{}{} // B wakes: its result must not replace A's
		assert.Equal(t, http.StatusConflict, recv(t, hung, "B's reply").status)
		again := mustPost(t, b, "crash", "{}")
		assert.Equal(t, taken.body, again.body)
	})
}

// Exactly once with three middleware instances on one Redis, round robin
// so that a retry lands on another instance than its first try, under
// every scenario, and under a Redis connection that loses replies.
func TestExactlyOnceWithThreeInstancesOnOneRedis(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	scenarios := append([]exactlyonce.Scenario(nil), exactlyonce.Scenarios...)
	scenarios = append(scenarios, exactlyonce.Scenario{Name: "Redis loses replies", Config: exactlyonce.Default})
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			cfg := sc.Config
			to := addr
			var proxy *droppingProxy
			if sc.Name == "Redis loses replies" {
				// 3% of replies lost: go-redis's 4 tries all lose theirs
				// about once in a million calls.
				proxy = startDroppingProxy(t, addr, 0.03, cfg.Seed)
				to = proxy.addr()
			}
			prefix := fmt.Sprintf("e2e%d:", prefixes.Add(1))
			var switches []*exactlyonce.Switch
			var mws []*idempotency.Middleware
			for range 3 {
				s, err := redisstore.New(client(t, to), redisstore.Options{Prefix: prefix})
				require.NoError(t, err)
				var store idempotency.Store = s
				if cfg.Outage > 0 {
					sw := exactlyonce.NewSwitch(s)
					switches = append(switches, sw)
					store = sw
				}
				m, err := idempotency.New(idempotency.Options{Store: store, Lease: cfg.Lease})
				require.NoError(t, err)
				mws = append(mws, m)
			}
			cfg.Down = func(down bool) { // one Redis: down for every instance at once
				for _, sw := range switches {
					sw.Down(down)
				}
			}
			var next atomic.Uint64
			var mu sync.Mutex
			perInstance := make([]int, 3)
			res := exactlyonce.Run(t, cfg, func(h http.Handler) http.Handler {
				wrapped := make([]http.Handler, 3)
				for i, m := range mws {
					wrapped[i] = m.Handler(h)
				}
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					i := int(next.Add(1) % 3)
					mu.Lock()
					perInstance[i]++
					mu.Unlock()
					wrapped[i].ServeHTTP(w, r)
				})
			})
			lost := ""
			if proxy != nil {
				lost = fmt.Sprintf("; %d Redis replies lost", proxy.lost.Load())
			}
			t.Logf("three instances on one Redis, %s: %v; requests per instance %v%s", sc.Name, res, perInstance, lost)
		})
	}
}
