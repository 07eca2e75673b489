package loopvals_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/loopvals"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A retry loop's op ctx carries one Values for the whole loop, shared by
// every attempt and by goroutines of one attempt, and none once it returned.
func TestValuesLiveAsLongAsTheLoop(t *testing.T) {
	t.Parallel()
	assert.Nil(t, loopvals.Of(context.Background()), "no loop, no Values")
	var seen []*loopvals.Values
	var kept context.Context
	made := 0
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		kept = ctx
		v := loopvals.Of(ctx)
		require.NotNil(t, v)
		seen = append(seen, v)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				got := v.LoadOrStore("k", func() any { made++; return made })
				assert.Equal(t, 1, got)
			})
		}
		wg.Wait()
		if len(seen) < 3 {
			return errors.New("again")
		}
		return nil
	}, retry.Policy{})
	require.NoError(t, err)
	require.Len(t, seen, 3)
	assert.Same(t, seen[0], seen[2], "one Values for every attempt")
	assert.Equal(t, 1, made)
	assert.Nil(t, loopvals.Of(kept), "the loop returned: its Values are gone")
}

// A Do nested in another's op, deferring to it, adds no Values of its own:
// its op sees the outer loop's.
func TestNestedDoSharesTheOuterValues(t *testing.T) {
	t.Parallel()
	_, err := retrytest.Do(context.Background(), func(outer context.Context) error {
		_, err := retry.Do(outer, func(inner context.Context) error {
			assert.Same(t, loopvals.Of(outer), loopvals.Of(inner))
			return nil
		}, retry.Policy{})
		return err
	}, retry.Policy{})
	require.NoError(t, err)
}
