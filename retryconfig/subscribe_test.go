package retryconfig_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/retryconfig"
)

// call is one call of a subscriber: the version it was given, and what
// the Config said then.
type call struct {
	version     uint64
	maxAttempts int
	current     bool // the Config given is Live's current one
}

// record subscribes to l and returns the calls so far.
func record(t *testing.T, l *retryconfig.Live) (calls func() []call, cancel func()) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []call
	)
	cancel = l.Subscribe(func(version uint64, cfg *retryconfig.Config) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, call{version, cfg.Policy("p").MaxAttempts, cfg == l.Config() && version == l.Version()})
	})
	t.Cleanup(cancel)
	return func() []call {
		mu.Lock()
		defer mu.Unlock()
		return append([]call(nil), got...)
	}, cancel
}

func docWith(maxAttempts int) []byte {
	return fmt.Appendf(nil, `{"policies": {"p": {"maxAttempts": %d}}}`, maxAttempts)
}

func TestSubscribeOrder(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(mustParse(t, string(docWith(1))))
	calls, _ := record(t, l)

	require.NoError(t, l.Update(docWith(2)))
	require.NoError(t, l.Update(docWith(3)))
	require.Error(t, l.Update([]byte(`{"policies": {"p": {"maxAttempts": 0}}}`)), "a rejected update")
	var o retryconfig.Overrides
	require.NoError(t, o.Set("p.maxAttempts=9"))
	require.NoError(t, l.Override(&o))
	var bad retryconfig.Overrides
	require.NoError(t, bad.Set("p.maxAttempts=-1"))
	require.Error(t, l.Override(&bad), "a rejected override")
	require.NoError(t, l.Update(docWith(5))) // the override still wins

	assert.Equal(t, []call{{2, 2, true}, {3, 3, true}, {4, 9, true}, {5, 9, true}}, calls(),
		"one call per accepted update, in order, none for a rejected one, each with the Config just made current")
}

func TestSubscribeCancel(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(nil)
	first, cancelFirst := record(t, l)
	second, _ := record(t, l)
	var once []uint64
	var cancelOnce func()
	cancelOnce = l.Subscribe(func(version uint64, _ *retryconfig.Config) {
		once = append(once, version)
		cancelOnce() // from its own call: a one-shot subscriber
	})

	require.NoError(t, l.Update(docWith(2)))
	cancelFirst()
	cancelFirst() // a second cancel does nothing
	require.NoError(t, l.Update(docWith(3)))
	cancelOnce()

	assert.Equal(t, []call{{2, 2, true}}, first(), "no call after cancel")
	assert.Equal(t, []call{{2, 2, true}, {3, 3, true}}, second(), "another subscriber's cancel does not stop this one")
	assert.Equal(t, []uint64{2}, once)
}

func TestSubscribeNil(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { retryconfig.NewLive(nil).Subscribe(nil) })
}

// TestSubscribeConcurrent makes updates from many goroutines, a fifth of
// them invalid, while subscribers come and go. Each subscriber must see
// strictly increasing versions, one call at a time, and one that stays
// must see every accepted version exactly once. Run it with -race.
func TestSubscribeConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, updates = 8, 200
	l := retryconfig.NewLive(nil)

	var (
		mu      sync.Mutex
		stayed  []uint64
		running atomic.Int32
		errs    = make(chan error, 2*goroutines)
	)
	cancel := l.Subscribe(func(version uint64, cfg *retryconfig.Config) {
		if n := running.Add(1); n != 1 {
			errs <- fmt.Errorf("%d calls at once", n)
		}
		defer running.Add(-1)
		mu.Lock()
		defer mu.Unlock()
		stayed = append(stayed, version)
	})
	defer cancel()

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(2)
		go func() { // updates
			defer wg.Done()
			for i := range updates {
				doc := docWith(g + 1)
				if i%5 == 4 {
					doc = []byte(`{"policies": {"p": {"maxAttempts": 0}}}`)
				}
				_ = l.Update(doc)
			}
		}()
		go func() { // subscribers that come and go
			defer wg.Done()
			for range updates / 10 {
				var last atomic.Uint64
				stop := l.Subscribe(func(version uint64, _ *retryconfig.Config) {
					if prev := last.Swap(version); prev >= version {
						errs <- fmt.Errorf("version %d after %d", version, prev)
					}
				})
				_ = l.Version()
				stop()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	accepted := uint64(goroutines * updates * 4 / 5)
	require.Equal(t, accepted+1, l.Version())
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, stayed, int(accepted))
	for i, v := range stayed {
		require.Equal(t, uint64(i+2), v, "call %d", i)
	}
}

func ExampleLive_Subscribe() {
	cfg, _ := retryconfig.Parse([]byte(`{"policies": {"payments": {"maxAttempts": 2}}}`))
	live := retryconfig.NewLive(cfg)
	cancel := live.Subscribe(func(version uint64, cfg *retryconfig.Config) {
		fmt.Println("version", version, "payments.maxAttempts", cfg.Policy("payments").MaxAttempts)
	})
	defer cancel()

	_ = live.Update([]byte(`{"policies": {"payments": {"maxAttempts": 3}}}`))
	_ = live.Update([]byte(`{"policies": {"payments": {"maxAttempts": 0}}}`)) // rejected: no call
	_ = live.Update([]byte(`{"policies": {"payments": {"maxAttempts": 1}}}`))
	// Output:
	// version 2 payments.maxAttempts 3
	// version 3 payments.maxAttempts 1
}
