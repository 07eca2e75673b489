package retryhttp

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// waitInflight waits until r has a refresh in flight.
func waitInflight(t *testing.T, r *refresher) {
	t.Helper()
	for range 10000 {
		r.mu.Lock()
		busy := r.inflight != nil
		r.mu.Unlock()
		if busy {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatal("no refresh in flight")
}

// A follower whose leader gave up (its ctx ended) refreshes itself rather
// than fail for someone else's cancel.
func TestRefreshOfAnAbandonedLeaderIsRunAgain(t *testing.T) {
	t.Parallel()
	var r refresher
	var calls atomic.Int32
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	f := func(ctx context.Context) (string, error) {
		calls.Add(1)
		if ctx == leaderCtx {
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "Bearer follower", nil
	}
	leaderErr := make(chan error, 1)
	go func() {
		_, err := r.do(leaderCtx, f, 0)
		leaderErr <- err
	}()
	waitInflight(t, &r)
	followerAuth := make(chan string, 1)
	go func() {
		auth, err := r.do(context.Background(), f, 0)
		if err != nil {
			t.Errorf("follower: %v", err)
		}
		followerAuth <- auth
	}()
	time.Sleep(time.Millisecond) // let the follower join
	cancelLeader()
	if err := <-leaderErr; err != context.Canceled {
		t.Errorf("leader got %v, want context.Canceled", err)
	}
	if got := <-followerAuth; got != "Bearer follower" {
		t.Errorf("follower got %q, want %q", got, "Bearer follower")
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("Refresh ran %d times, want 2", n)
	}
}

// A panicking Refresh releases its followers with an error.
func TestRefreshPanicReleasesFollowers(t *testing.T) {
	t.Parallel()
	var r refresher
	release := make(chan struct{})
	var calls atomic.Int32
	f := func(context.Context) (string, error) {
		if calls.Add(1) > 1 { // a follower that came too late to join leads its own
			return "Bearer next", nil
		}
		<-release
		panic("boom")
	}
	leaderDone := make(chan any, 1)
	go func() {
		defer func() { leaderDone <- recover() }()
		_, _ = r.do(context.Background(), f, 0)
	}()
	waitInflight(t, &r)
	followerErr := make(chan error, 1)
	go func() {
		_, err := r.do(context.Background(), f, 0)
		followerErr <- err
	}()
	time.Sleep(time.Millisecond)
	close(release)
	if v := <-leaderDone; v != "boom" {
		t.Errorf("leader recovered %v, want the panic", v)
	}
	if err := <-followerErr; err != errRefreshPanicked && err != nil {
		t.Errorf("follower got %v, want errRefreshPanicked", err)
	}
}
