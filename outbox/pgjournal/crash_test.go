//go:build linux

package pgjournal_test

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
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
)

// The crash harness on PostgreSQL: three child processes (this test
// binary, re-executed) share one database. Each places its share of N
// orders, the order row and its op in one transaction (EnqueueTx), and
// runs ops (any process's) against a server on loopback behind the
// idempotency middleware. The parent kills a random child with SIGKILL
// at random points and starts it again at once; the others take over its
// ops when their lease ends. Then: no op lost, none sent under a second
// key, exactly N effects at the server.
//
// PGJOURNAL_CRASH_OPS, PGJOURNAL_CRASH_KILLS and
// PGJOURNAL_CRASH_CONCURRENCY set the size [900 ops, 9 kills, 8 per
// child]; the full proof is PGJOURNAL_CRASH_OPS=10000
// PGJOURNAL_CRASH_KILLS=100.
const (
	envChild       = "PGJOURNAL_CRASH_CHILD" // the child's number, in the child
	envDB          = "PGJOURNAL_CRASH_DB"
	envURL         = "PGJOURNAL_CRASH_URL"
	envOps         = "PGJOURNAL_CRASH_OPS"
	envKills       = "PGJOURNAL_CRASH_KILLS"
	envConcurrency = "PGJOURNAL_CRASH_CONCURRENCY"
	children       = 3
	crashLease     = 300 * time.Millisecond
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
	keys     map[string]map[string]bool // op → keys it was sent under
	effects  map[string]int
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
		next.ServeHTTP(w, r)
	})
}

func (s *server) effect(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.effects[string(body)]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (s *server) sent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sends
}

// child is one running child process.
type child struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan error
}

func TestCrashHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary many times")
	}
	n, kills := envInt(t, envOps, 900), envInt(t, envKills, 9)
	concurrency := envInt(t, envConcurrency, 8)
	require.Positive(t, concurrency, envConcurrency)
	db := pg(t).NewDatabase(t)
	pool := newPool(t, db)
	migrate(t, pool)
	j, err := pgjournal.New(pool, pgjournal.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = pool.Exec(ctx, `CREATE TABLE orders (id text PRIMARY KEY, op_key text NOT NULL)`)
	require.NoError(t, err)

	mw, err := idempotency.New(idempotency.Options{})
	require.NoError(t, err)
	s := &server{keys: map[string]map[string]bool{}, effects: map[string]int{}, progress: make(chan struct{}, 1)}
	srv := httptest.NewServer(s.outer(mw.Handler(http.HandlerFunc(s.effect))))
	defer srv.Close()

	start := func(i int) *child {
		c := &child{stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
		c.cmd = exec.Command(os.Args[0], "-test.run=^TestCrashHarness$")
		c.cmd.Env = append(os.Environ(), envChild+"="+strconv.Itoa(i), envDB+"="+db, envURL+"="+srv.URL,
			envOps+"="+strconv.Itoa(n), envConcurrency+"="+strconv.Itoa(concurrency))
		c.cmd.Stderr = c.stderr
		require.NoError(t, c.cmd.Start())
		go func() { c.exited <- c.cmd.Wait() }()
		return c
	}
	procs := make([]*child, children)
	for i := range procs {
		procs[i] = start(i)
	}
	defer func() { // a failed test leaves no child behind
		for _, c := range procs {
			if c != nil {
				c.cmd.Process.Kill()
				<-c.exited
			}
		}
	}()

	// Kill at numbers of sends drawn before the start, in the first nine
	// tenths of the work, so that each kill lands mid-work.
	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	targets := make([]int, kills)
	for i := range targets {
		targets[i] = 1 + rng.IntN(max(1, n*9/10))
	}
	slices.Sort(targets)
	killed, began := 0, time.Now()
	limit := time.NewTimer(5 * time.Minute) // a hung child fails the test, not the -timeout
	defer limit.Stop()
	for killed < kills {
		select {
		case <-s.progress:
			for killed < kills && s.sent() >= targets[killed] {
				i := rng.IntN(children)
				select {
				case err := <-procs[i].exited:
					procs[i] = nil // exited: nothing to kill, nothing to wait for
					t.Fatalf("child %d ended before it was killed (%v); stderr:\n%s", i, err, procs[i].stderr)
				default:
				}
				require.NoError(t, procs[i].cmd.Process.Kill())
				<-procs[i].exited
				procs[i] = start(i)
				killed++
			}
		case <-limit.C:
			t.Fatalf("%d of %d kills made: the work stopped", killed, kills)
		}
	}
	for i, c := range procs {
		select {
		case err := <-c.exited:
			procs[i] = nil // exited: the deferred kill must not wait for it again
			require.NoError(t, err, "child %d failed; stderr:\n%s", i, c.stderr)
		case <-limit.C:
			// Its goroutines say where it waits: SIGQUIT makes a Go
			// process print them on stderr and exit. The buffer is read
			// once it has exited, when nothing writes it any more.
			_ = c.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-c.exited:
			case <-time.After(10 * time.Second):
				_ = c.cmd.Process.Kill()
				<-c.exited
			}
			procs[i] = nil
			t.Fatalf("child %d hung; its goroutines:\n%s", i, c.stderr)
		}
		procs[i] = nil
	}
	took := time.Since(began)

	orders := map[string]string{}
	rows, err := pool.Query(ctx, `SELECT id, op_key FROM orders`)
	require.NoError(t, err)
	for rows.Next() {
		var id, key string
		require.NoError(t, rows.Scan(&id, &key))
		orders[id] = key
	}
	require.NoError(t, rows.Err())
	es, err := j.Load(ctx)
	require.NoError(t, err)
	attempts := 0
	for _, e := range es {
		assert.Equal(t, outbox.Succeeded, e.State, "op %s", e.Op.Payload)
		assert.Equal(t, orders[string(e.Op.Payload)], e.Op.Key, "the order holds its op's key")
		attempts += e.Attempts
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	lost, twoKeys, effects, doubled := 0, 0, 0, 0
	for i := range n {
		id := "op-" + strconv.Itoa(i)
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
	extra := s.sends - n
	t.Logf("%d ops, %d children of concurrency %d, lease %v, %d kills in %v: %d sends (%d beyond one per op, %.2f per kill), %d attempts recorded, %d effects, %d lost, %d sent under a second key",
		n, children, concurrency, crashLease, killed, took.Round(time.Millisecond), s.sends, extra, float64(extra)/float64(max(killed, 1)),
		attempts, effects, lost, twoKeys)
	assert.Len(t, orders, n, "orders placed")
	assert.Len(t, es, n, "ops in the journal: one per order")
	assert.Zero(t, lost, "ops lost")
	assert.Zero(t, twoKeys, "ops sent under a second key")
	assert.Zero(t, doubled, "ops with more than one effect")
	assert.Equal(t, n, effects, "effects at the server")
	assert.Len(t, s.effects, n, "no effect for an op that was never enqueued")
	// A kill cuts at most the sends in flight in that child short: those
	// whose handler runs and those whose outcome is being written, up to
	// 8 × Concurrency (the outbox's bound on attempts in flight).
	const maxWriting = 8
	assert.LessOrEqual(t, extra, killed*maxWriting*concurrency, "extra sends")
	// Every send was counted before it went (the claim counts it): a kill
	// never leaves an attempt uncounted.
	assert.GreaterOrEqual(t, attempts, s.sends, "attempts recorded, against sends")
}

// crashChild runs the child's part when the test binary was started as
// one, and then exits the process; it returns false otherwise.
func crashChild() bool {
	who := os.Getenv(envChild)
	if who == "" {
		return false
	}
	if err := runChild(who, os.Getenv(envDB), os.Getenv(envURL), os.Getenv(envOps), os.Getenv(envConcurrency)); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

func runChild(who, db, url, ops, conc string) error {
	me, err := strconv.Atoi(who)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(ops)
	if err != nil {
		return err
	}
	concurrency, err := strconv.Atoi(conc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		return err
	}
	defer pool.Close()
	j, err := pgjournal.New(pool, pgjournal.Options{})
	if err != nil {
		return err
	}
	o, err := outbox.New(j, outbox.Options{
		Policy:       retry.Policy{MaxAttempts: -1, BaseBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		Concurrency:  concurrency,
		PollInterval: 10 * time.Millisecond,
		Lease:        crashLease,
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
			// Still running under this key (a send cut by a crash): a
			// wait, not a failure.
			return retry.RetryAfter(errors.New("409: still running"), 5*time.Millisecond)
		case resp.StatusCode >= 300:
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- o.Run(runCtx) }()
	stop := func(err error) error {
		cancel()
		if rerr := <-ran; !errors.Is(rerr, context.Canceled) {
			return errors.Join(err, rerr)
		}
		return err
	}

	// Place this child's orders that a killed predecessor did not: the
	// order row and its op commit together, or neither does.
	placed := map[string]bool{}
	rows, err := pool.Query(ctx, `SELECT id FROM orders`)
	if err != nil {
		return stop(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return stop(err)
	}
	for _, id := range ids {
		placed[id] = true
	}
	for i := me; i < n; i += children {
		id := "op-" + strconv.Itoa(i)
		if placed[id] {
			continue
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			key, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "send", Payload: []byte(id)})
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO orders VALUES ($1, $2)`, id, key)
			return err
		})
		if err != nil {
			return stop(err)
		}
	}
	// Run until every order is placed and every op has finished, whoever
	// ran it.
	for {
		var orders, pending int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox_ops WHERE state = 0)`).Scan(&orders, &pending)
		if err != nil {
			return stop(err)
		}
		if orders == n && pending == 0 {
			return stop(nil)
		}
		select {
		case err := <-ran:
			return fmt.Errorf("Run stopped: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
