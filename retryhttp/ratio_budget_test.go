package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A ratio budget shared by a retry.Do of other work and a Transport
// counts the first attempts and the retries of both against one window:
// the Do's calls earn the Transport's retries, and the Transport's
// retries use up the Do's. Nested, the Transport counts nothing twice.
func TestRatioBudgetSharedByDoAndTransport(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	// Ratio 1, and a floor of one retry per 10 s.
	b, err := guard.NewBudget(guard.BudgetOptions{Ratio: 1, MinPerSecond: 0.1, TTL: 10 * time.Second, Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 10, Budget: b, Clock: clk}
	errDown := errors.New("down")

	for range 2 {
		_, err := retry.Do(context.Background(), func(context.Context) error { return nil }, p)
		require.NoError(t, err)
	}
	assert.Equal(t, 3.0, b.Tokens(), "two first attempts and the floor")

	srv := newServer(t, status(503))
	c := srv.client(&retryhttp.Transport{Policy: p})
	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Len(t, srv.requests(), 5, "its own first attempt and the Do's two earn four retries")
	assert.Equal(t, 0.0, b.Tokens())

	tr, err := retry.Do(context.Background(), func(context.Context) error { return errDown }, p)
	require.ErrorIs(t, err, retry.ErrBudgetExhausted)
	assert.Equal(t, 2, tr.Attempts(), "the Transport used up the retries its first attempt did not earn")

	// Past the TTL, nested: the outer Do counts its first attempt, the
	// Transport inside it makes one attempt and counts nothing.
	clk.Add(10 * time.Second)
	before := len(srv.requests())
	tr, err = retry.Do(context.Background(), func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errDown
		}
		return nil
	}, p)
	require.ErrorIs(t, err, retry.ErrBudgetExhausted)
	assert.Equal(t, 3, tr.Attempts(), "one first attempt, ratio 1 and the floor: two retries")
	assert.Len(t, srv.requests(), before+3, "the Transport inside made one attempt each")
}
