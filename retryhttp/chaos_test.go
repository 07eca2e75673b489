package retryhttp_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The chaos test drives many requests of every kind through a Transport to
// a loopback server that fails at random in every way it can, and checks
// what must hold whatever the failures and however the goroutines run.
const (
	chaosSeed        = 6
	chaosRequests    = 2000
	chaosWorkers     = 32
	chaosMaxAttempts = 4
)

// The faults of the chaos server. Each arrival of a request gets one, drawn
// from the seed, the request's id and how many times the request has
// arrived before, never from the order of arrivals across requests.
type fault uint8

const (
	faultOK       fault = iota // 200 with a body of up to 32KiB
	fault429Now                // 429, Retry-After: 0
	fault429Later              // 429, Retry-After: 1, which reaches MaxRetryAfter
	fault500                   // not retried by default
	fault502
	fault503
	fault503Past // 503, Retry-After a date in the past
	fault504
	faultGarbage // 503 with a malformed or absurd Retry-After
	faultReset   // hijack, SetLinger(0), close: a TCP RST
	faultHangUp  // hijack and close: EOF before a response
	faultStall   // no answer until the client gives up
	faultMidBody // 200, then close after half the Content-Length
	faultCount
)

var faultNames = [faultCount]string{"200", "429 now", "429 later", "500", "502", "503", "503 past", "504", "garbage Retry-After", "reset", "hang up", "stall", "mid-body close"}

func (f fault) String() string { return faultNames[f] }

// faultWeights are the odds of each fault in percent, in faultCount order.
var faultWeights = [faultCount]int{40, 6, 3, 4, 6, 6, 3, 6, 5, 6, 5, 5, 5}

// garbageRetryAfter are the Retry-After values of faultGarbage: ignored, or
// capped at MaxRetryAfter, which returns the response at once.
var garbageRetryAfter = []string{"soon", "-5", "1.5", "1e3", "+1", "0x10", "99999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "Sun, 01 Mar 2026 12:00:30 PST"}

// script is what the server does on one arrival of a request.
type script struct {
	fault      fault
	size       int    // the length of the response body
	retryAfter string // for faultGarbage
}

// scriptFor returns the script of the nth arrival of request id, n from 0.
func scriptFor(id, n int) script {
	r := rand.New(rand.NewPCG(chaosSeed, uint64(id)<<16|uint64(n)))
	var s script
	pick := r.IntN(100)
	for s.fault = 0; pick >= faultWeights[s.fault]; s.fault++ {
		pick -= faultWeights[s.fault]
	}
	s.size = r.IntN(32 << 10)
	s.retryAfter = garbageRetryAfter[r.IntN(len(garbageRetryAfter))]
	return s
}

// The kinds of request, by id.
type kind uint8

const (
	kindGET kind = iota
	kindPUT
	kindKeyedPOST
	kindPOST // no idempotency key: at most one execution
	kindCount
)

func kindOf(id int) kind { return kind(id % int(kindCount)) }

// requestBody is the body of request id, if its kind has one: up to 16KiB
// that differ from one request to the next.
func requestBody(id int) []byte {
	if kindOf(id) == kindGET {
		return nil
	}
	b := make([]byte, 1+id*7919%(16<<10))
	for i := range b {
		b[i] = byte(id + i*31)
	}
	return b
}

// responseBody is what the server writes for the nth arrival of request id.
func responseBody(id, n, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(id ^ n + i)
	}
	return b
}

// arrival is what one arrival of a request carried to the chaos server.
type arrival struct {
	script
	key      string   // the Idempotency-Key header
	hasKey   bool     // the header was there
	body     [32]byte // SHA-256 of the body read
	executed bool     // the handler read the whole body: it would have acted
}

// chaosServer is a loopback server that follows the script of each
// arrival, records what each request carried, and counts connections.
type chaosServer struct {
	*httptest.Server
	stop chan struct{} // ends the stalls, should the client fail to

	mu       sync.Mutex
	arrivals map[int][]arrival // by request id

	connCount
}

