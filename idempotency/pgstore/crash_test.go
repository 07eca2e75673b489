//go:build linux

package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/pgstore"
	"github.com/stormguard/retry/idempotency/redisstore"
	"github.com/stormguard/retry/internal/redisserver"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash harness: the orders service runs in a child process (this
// test binary, re-executed) behind the idempotency middleware, on a
// listening socket that the parent holds, so that connections wait in
// its backlog while no child runs. Clients in the parent create orders
// through retryhttp, with an idempotency key per order. Each child sends
// itself SIGKILL inside the handler, at the n-th time a run passes one of
// the points: before the business write, between it and the commit (before
// and after CompleteTx), after the commit before the answer; the parent
// starts the next child, until the kills are made and one child serves
// the rest. Then the order rows in PostgreSQL are counted against what
// each client was told.
//
// PGSTORE_CRASH_ORDERS and PGSTORE_CRASH_KILLS set the size [200 orders,
// 6 kills], PGSTORE_CRASH_CLIENTS the clients [16]. The full proof is
// PGSTORE_CRASH_ORDERS=2000 PGSTORE_CRASH_KILLS=40 (see the package doc).
const (
	envChild   = "PGSTORE_CRASH_CHILD" // the database's URL, in the child
	envRedis   = "PGSTORE_CRASH_REDIS" // the Redis store's address, if it is the store
	envPoint   = "PGSTORE_CRASH_POINT" // where the child kills itself
	envAfter   = "PGSTORE_CRASH_AFTER" // at the n-th pass there; 0 never
	envOrders  = "PGSTORE_CRASH_ORDERS"
	envKills   = "PGSTORE_CRASH_KILLS"
	envClients = "PGSTORE_CRASH_CLIENTS"
)

// crashLease is the child's Options.Lease: how long a claim that a killed
// child held keeps its key from a retry.
const crashLease = 300 * time.Millisecond

var crashPoints = []string{atBegin, atWritten, atSaved, atCommitted}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	require.Positive(t, n, name)
	return n
}

// crashResult is what a run of the harness found.
type crashResult struct {
	orders, rows, doubled, wrongAnswers int
	kills                               map[string]int
	runs                                int
	retries                             int64
	elapsed                             time.Duration
}

func (r crashResult) String() string {
	return fmt.Sprintf("%d orders, %d order rows (%d orders made more than once), %d clients told another order than their own; %d kills %v, %d children; %d client retries; %v",
		r.orders, r.rows, r.doubled, r.wrongAnswers, sum(r.kills), r.kills, r.runs, r.retries, r.elapsed.Round(time.Millisecond))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// With PostgreSQL as the only store, the response commits with the order:
// exactly one row per order, and every client told its own.
func TestCrashHarnessPostgresStore(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	t.Parallel()
	pool := newDB(t)
	createOrders(t, pool)
	res := runCrashHarness(t, pool, "")
	t.Logf("PostgreSQL store: %v", res)
	assert.Equal(t, res.orders, res.rows, "order rows")
	assert.Zero(t, res.doubled, "orders made twice")
	assert.Zero(t, res.wrongAnswers, "clients told another order")
}

// With the Redis store and the orders in PostgreSQL, a kill after the
// commit and before the result reaches Redis leaves the key claimed; once
// its lease runs out, the retry runs the handler again: a second order.
// The harness counts them; every kill after a commit makes at least one
// (an order killed after its commit twice is made three times).
func TestCrashHarnessRedisStoreMakesDoubleOrders(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	t.Parallel()
	addr := redisserver.Start(t).Addr
	pool := newDB(t)
	createOrders(t, pool)
	res := runCrashHarness(t, pool, addr)
	t.Logf("Redis store, orders in PostgreSQL: %v", res)
	assert.GreaterOrEqual(t, res.doubled, res.kills[atCommitted], "a double order for each kill after a commit")
	assert.Positive(t, res.doubled, "the window that CompleteTx closes")
}

// runCrashHarness runs the harness against the orders table of pool, with
// the PostgreSQL store in its keys table, or with the Redis store at
// redisAddr if set.
func runCrashHarness(t *testing.T, pool *pgxpool.Pool, redisAddr string) crashResult {
	t.Helper()
	n, kills, clients := envInt(t, envOrders, 200), envInt(t, envKills, 6), envInt(t, envClients, 16)
	url := pool.Config().ConnString()
	if redisAddr == "" {
		s, err := pgstore.New(pool, pgstore.Options{})
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	lnFile, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	defer lnFile.Close()

	// Kill points: every point in turn, in a shuffled order, so that each
	// comes up once kills reach 4; the pass count drawn small enough that
	// every kill comes before the clients could finish.
	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	type kill struct {
		point string
		after int
	}
	plan := make([]kill, kills)
	var order []string
	for i := range plan {
		if i%len(crashPoints) == 0 {
			order = append([]string(nil), crashPoints...)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		plan[i] = kill{point: order[i%len(order)], after: 1 + rng.IntN(max(1, n/(2*(kills+1))))}
	}

	// The clients.
	var retries atomic.Int64
	base := &http.Transport{MaxIdleConnsPerHost: clients}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &retryhttp.Transport{
		Base: base,
		Policy: retry.Policy{
			MaxAttempts: 10_000, MaxElapsed: 3 * time.Minute,
			BaseBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond,
			OnRetry: func(context.Context, retry.Attempt, time.Duration) { retries.Add(1) },
		},
		AutoIdempotencyKey: true,
	}}
	target := "http://" + ln.Addr().String() + "/orders"
	answers := make([]crashAnswer, n)
	refs := make(chan int)
	finished := make(chan struct{})
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ref := range refs {
				answers[ref] = createOrder(client, target, ref)
			}
		})
	}
	go func() {
		for ref := range n {
			refs <- ref
		}
		close(refs)
		wg.Wait()
		close(finished)
	}()

	res := crashResult{orders: n, kills: map[string]int{}}
	deadline := time.NewTimer(5 * time.Minute) // a hung harness fails, not the -timeout
	defer deadline.Stop()
	for done := false; !done; {
		res.runs++
		k := kill{}
		if sum(res.kills) < kills {
			k = plan[sum(res.kills)]
		}
		var stderr bytes.Buffer
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"="+url, envRedis+"="+redisAddr,
			envPoint+"="+k.point, envAfter+"="+strconv.Itoa(k.after))
		cmd.ExtraFiles = []*os.File{lnFile}
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the child stopped without being killed; stderr:\n%s", stderr.String())
			ws, _ := ee.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "child: %v; stderr:\n%s", err, stderr.String())
			require.NotEmpty(t, k.point, "a child that was not to kill itself died")
			res.kills[k.point]++
		case <-finished:
			_ = cmd.Process.Kill()
			<-exited
			done = true
		case <-deadline.C:
			_ = cmd.Process.Kill()
			<-exited
			require.FailNow(t, "the harness hung", "answers so far: %d; child stderr:\n%s", countAnswered(answers), stderr.String())
		}
	}
	res.elapsed = time.Since(start)
	res.retries = retries.Load()
	require.Equal(t, kills, sum(res.kills), "kills made")

	// What PostgreSQL holds, against what each client was told.
	rows, err := pool.Query(context.Background(), "SELECT id, ref FROM orders ORDER BY id")
	require.NoError(t, err)
	ids := map[int64][]int64{} // ref → order ids, oldest first
	for rows.Next() {
		var id, ref int64
		require.NoError(t, rows.Scan(&id, &ref))
		ids[ref] = append(ids[ref], id)
		res.rows++
	}
	require.NoError(t, rows.Err())
	for ref, a := range answers {
		require.NoError(t, a.err, "order %d: every order must be answered", ref)
		require.Equal(t, http.StatusCreated, a.status, "order %d", ref)
		made := ids[int64(ref)]
		require.NotEmpty(t, made, "order %d was answered %d but never made", ref, a.id)
		if len(made) > 1 {
			res.doubled++
		}
		if a.id != made[0] || len(made) > 1 {
			res.wrongAnswers++ // told one of two orders is not told its own
		}
	}
	return res
}

