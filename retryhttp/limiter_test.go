package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Transport.Guards.Limiters gives each origin its own bulkhead: while one
// origin's slots are all taken, a request to it is refused unsent with
// retry.ErrLimited, a request to another origin goes, and a request made
// inside an outer retry.Do that holds the origin's slot takes no second
// one.
func TestTransportLimitersPerOrigin(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	slow := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(200)
	}, status(200))
	other := newServer(t, status(200))
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the servers close, which waits for the handler
	ls, err := guard.NewLimiters(guard.LimiterOptions{Max: 1, MaxQueue: -1}, 10)
	require.NoError(t, err)
	k := guard.Keyed{Limiters: ls}
	c := slow.client(&retryhttp.Transport{Guards: k, Policy: retry.Policy{MaxAttempts: 2}})

	first := make(chan error, 1)
	go func() {
		code, err := getStatus(c, context.Background(), slow.URL)
		if err == nil && code != 200 {
			err = errors.New(http.StatusText(code))
		}
		first <- err
	}()
	<-entered
	_, err = getStatus(c, context.Background(), slow.URL)
	require.ErrorIs(t, err, retry.ErrLimited)
	assert.Equal(t, 1, slow.hits(), "a refused request was sent")
	assert.Equal(t, 1, ls.Get(slow.URL).Stats().InFlight)

	code, err := getStatus(c, context.Background(), other.URL)
	require.NoError(t, err)
	assert.Equal(t, 200, code, "the other origin's slots are its own")
	free()
	require.NoError(t, <-first)

	// An outer loop keyed alike holds the origin's one slot; the
	// Transport inside takes none of its own.
	outer := retry.Policy{}.WithGuards(&k, slow.URL)
	_, err = retry.Do(context.Background(), func(ctx context.Context) error {
		_, err := getStatus(c, ctx, slow.URL)
		return err
	}, outer)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), ls.Get(slow.URL).Stats().Admitted, "slots taken: the first and the outer loop's, none for the refused request or the one inside")
}
