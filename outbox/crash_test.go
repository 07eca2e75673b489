//go:build linux

package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/outbox"
)

// The crash harness: a child process (this test binary, re-executed)
// enqueues N ops and runs them against a server on loopback behind the
// idempotency middleware; the parent kills it with SIGKILL at random points
// and starts it again, until a child finishes. Then: no op is lost, no op
// was sent under a second key, and the server had exactly N effects.
//
// OUTBOX_CRASH_OPS and OUTBOX_CRASH_KILLS set the size [2,000 ops, 20
// kills]; the full proof is OUTBOX_CRASH_OPS=10000 OUTBOX_CRASH_KILLS=100.
// OUTBOX_CRASH_CONCURRENCY [16] is the child's Options.Concurrency, and how
// many goroutines enqueue: a crash can cut that many sends short.
const (
	envChild       = "OUTBOX_CRASH_CHILD" // the journal's path, in the child
	envURL         = "OUTBOX_CRASH_URL"
	envOps         = "OUTBOX_CRASH_OPS"
	envKills       = "OUTBOX_CRASH_KILLS"
	envConcurrency = "OUTBOX_CRASH_CONCURRENCY"
	envSent        = "OUTBOX_CRASH_SENT" // a file of "op key" lines: the ops the server saw
)

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	return n
}

// server counts what reaches it: every send, by op, with its key, outside
// the middleware; every effect, by op, inside it.
type server struct {
	mu       sync.Mutex
	sends    int
	waits    int                        // sends answered 409: the op's cut send still ran
	keys     map[string]map[string]bool // op → keys it was sent under
	effects  map[string]int             // op → handler runs
	answered map[string]int             // op → sends not answered 409
	progress chan struct{}
}

func (s *server) outer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cut", http.StatusBadRequest) // the child died mid-send
			return
		}
		s.mu.Lock()
		s.sends++
		id := string(body)
		if s.keys[id] == nil {
			s.keys[id] = map[string]bool{}
		}
		s.keys[id][r.Header.Get("Idempotency-Key")] = true
		s.mu.Unlock()
		select {
		case s.progress <- struct{}{}:
		default:
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		s.mu.Lock()
		if sw.status == http.StatusConflict {
			s.waits++
		} else {
			s.answered[string(body)]++
		}
		s.mu.Unlock()
	})
}

// statusWriter keeps the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *server) effect(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.effects[string(body)]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

// sentKeys lists, one "op key" a line, each op sent under one key.
func (s *server) sentKeys() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b []byte
	for id, ks := range s.keys {
		if len(ks) != 1 {
			continue
		}
		for k := range ks {
			b = fmt.Appendf(b, "%s %s\n", id, k)
		}
	}
	return b
}

func (s *server) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sends
}

func TestCrashHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary many times")
	}
	n, kills := envInt(t, envOps, 2000), envInt(t, envKills, 20)
	concurrency := envInt(t, envConcurrency, 16)
	require.Positive(t, concurrency, envConcurrency)
	mw, err := idempotency.New(idempotency.Options{})
	require.NoError(t, err)
	s := &server{keys: map[string]map[string]bool{}, effects: map[string]int{}, answered: map[string]int{}, progress: make(chan struct{}, 1)}
	srv := httptest.NewServer(s.outer(mw.Handler(http.HandlerFunc(s.effect))))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "journal")

	// Kill once the server has seen a random number of sends, at points
	// drawn before the start in the first nine tenths of the work, so
	// that every kill comes before the last child can finish: the child
	// is then somewhere in enqueueing, sending or recording.
	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	targets := make([]int, kills)
	for i := range targets {
		targets[i] = 1 + rng.IntN(max(1, n*9/10))
	}
	slices.Sort(targets)
	killed, runs := 0, 0
	start := time.Now()
	for finished := false; !finished; {
		runs++
		require.LessOrEqual(t, runs, kills+1, "a child ended before it was killed or finished")
		var stderr bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHarness$")
		// A compaction keeps a succeeded op without its payload, the op's
		// name here: the child learns those ops' keys from the server,
		// which saw each of them sent, as a service would from its own
		// records of the key it gave each intent.
		require.NoError(t, os.WriteFile(path+".sent", s.sentKeys(), 0o600))
		cmd.Env = append(os.Environ(), envChild+"="+path, envURL+"="+srv.URL, envOps+"="+strconv.Itoa(n),
			envConcurrency+"="+strconv.Itoa(concurrency), envSent+"="+path+".sent")
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()

		limit := time.NewTimer(5 * time.Minute) // a hung child fails the test, not the -timeout
	wait:
		for {
			select {
			case err := <-exited:
				require.NoError(t, err, "child failed; stderr:\n%s", stderr.String())
				finished = true
				break wait
			case <-s.progress:
				if killed < kills && s.sent() >= targets[killed] {
					require.NoError(t, cmd.Process.Kill())
					<-exited
					killed++
					break wait
				}
			case <-limit.C:
				cmd.Process.Kill()
				<-exited
				t.Fatalf("child hung; stderr:\n%s", stderr.String())
			}
		}
		limit.Stop()
	}
	took := time.Since(start)

	s.mu.Lock()
	defer s.mu.Unlock()
	lost, twoKeys, effects, doubled, mostSends := 0, 0, 0, 0, 0
	for i := range n {
		id := "op-" + strconv.Itoa(i)
		mostSends = max(mostSends, s.answered[id])
		switch c := s.effects[id]; {
		case c == 0:
			lost++
		case c > 1:
			doubled++
		}
		effects += s.effects[id]
		if len(s.keys[id]) > 1 {
			twoKeys++
		}
	}
	resent := s.sends - n - s.waits // sends again of an op whose outcome a kill hid
	t.Logf("%d ops, concurrency %d, %d kills, %d runs of the child in %v: %d sends (%d beyond one per op: %d sent again after a kill, %.2f per kill, and %d answered 409 while the cut send still ran), %d effects, %d lost, %d sent under a second key",
		n, concurrency, killed, runs, took.Round(time.Millisecond), s.sends, s.sends-n, resent, float64(resent)/float64(max(killed, 1)), s.waits, effects, lost, twoKeys)
	assert.Equal(t, kills, killed, "kills made")
	assert.Zero(t, lost, "ops lost")
	assert.Zero(t, twoKeys, "ops sent under a second key")
	assert.Zero(t, doubled, "ops with more than one effect")
	assert.Equal(t, n, effects, "effects at the server")
	assert.Len(t, s.effects, n, "no effect for an op that was never enqueued")
	// A kill hides the outcome of at most the attempts in flight: those in
	// a handler call and those whose outcome is being written, at most
	// MaxWriting per slot. Each such op is sent once more (and, if its cut
	// send still runs on the server, answered 409 until it ends, a wait
	// that the middleware's Retry-After paces).
	assert.LessOrEqual(t, resent, killed*outbox.MaxWriting*concurrency, "ops sent again after a kill")
	// And each kill adds at most one send of any one op.
	assert.LessOrEqual(t, mostSends, 1+killed, "the most sends of one op")
}

