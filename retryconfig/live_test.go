package retryconfig_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

func mustParse(t testing.TB, doc string) *retryconfig.Config {
	t.Helper()
	cfg, err := retryconfig.Parse([]byte(doc))
	require.NoError(t, err)
	return cfg
}

func TestLiveUpdate(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(mustParse(t, `{"policies": {"payments": {"maxAttempts": 2}}}`))
	assert.Equal(t, uint64(1), l.Version())
	assert.Equal(t, 2, l.Policy("payments").MaxAttempts)

	require.NoError(t, l.Update([]byte(`{"policies": {"payments": {"maxAttempts": 3}, "default": {"maxAttempts": 1}}}`)))
	assert.Equal(t, uint64(2), l.Version())
	assert.Equal(t, 3, l.Policy("payments").MaxAttempts)
	assert.Equal(t, 1, l.Policy("other").MaxAttempts)
	assert.Equal(t, []string{"default", "payments"}, l.Config().Names())
}

func TestLiveRejectedUpdateKeepsLastGood(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(mustParse(t, `{"policies": {"payments": {"maxAttempts": 2}}}`))
	before := l.Config()
	err := l.Update([]byte(`{"policies": {"payments": {"maxAttempts": 5}, "feed": {"maxBackoff": "5"}}}`))
	require.Error(t, err)
	assert.ErrorContains(t, err, `policies.feed.maxBackoff: "5" has no unit`)
	assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
	assert.Equal(t, uint64(1), l.Version())
	assert.Equal(t, 2, l.Policy("payments").MaxAttempts, "the valid part of a rejected document is not applied")
	assert.Same(t, before, l.Config())
}

func TestLiveNil(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(nil)
	assert.Equal(t, retry.Policy{}, l.Policy("x"))
	assert.Equal(t, uint64(1), l.Version())
}

// drain takes n tokens out of b, as n failed attempts would.
func drain(t *testing.T, p retry.Policy, n int) {
	t.Helper()
	p.MaxAttempts = 1
	for range n {
		_, _ = retry.Do(context.Background(), func(context.Context) error { return errors.New("down") }, p)
	}
}

func TestLiveKeepsBudgets(t *testing.T) {
	t.Parallel()
	const v1 = `{"budgets": {"payments": {"maxTokens": 10, "tokenRatio": 0.1}, "feed": {"maxTokens": 10}},
		"policies": {"payments": {"budget": "payments"}, "feed": {"budget": "feed"}}}`
	l := retryconfig.NewLive(mustParse(t, v1))
	drain(t, l.Policy("payments"), 3)
	drain(t, l.Policy("feed"), 3)
	old := l.Policy("payments").Budget
	require.InDelta(t, 7.0, old.Tokens(), 1e-9)

	// payments' budget keeps its parameters (written differently), feed's changes.
	require.NoError(t, l.Update([]byte(`{"budgets": {"payments": {"tokenRatio": 0.1, "maxTokens": 10.0}, "feed": {"maxTokens": 20}},
		"policies": {"payments": {"maxAttempts": 2, "budget": "payments"}, "feed": {"budget": "feed"}, "search": {"budget": "payments"}}}`)))
	assert.Same(t, old, l.Policy("payments").Budget, "same parameters: same Budget")
	assert.InDelta(t, 7.0, l.Policy("payments").Budget.Tokens(), 1e-9, "tokens survive the update")
	assert.Same(t, old, l.Policy("search").Budget, "a new policy shares the kept budget")
	assert.InDelta(t, 20.0, l.Policy("feed").Budget.Tokens(), 1e-9, "new parameters: a new, full Budget")

	// A rejected update does not touch them either.
	require.Error(t, l.Update([]byte(`{"budgets": {"payments": {"maxTokens": 0}}}`)))
	assert.Same(t, old, l.Policy("payments").Budget)

	// A budget that goes away and comes back starts full.
	require.NoError(t, l.Update([]byte(`{"policies": {"payments": {}}}`)))
	assert.Nil(t, l.Policy("payments").Budget)
	require.NoError(t, l.Update([]byte(v1)))
	assert.InDelta(t, 10.0, l.Policy("payments").Budget.Tokens(), 1e-9)
}

