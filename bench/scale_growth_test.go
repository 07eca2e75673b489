package bench_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/shed"
)

// The growth scenarios: each axis from its small end to its large value,
// with the cost per unit (per key, per policy, per op, per goroutine's
// call) as a metric, so that a table reads flat or not at a glance.
// BENCHMARKS.md has the tables; the target is a cost per unit within 2×
// of the small end's.

// keyCounts are the sizes of the keyed guard sets.
var keyCounts = []int{1, 10, 100, 1000, 10_000}

// keyNames returns n distinct keys, shaped as the origins retryhttp uses.
func keyNames(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "https://svc" + strconv.Itoa(i) + ".example"
	}
	return keys
}

// keyedSet is one of guard's keyed sets, behind the one method the rows
// call.
type keyedSet struct {
	name string
	make func(b *testing.B, maxKeys int) func(key string) any
}

var keyedSets = []keyedSet{
	{"floor", func(b *testing.B, n int) func(string) any {
		s := &floorSet{m: map[string]*[64]byte{}, max: n}
		return s.get
	}},
	{"budgets", func(b *testing.B, n int) func(string) any {
		s, err := guard.NewBudgets(guard.BudgetOptions{}, n)
		if err != nil {
			b.Fatal(err)
		}
		return func(k string) any { return s.Get(k) }
	}},
	{"breakers", func(b *testing.B, n int) func(string) any {
		s, err := guard.NewBreakers(guard.BreakerOptions{}, n)
		if err != nil {
			b.Fatal(err)
		}
		return func(k string) any { return s.Get(k) }
	}},
	{"throttles", func(b *testing.B, n int) func(string) any {
		s, err := guard.NewThrottles(guard.ThrottleOptions{}, n)
		if err != nil {
			b.Fatal(err)
		}
		return func(k string) any { return s.Get(k) }
	}},
}

var sinkGuard any

// floorSet is the floor under the keyed sets: the same two maps (a
// sync.Map read without a lock, a map under a mutex to add to and forget
// from), the same first-found victim, and a 64-byte value where they
// make a guard. What it costs at 10,000 keys over 1 is the maps' and the
// memory's, not a guard's.
type floorSet struct {
	live sync.Map
	mu   sync.Mutex
	m    map[string]*[64]byte
	max  int
}

func (s *floorSet) get(key string) any {
	if v, ok := s.live.Load(key); ok {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok {
		return v
	}
	if len(s.m) >= s.max {
		for victim := range s.m {
			delete(s.m, victim)
			s.live.Delete(victim)
			break
		}
	}
	v := new([64]byte)
	s.m[key] = v
	s.live.Store(key, v)
	return v
}

// BenchmarkScaleKeys is the keyed guard sets (guard.Budgets, Breakers,
// Throttles) from 1 to 10,000 keys, each set sized to hold them all:
//   - get: Get of a key the set holds, the keys taken in turn (what every
//     guarded call pays); ns/op is per Get;
//   - fill: an empty set given each of its keys once (what the first call
//     to each origin pays); ns/key and B/key per key added;
//   - churn: a full set given keys it does not hold, so that each Get
//     forgets one to make room (an origin set larger than maxKeys); ns/op
//     is per Get.
func BenchmarkScaleKeys(b *testing.B) {
	for _, set := range keyedSets {
		for _, n := range keyCounts {
			keys := keyNames(n)
			b.Run(fmt.Sprintf("%s/get/keys=%d", set.name, n), func(b *testing.B) {
				get := set.make(b, n)
				for _, k := range keys {
					get(k)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					sinkGuard = get(keys[i])
					if i++; i == n {
						i = 0
					}
				}
			})
			b.Run(fmt.Sprintf("%s/fill/keys=%d", set.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					get := set.make(b, n)
					for _, k := range keys {
						sinkGuard = get(k)
					}
				}
				perKey(b, n)
			})
			b.Run(fmt.Sprintf("%s/churn/keys=%d", set.name, n), func(b *testing.B) {
				get := set.make(b, n)
				for _, k := range keys {
					get(k)
				}
				// Twice as many keys as the set holds, taken in turn: each
				// one has been forgotten by the time it comes back.
				more := keyNames(2 * n)
				b.ReportAllocs()
				i := n
				for b.Loop() {
					sinkGuard = get(more[i])
					if i++; i == len(more) {
						i = 0
					}
				}
			})
		}
	}
}