func newChaosServer(t *testing.T) *chaosServer {
	t.Helper()
	s := &chaosServer{stop: make(chan struct{}), arrivals: make(map[int][]arrival)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ConnState = s.track
	// The server's own log would report the resets and broken pipes that
	// are the point of the test.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.stop) }) // before Close, which waits for the handlers
	return s
}

func (s *chaosServer) serve(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.Header.Get("X-Request-Id"))
	if err != nil {
		http.Error(w, "no X-Request-Id", http.StatusBadRequest)
		return
	}
	h := sha256.New()
	_, err = io.Copy(h, r.Body)
	a := arrival{key: r.Header.Get("Idempotency-Key"), executed: err == nil}
	_, a.hasKey = r.Header["Idempotency-Key"]
	h.Sum(a.body[:0])

	s.mu.Lock()
	n := len(s.arrivals[id])
	a.script = scriptFor(id, n)
	s.arrivals[id] = append(s.arrivals[id], a)
	s.mu.Unlock()

	w.Header().Set("X-Arrival", strconv.Itoa(n))
	switch a.fault {
	case faultOK:
		write(w, http.StatusOK, responseBody(id, n, a.size))
	case fault429Now:
		w.Header().Set("Retry-After", "0")
		write(w, http.StatusTooManyRequests, responseBody(id, n, 64))
	case fault429Later:
		w.Header().Set("Retry-After", "1")
		write(w, http.StatusTooManyRequests, responseBody(id, n, 64))
	case fault500, fault502, fault503, fault504:
		code := map[fault]int{fault500: 500, fault502: 502, fault503: 503, fault504: 504}[a.fault]
		write(w, code, responseBody(id, n, 64))
	case fault503Past:
		w.Header().Set("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")
		write(w, http.StatusServiceUnavailable, responseBody(id, n, 64))
	case faultGarbage:
		w.Header().Set("Retry-After", a.retryAfter)
		write(w, http.StatusServiceUnavailable, responseBody(id, n, 64))
	case faultReset, faultHangUp:
		conn := hijack(w)
		if tcp, ok := conn.(*net.TCPConn); ok && a.fault == faultReset {
			_ = tcp.SetLinger(0)
		}
		conn.Close()
	case faultStall:
		select {
		case <-r.Context().Done(): // the attempt timed out and its connection closed
		case <-s.stop:
		}
	case faultMidBody:
		body := responseBody(id, n, max(a.size, 2))
		sum := sha256.Sum256(body)
		w.Header().Set("X-Body-Sha256", hex.EncodeToString(sum[:]))
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		hijack(w).Close() // Hijack flushes what was written first
	}
}