// crashChild runs the child's part when the test binary was started as
// one, and then exits the process; it returns false otherwise.
func crashChild() bool {
	path := os.Getenv(envChild)
	if path == "" {
		return false
	}
	if err := child(path, os.Getenv(envURL), os.Getenv(envOps), os.Getenv(envConcurrency), os.Getenv(envSent)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func child(path, url, ops, conc, sent string) error {
	n, err := strconv.Atoi(ops)
	if err != nil {
		return err
	}
	concurrency, err := strconv.Atoi(conc)
	if err != nil {
		return err
	}
	j, err := outbox.OpenFile(path)
	if err != nil {
		return err
	}
	defer j.Close()
	entries, err := j.Load(context.Background())
	if err != nil {
		return err
	}
	keys := make(map[string]string, n) // op → key, for the ops enqueued before
	for _, e := range entries {
		if len(e.Op.Payload) > 0 {
			keys[string(e.Op.Payload)] = e.Op.Key
		}
	}
	if sent != "" { // succeeded ops that a compaction kept by their key only
		b, err := os.ReadFile(sent)
		if err != nil {
			return err
		}
		for line := range strings.Lines(string(b)) {
			if id, k, ok := strings.Cut(strings.TrimSpace(line), " "); ok && keys[id] == "" {
				keys[id] = k
			}
		}
	}
	o, err := outbox.New(j, outbox.Options{
		Policy:      retry.Policy{MaxAttempts: -1, BaseBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		Concurrency: concurrency,
	})
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	o.Handle("send", func(ctx context.Context, op outbox.Op) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(op.Payload))
		if err != nil {
			return retry.Permanent(err)
		}
		req.Header.Set("Idempotency-Key", op.Key)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusConflict:
			// Still running under this key (a send cut by the last crash):
			// a wait, not a failure.
			return retry.RetryAfter(errors.New("409: still running"), 5*time.Millisecond)
		case resp.StatusCode >= 300:
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- o.Run(ctx) }()

	// Enqueue what the previous children did not, from several goroutines,
	// as a service's requests would.
	var mu sync.Mutex
	var wg sync.WaitGroup
	var enqErr error
	next := 0
	for range concurrency {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				id := "op-" + strconv.Itoa(i)
				_, done := keys[id]
				mu.Unlock()
				if i >= n {
					return
				}
				if done {
					continue
				}
				k, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send", Payload: []byte(id)})
				mu.Lock()
				keys[id] = k
				if err != nil {
					enqErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if enqErr != nil {
		cancel()
		<-ran
		return enqErr
	}
	for id, k := range keys {
		r, err := o.Wait(context.Background(), k)
		if err != nil {
			return err
		}
		if r.State != outbox.Succeeded {
			return fmt.Errorf("%s: %v (%s): %v", id, r.State, r.Reason, r.Err)
		}
	}
	cancel()
	if err := <-ran; !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