// perKey turns a whole loop's time into a metric per unit:
// ns/key, the time per key added.
func perKey(b *testing.B, units int) {
	b.StopTimer()
	per := float64(b.N) * float64(units)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/key")
}

// policyCounts are the sizes of the policy documents.
var policyCounts = []int{10, 100, 1000, 10_000}

// policiesDoc is a document of n named policies that share one budget,
// each with the fields a real one sets (as retryconfig's own tests write
// it).
func policiesDoc(n int) []byte {
	doc := []byte(`{"budgets": {"b": {"maxTokens": 10}}, "policies": {`)
	for i := range n {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `"policy-`+strconv.Itoa(i)+`": {"maxAttempts": 3, "baseBackoff": "100ms", "maxBackoff": "2s", "jitter": "band:0.3", "retryableStatusCodes": [503, 429], "budget": "b"}`...)
	}
	return append(doc, "}}"...)
}

var sinkPolicyAttempts int

// BenchmarkScaleConfig is retryconfig.Live from 10 to 10,000 named
// policies:
//   - reload: Live.Update of the whole document (parse, validate, carry
//     the guards over, swap); ns/policy and B/policy per policy in it;
//   - lookup: Live.Policy(name), the names taken in turn (what each call
//     pays); ns/op per lookup.
func BenchmarkScaleConfig(b *testing.B) {
	for _, n := range policyCounts {
		doc := policiesDoc(n)
		names := make([]string, n)
		for i := range names {
			names[i] = "policy-" + strconv.Itoa(i)
		}
		b.Run(fmt.Sprintf("reload/policies=%d", n), func(b *testing.B) {
			l := retryconfig.NewLive(nil)
			b.ReportAllocs()
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if err := l.Update(doc); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/policy")
		})
		b.Run(fmt.Sprintf("lookup/policies=%d", n), func(b *testing.B) {
			l := retryconfig.NewLive(nil)
			if err := l.Update(doc); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sinkPolicyAttempts += l.Policy(names[i]).MaxAttempts
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}

// BenchmarkScaleShed is shed.Limiter's admission, Acquire then release,
// from exactly 1, 2, 8 and 64 goroutines (as BenchmarkScaleContention
// runs them); ns/op is wall time per admission over all of them, so on 2
// cores it should halve from 1 to 2 and stay flat after. fixed is a Fixed
// limit of 128, above every row's goroutines: every request is admitted
// at once, and the cost is the admission's. adaptive is the default
// Options (Gradient, from a limit of 20): from 64 goroutines some wait in
// the queue or are shed (shed/op), as a server past its limit does.
func BenchmarkScaleShed(b *testing.B) {
	for _, row := range []struct {
		name string
		o    shed.Options
	}{
		{"fixed", shed.Options{Algorithm: shed.Fixed, InitialLimit: 128, MaxLimit: 128}},
		{"adaptive", shed.Options{QueueTimeout: time.Second}},
	} {
		for _, g := range []int{1, 2, 8, 64} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", row.name, g), func(b *testing.B) {
				l, err := shed.New(row.o)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				var shedN atomic.Int64
				b.ReportAllocs()
				contend(b, g, func(int) error {
					release, err := l.Acquire(ctx, shed.Critical)
					if err != nil {
						shedN.Add(1)
						return nil // a shed request: the limiter at work
					}
					release(shed.Success)
					return nil
				})
				b.StopTimer()
				b.ReportMetric(float64(shedN.Load())/float64(b.N), "shed/op")
			})
		}
	}
}