// write answers with code and body, and the body's length and SHA-256 in
// the headers.
func write(w http.ResponseWriter, code int, body []byte) {
	sum := sha256.Sum256(body)
	w.Header().Set("X-Body-Sha256", hex.EncodeToString(sum[:]))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func hijack(w http.ResponseWriter) net.Conn {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	return conn
}

// countingBase is the Transport's Base: it counts the attempts of each
// request, by id, and the times net/http replayed one of them on another
// connection by itself, as the calls to GotConn after the first.
type countingBase struct {
	base *http.Transport

	mu    sync.Mutex
	tally map[int]*baseTally
}

type baseTally struct{ attempts, replays int }

func (c *countingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	id, _ := strconv.Atoi(req.Header.Get("X-Request-Id"))
	var conns atomic.Int32
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { conns.Add(1) }}
	resp, err := c.base.RoundTrip(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	c.mu.Lock()
	tl := c.tally[id]
	if tl == nil {
		tl = &baseTally{}
		c.tally[id] = tl
	}
	tl.attempts++
	tl.replays += max(int(conns.Load())-1, 0)
	c.mu.Unlock()
	return resp, err
}

func (c *countingBase) CloseIdleConnections() { c.base.CloseIdleConnections() }

// outcome is what the caller got for one request.
type outcome struct {
	trace   retry.Trace
	err     error  // from Client.Do
	status  int    // of the response
	arrival int    // the server's X-Arrival: which arrival answered
	n       int    // bytes read from the body
	readErr error  // from reading the body to its end
	sum     string // SHA-256 of what was read
	wantSum string // the server's X-Body-Sha256
	wantLen int64  // Content-Length
}

// TestChaos sends chaosRequests requests from chaosWorkers goroutines (GET,
// PUT with a body, POST with an idempotency key and POST without) through a
// Transport to a server that answers each arrival with a fault drawn from
// a fixed seed: every retryable and final status, Retry-After of every
// kind, connection resets, hang-ups, stalls past the attempt timeout and
// bodies cut short. Waits are a few milliseconds of real time. Whatever
// happened, it checks that:
//   - the Transport made at most MaxAttempts attempts of a request, and the
//     server saw no more arrivals than those plus net/http's own replays;
//   - a POST without a key was attempted once and executed at most once;
//   - every arrival of a keyed POST carried its key, and every body that
//     reached the server, of a PUT or a POST, was the caller's, byte for
//     byte;
//   - every response the caller got reads to its end with the length and
//     hash the server sent, or fails with io.ErrUnexpectedEOF where the
//     server cut it short; every error comes from a failure the Transport
//     knows;
//   - afterwards no connection is open once the client closes its idle
//     ones, no goroutine is left, and the heap is back near where it was.
//
// It does not run in parallel with other tests, so that goleak and the
// heap measure it alone.
func TestChaos(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // last: after the server's Close
	heapBefore := heapAlloc()
	start := time.Now()

	srv := newChaosServer(t)
	base := &countingBase{
		base:  &http.Transport{MaxIdleConnsPerHost: chaosWorkers},
		tally: make(map[int]*baseTally),
	}
	client := &http.Client{Transport: &retryhttp.Transport{
		Base: base,
		Policy: retry.Policy{
			MaxAttempts:    chaosMaxAttempts,
			BaseBackoff:    time.Millisecond,
			MaxBackoff:     5 * time.Millisecond,
			AttemptTimeout: 50 * time.Millisecond,
		},
		MaxRetryAfter: time.Second,       // Retry-After: 1 or more returns the response at once
		Hold:          retryhttp.HoldOff, // each request on its own: holds are tested apart
	}}

	outcomes := make([]outcome, chaosRequests)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range chaosWorkers {
		wg.Go(func() {
			for id := int(next.Add(1) - 1); id < chaosRequests; id = int(next.Add(1) - 1) {
				outcomes[id] = send(client, srv.URL, id)
			}
		})
	}
	wg.Wait()
	sent := time.Since(start)

	client.CloseIdleConnections()
	require.Eventually(t, func() bool { return srv.open.Load() == 0 }, watchdog, time.Millisecond,
		"connections left open after CloseIdleConnections: a response body was not closed")
	srv.Close() // waits for every handler, so the arrivals are final

	st := checkChaos(t, srv, base, outcomes)

	base.CloseIdleConnections()
	heapAfter := heapAlloc()
	assert.Less(t, heapAfter, heapBefore+16<<20, "heap grew from %d to %d bytes", heapBefore, heapAfter)
	t.Logf("%d requests in %v (%v in all): %d attempts, %d net/http replays, %d server arrivals (at most %d for one request), %d connections; heap %d KiB before, %d KiB after",
		chaosRequests, sent.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		st.attempts, st.replays, st.arrivals, st.maxArrivals, srv.conns.Load(), heapBefore>>10, heapAfter>>10)
	t.Logf("POSTs without a key: %d executed once, %d never", st.keyless[1], st.keyless[0])
	t.Logf("faults served: %v", st.faults)
	t.Logf("outcomes: %v", st.outcomes)
}

// send sends request id and reads its response to the end.
func send(c *http.Client, url string, id int) outcome {
	var o outcome
	method := map[kind]string{kindGET: http.MethodGet, kindPUT: http.MethodPut, kindKeyedPOST: http.MethodPost, kindPOST: http.MethodPost}[kindOf(id)]
	var body io.Reader
	if b := requestBody(id); b != nil {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		o.err = err
		return o
	}
	req.Header.Set("X-Request-Id", strconv.Itoa(id))
	if kindOf(id) == kindKeyedPOST {
		req.Header.Set("Idempotency-Key", "key-"+strconv.Itoa(id))
	}
	req = req.WithContext(retryhttp.WithTrace(req.Context(), &o.trace))
	resp, err := c.Do(req)
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	o.status, o.wantLen, o.wantSum = resp.StatusCode, resp.ContentLength, resp.Header.Get("X-Body-Sha256")
	o.arrival, _ = strconv.Atoi(resp.Header.Get("X-Arrival"))
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	o.n, o.readErr, o.sum = int(n), err, hex.EncodeToString(h.Sum(nil))
	return o
}

// chaosStats are the totals that TestChaos reports.
type chaosStats struct {
	attempts, replays, arrivals, maxArrivals int
	keyless                                  [2]int // POSTs without a key executed never, once
	faults                                   map[string]int
	outcomes                                 map[string]int
}

// checkChaos checks the invariants of TestChaos, request by request.
func checkChaos(t *testing.T, srv *chaosServer, base *countingBase, outcomes []outcome) chaosStats {
	t.Helper()
	st := chaosStats{faults: make(map[string]int), outcomes: make(map[string]int)}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	base.mu.Lock()
	defer base.mu.Unlock()
	for id, o := range outcomes {
		arrivals := srv.arrivals[id]
		var tl baseTally
		if p := base.tally[id]; p != nil {
			tl = *p
		}
		st.attempts += tl.attempts
		st.replays += tl.replays
		st.arrivals += len(arrivals)
		st.maxArrivals = max(st.maxArrivals, len(arrivals))
		for _, a := range arrivals {
			st.faults[a.fault.String()]++
		}
		k := kindOf(id)

		if !assert.LessOrEqual(t, tl.attempts, chaosMaxAttempts, "request %d: attempts", id) ||
			!assert.Equal(t, o.trace.Attempts(), tl.attempts, "request %d: the Trace counts every attempt", id) ||
			!assert.LessOrEqual(t, len(arrivals), tl.attempts+tl.replays, "request %d: server arrivals > attempts + net/http replays", id) {
			continue
		}
		wantBody := sha256.Sum256(requestBody(id))
		var executed int
		for i, a := range arrivals {
			if a.executed {
				executed++
				assert.Equal(t, wantBody, a.body, "request %d, arrival %d: the body differs from the caller's", id, i)
			}
			if k == kindKeyedPOST {
				assert.Equal(t, "key-"+strconv.Itoa(id), a.key, "request %d, arrival %d: the key", id, i)
			} else {
				assert.False(t, a.hasKey, "request %d, arrival %d: a key no one asked for", id, i)
			}
		}
		if k == kindPOST {
			assert.Equal(t, 1, tl.attempts, "request %d: a POST without a key is attempted once", id)
			if assert.LessOrEqual(t, executed, 1, "request %d: a POST without a key executed twice", id) {
				st.keyless[executed]++
			}
		}

		if o.err != nil {
			// The last attempt failed in a way DefaultClassify knows (a
			// reset, a hang-up, a timeout): not an error of the Transport's.
			last := o.trace.Last()
			assert.NotEqual(t, "error", strings.SplitN(last.Reason, ";", 2)[0], "request %d: unexpected error %v", id, o.err)
			assert.Error(t, last.Err, "request %d", id)
			st.outcomes["error: "+last.Reason]++
			continue
		}
		if !assert.Less(t, o.arrival, len(arrivals), "request %d: answered by an arrival the server did not see", id) {
			continue
		}
		a := arrivals[o.arrival]
		if a.fault == faultMidBody {
			assert.ErrorIs(t, o.readErr, io.ErrUnexpectedEOF, "request %d: a body cut short", id)
			assert.Less(t, int64(o.n), o.wantLen, "request %d: a body cut short", id)
			st.outcomes["body cut short"]++
			continue
		}
		assert.NoError(t, o.readErr, "request %d: reading the body", id)
		assert.Equal(t, o.wantLen, int64(o.n), "request %d: body length", id)
		assert.Equal(t, o.wantSum, o.sum, "request %d: body hash", id)
		assert.Equal(t, responseStatus(a.fault), o.status, "request %d: status for %v", id, a.fault)
		st.outcomes[strconv.Itoa(o.status)+" "+o.trace.Stop().String()]++
	}
	return st
}

func responseStatus(f fault) int {
	switch f {
	case faultOK:
		return 200
	case fault429Now, fault429Later:
		return 429
	case fault500:
		return 500
	case fault502:
		return 502
	case fault504:
		return 504
	}
	return 503
}

// heapAlloc returns the bytes of live heap objects, after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
