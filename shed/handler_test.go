package shed_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stormguard/retry/shed"
)

// blocking is a handler that holds each request until released, and
// records the Criticality it saw.
type blocking struct {
	release chan struct{}
	served  atomic.Int64
	mu      sync.Mutex
	seen    []string
}

func newBlocking() *blocking { return &blocking{release: make(chan struct{})} }

func (b *blocking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.seen = append(b.seen, r.Header.Get(shed.PriorityHeader))
	b.mu.Unlock()
	b.served.Add(1)
	<-b.release
	_, _ = w.Write([]byte("ok"))
}

func serve(h http.Handler, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/orders", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A shed request never reaches next and gets a 503 with a Retry-After in
// whole seconds and a problem+json body.
func TestHandlerSheds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1, MaxRetryAfter: 7 * time.Second})
		b := newBlocking()
		h := l.Handler(b)
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- serve(h) }()
		synctest.Wait()

		w := serve(h)
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", w.Header().Get("Retry-After"))
		assert.GreaterOrEqual(t, secs, 1)
		assert.LessOrEqual(t, secs, 7)
		assert.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
		var problem struct {
			Status int    `json:"status"`
			Title  string `json:"title"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &problem))
		assert.Equal(t, 503, problem.Status)
		assert.EqualValues(t, 1, b.served.Load(), "the shed request never reached the handler")

		close(b.release)
		assert.Equal(t, http.StatusOK, (<-done).Code)
		assert.Equal(t, "ok", serve(h).Body.String())
	})
}

// The shed come back spread out: Retry-After varies between responses,
// and widens when many more are shed than admitted.
func TestRetryAfterIsJitteredPerResponse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
		b := newBlocking()
		h := l.Handler(b)
		go serve(h)
		synctest.Wait()
		time.Sleep(2 * time.Second) // past the shed ratio's first second
		spread := func() map[int]int {
			seen := map[int]int{}
			for range 400 {
				w := serve(h)
				require.Equal(t, http.StatusServiceUnavailable, w.Code)
				secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
				require.NoError(t, err)
				require.GreaterOrEqual(t, secs, 1)
				require.LessOrEqual(t, secs, int(shed.DefaultMaxRetryAfter/time.Second))
				seen[secs]++
			}
			return seen
		}
		light := spread() // none shed in the second before: a window of 2 s
		assert.Len(t, light, 2, "%v", light)
		for secs, n := range light {
			assert.Less(t, n, 300, "%d s: %d of 400", secs, n)
		}
		time.Sleep(time.Second) // measured again: 400 shed for 1 admitted
		heavy := spread()       // a window that fills [1 s, MaxRetryAfter]
		assert.GreaterOrEqual(t, len(heavy), 25, "%v", heavy)
		for secs, n := range heavy {
			assert.Less(t, n, 40, "%d s: %d of 400, no pile-up at the cap", secs, n)
		}
		close(b.release)
	})
}

// A handler that answers 503 itself (its dependency refused) takes an
// adaptive limit down.
func TestHandlerOverloadedFromStatus(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{InitialLimit: 50})
		h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Millisecond)
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		for range 300 {
			serve(h)
		}
		assert.Less(t, l.Stats().Limit, 50)
	})
}

// The default Priority reads the Criticality header: a critical request
// takes the queue place of a sheddable one, which is shed.
func TestHandlerPriorityFromHeader(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: 1, QueueTimeout: time.Second})
		b := newBlocking()
		h := l.Handler(b)
		codes := make(chan int, 3)
		for _, c := range []string{"critical", "sheddable", "critical_plus"} {
			go func() { codes <- serve(h, shed.PriorityHeader, c).Code }()
			synctest.Wait()
		}
		assert.Equal(t, http.StatusServiceUnavailable, <-codes, "the sheddable one made room")
		close(b.release)
		assert.Equal(t, http.StatusOK, <-codes)
		assert.Equal(t, http.StatusOK, <-codes)
		assert.Equal(t, []string{"critical", "critical_plus"}, b.seen)
	})
}

// The loop closes: a retryhttp client sends its priority, is shed, waits
// the Retry-After the server chose (on its fake clock), and succeeds once
// the server has room.
func TestRetryhttpClientHonoursTheShed(t *testing.T) {
	t.Parallel()
	l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1, MaxRetryAfter: 4 * time.Second})
	b := newBlocking()
	h := l.Handler(b)
	go serve(h) // takes the only slot
	require.Eventually(t, func() bool { return b.served.Load() == 1 }, 5*time.Second, time.Millisecond)

	clk := retrytest.NewClock()
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:   retrytest.HandlerTransport(h),
		Policy: retry.Policy{MaxAttempts: 3, Clock: clk},
	}}
	var tr retry.Trace
	ctx := retryhttp.WithTrace(retryhttp.WithPriority(context.Background(), shed.SheddablePlus), &tr)
	got := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/orders", nil)
		resp, err := client.Do(req)
		if err != nil {
			got <- 0
			return
		}
		_ = resp.Body.Close()
		got <- resp.StatusCode
	}()
	wait := <-clk.Waits() // the client waits out the shed's Retry-After
	assert.GreaterOrEqual(t, wait, time.Second)
	assert.LessOrEqual(t, wait, 4*time.Second+time.Second, "Retry-After plus at most the jitter")
	close(b.release) // the slot frees
	require.Eventually(t, func() bool { return l.Stats().InFlight == 0 }, 5*time.Second, time.Millisecond)
	clk.Add(wait)
	assert.Equal(t, http.StatusOK, <-got)
	assert.Equal(t, 2, tr.Attempts())
	b.mu.Lock()
	assert.Equal(t, []string{"", "sheddable_plus"}, b.seen, "the client's priority reached the server")
	b.mu.Unlock()
}

// A shed's Retry-After is that request's wait, not a pause of the whole
// client: a shared retryhttp.Transport whose request was shed sends its
// other requests to that origin at once (a hold of the origin, as for a
// 429, would stop all its traffic to a server that refused only its
// excess). The shed answer says so with the Load-Shed header.
func TestSharedTransportIsNotHeldByAShed(t *testing.T) {
	t.Parallel()
	l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1, MaxRetryAfter: 4 * time.Second})
	b := newBlocking()
	h := l.Handler(b)
	go serve(h) // takes the only slot
	require.Eventually(t, func() bool { return b.served.Load() == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, "request", serve(h).Header().Get(shed.LoadShedHeader))

	clk := retrytest.NewClock()
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:   retrytest.HandlerTransport(h),
		Policy: retry.Policy{MaxAttempts: 3, Clock: clk},
	}}
	get := func() chan int {
		got := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/orders", nil)
			resp, err := client.Do(req)
			if err != nil {
				got <- 0
				return
			}
			_ = resp.Body.Close()
			got <- resp.StatusCode
		}()
		return got
	}
	first := get()
	wait := <-clk.Waits() // shed: waiting its Retry-After
	close(b.release)
	require.Eventually(t, func() bool { return l.Stats().InFlight == 0 }, 5*time.Second, time.Millisecond)
	second := get()
	select {
	case code := <-second:
		assert.Equal(t, http.StatusOK, code, "sent at once, with no wait on the clock")
	case <-time.After(5 * time.Second):
		t.Fatal("the second request was held back by the first one's shed")
	}
	// The handler returns, and gives its slot back, just after its
	// answer's headers reach the client.
	require.Eventually(t, func() bool { return l.Stats().InFlight == 0 }, 5*time.Second, time.Millisecond)
	clk.Add(wait)
	assert.Equal(t, http.StatusOK, <-first)
}