// crashAnswer is what one client got for one order.
type crashAnswer struct {
	status int
	id     int64
	err    error
}

func countAnswered(as []crashAnswer) int {
	n := 0
	for _, a := range as {
		if a.status != 0 {
			n++
		}
	}
	return n
}

func createOrder(client *http.Client, url string, ref int) crashAnswer {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	body, _ := json.Marshal(order{Ref: int64(ref)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return crashAnswer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return crashAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return crashAnswer{status: resp.StatusCode, err: err}
	}
	var o order
	if err := json.Unmarshal(b, &o); err != nil {
		return crashAnswer{status: resp.StatusCode, err: fmt.Errorf("status %d: %q: %w", resp.StatusCode, b, err)}
	}
	if o.Ref != int64(ref) {
		return crashAnswer{status: resp.StatusCode, err: fmt.Errorf("answered for order %d", o.Ref)}
	}
	return crashAnswer{status: resp.StatusCode, id: o.ID}
}

// crashChild runs the child's part when the test binary was started as
// one, and never returns then; it returns false otherwise.
func crashChild() bool {
	url := os.Getenv(envChild)
	if url == "" {
		return false
	}
	err := child(url, os.Getenv(envRedis), os.Getenv(envPoint), os.Getenv(envAfter))
	fmt.Fprintln(os.Stderr, "child:", err)
	os.Exit(1)
	return true
}

// child serves the orders service on the listener it inherited (fd 3),
// and kills itself at the after-th pass of point.
func child(url, redisAddr, point, afterS string) error {
	after, err := strconv.Atoi(afterS)
	if err != nil {
		return err
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	svc := &orderService{pool: pool}
	var store idempotency.Store
	if redisAddr == "" {
		s, err := pgstore.New(pool, pgstore.Options{})
		if err != nil {
			return err
		}
		svc.store, store = s, s
	} else {
		s, err := redisstore.New(redis.NewClient(&redis.Options{Addr: redisAddr}), redisstore.Options{})
		if err != nil {
			return err
		}
		store = s
	}
	var passes atomic.Int64
	svc.at = func(_ context.Context, at string) error {
		if after > 0 && at == point && passes.Add(1) == int64(after) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL cannot be caught: nothing runs past it
		}
		return nil
	}
	m, err := idempotency.New(idempotency.Options{Store: store, Lease: crashLease})
	if err != nil {
		return err
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
	}
	err = http.Serve(ln, m.Handler(svc))
	return errors.Join(errors.New("serve returned"), err)
}