// TestLiveConcurrentUpdates runs 64 goroutines that each make 10,000
// updates (fewer with -short), a tenth of them invalid, while calls take
// their policies and run retry.Do. Every policy a call sees must be one
// whole accepted document, never a mix or a rejected one; the version must
// count exactly the accepted updates. Run it with -race.
func TestLiveConcurrentUpdates(t *testing.T) {
	t.Parallel()
	const goroutines = 64
	updates := 10_000
	if testing.Short() {
		updates = 500
	}
	docs := make([][]byte, 100)
	for i := range docs {
		// maxAttempts and the backoffs move together: a torn read would break n·ms = baseBackoff.
		n := i%4 + 1
		docs[i] = fmt.Appendf(nil, `{"budgets": {"b": {"maxTokens": 10}}, "policies": {"p": {"maxAttempts": %d, "baseBackoff": "%dms", "maxBackoff": "%dms", "budget": "b"}}}`, n, n, n)
	}
	bad := []byte(`{"policies": {"p": {"maxAttempts": 0}}}`)
	l := retryconfig.NewLive(mustParse(t, string(docs[0])))

	check := func(p retry.Policy) error {
		if p.BaseBackoff != time.Duration(p.MaxAttempts)*time.Millisecond || p.MaxBackoff != p.BaseBackoff || p.Budget == nil {
			return fmt.Errorf("torn or rejected policy: %+v", p)
		}
		return nil
	}
	var (
		accepted atomic.Uint64
		wg       sync.WaitGroup
		errs     = make(chan error, goroutines)
	)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range updates {
				doc := docs[(g+i)%len(docs)]
				if i%10 == 9 {
					doc = bad
				}
				err := l.Update(doc)
				if err == nil {
					accepted.Add(1)
				} else if i%10 != 9 {
					errs <- err
					return
				}
				if err := check(l.Policy("p")); err != nil {
					errs <- err
					return
				}
				if i%50 == 0 { // a call takes its policy at its start, and keeps it while updates go on
					taken := l.Policy("p")
					_, err := retry.Do(context.Background(), func(context.Context) error {
						return check(taken)
					}, retry.Policy{MaxAttempts: 1, Budget: taken.Budget})
					if err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, accepted.Load()+1, l.Version())
	assert.Equal(t, uint64(goroutines*updates*9/10+1), l.Version())
	require.NoError(t, check(l.Policy("p")))
}

func BenchmarkLivePolicy(b *testing.B) {
	cfg := mustParse(b, `{"policies": {"payments": {"maxAttempts": 2}, "feed": {}, "default": {}}}`)
	l := retryconfig.NewLive(cfg)
	b.ReportAllocs()
	var sink retry.Policy
	for b.Loop() {
		sink = l.Policy("payments")
	}
	_ = sink
}

// BenchmarkLiveUpdate1000 measures a reload of 1,000 policies, which
// must stay well under 20ms: run it with -benchmem -benchtime=20x.
func BenchmarkLiveUpdate1000(b *testing.B) {
	doc := policiesDoc(1000)
	l := retryconfig.NewLive(nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Update(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// The zero Live is usable (no policies, version 0, Update reads our
// format), Override(nil) removes the overrides rather than panic, and a
// flag with an empty policy name is an error rather than a policy nobody
// can name that Marshal would write.
func TestLiveZeroValueAndEmptyNames(t *testing.T) {
	t.Parallel()
	var l retryconfig.Live
	assert.Equal(t, retry.Policy{}, l.Policy("payments"))
	assert.Zero(t, l.Version())
	require.NoError(t, l.Update([]byte(`{"policies": {"payments": {"maxAttempts": 2}}}`)))
	assert.Equal(t, 2, l.Policy("payments").MaxAttempts)
	assert.Equal(t, uint64(1), l.Version())

	var o retryconfig.Overrides
	require.NoError(t, o.Set("payments.maxAttempts=3"))
	require.NoError(t, l.Override(&o))
	assert.Equal(t, 3, l.Policy("payments").MaxAttempts)
	require.NoError(t, l.Override(nil))
	assert.Equal(t, 2, l.Policy("payments").MaxAttempts, "the file alone again")

	assert.Error(t, o.Set(".maxAttempts=1"), "an empty policy name")
}
