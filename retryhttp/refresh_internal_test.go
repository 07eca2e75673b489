package retryhttp

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
)

// The refresher's tests run in synctest bubbles: synctest.Wait returns once
// every goroutine of the test is blocked, so "the follower has joined" is a
// fact, not a guess made with a sleep.

// A follower whose leader gave up (its ctx ended) refreshes itself rather
// than fail for someone else's cancel.
func TestRefreshOfAnAbandonedLeaderIsRunAgain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
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
		synctest.Wait() // the leader is refreshing
		followerAuth := make(chan string, 1)
		go func() {
			auth, err := r.do(context.Background(), f, 0)
			assert.NoError(t, err, "follower")
			followerAuth <- auth
		}()
		synctest.Wait() // the follower waits on the leader's refresh
		cancelLeader()
		assert.Equal(t, context.Canceled, <-leaderErr)
		assert.Equal(t, "Bearer follower", <-followerAuth)
		assert.Equal(t, int32(2), calls.Load(), "Refresh runs again for the follower")
	})
}

// A panicking Refresh releases its followers with an error.
func TestRefreshPanicReleasesFollowers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var r refresher
		release := make(chan struct{})
		var calls atomic.Int32
		f := func(context.Context) (string, error) {
			calls.Add(1)
			<-release
			panic("boom")
		}
		leaderDone := make(chan any, 1)
		go func() {
			defer func() { leaderDone <- recover() }()
			_, _ = r.do(context.Background(), f, 0)
		}()
		synctest.Wait() // the leader is refreshing
		followerErr := make(chan error, 1)
		go func() {
			_, err := r.do(context.Background(), f, 0)
			followerErr <- err
		}()
		synctest.Wait() // the follower waits on the leader's refresh
		close(release)
		assert.Equal(t, "boom", <-leaderDone, "the panic reaches the leader's caller")
		assert.Equal(t, errRefreshPanicked, <-followerErr)
		assert.Equal(t, int32(1), calls.Load())
	})
}
