package bench_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/internal/redisserver"
	"github.com/stormguard/retry/outbox"
)

// BenchmarkScaleStore is scenario (d): the stores' throughput from 1, 2, 8
// and 64 concurrent clients, called directly (no HTTP), each call timed
// for the p99. Rows:
//   - memory-fresh, redis-fresh: what the idempotency middleware asks of
//     its store for a new key, Claim then Complete (a 64-byte result);
//   - memory-replay, redis-replay: a Claim that finds the saved result;
//   - outbox-file: a durable outbox.Enqueue on the file journal (a
//     256-byte payload, fsync'd before it returns; concurrent enqueues
//     share syncs).
//
// The redis rows run against a local redis-server (internal/redisserver)
// and are left out when it is not installed.
func BenchmarkScaleStore(b *testing.B) {
	ctx := context.Background()
	fp := sha256.Sum256([]byte("POST /orders " + orderBody))
	result := make([]byte, 64)
	const ttl, lease = 2 * time.Second, time.Second

	stores := []struct {
		name string
		open func(b *testing.B) idempotency.Store
	}{
		{"memory", func(b *testing.B) idempotency.Store { return memoryStore(b) }},
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		addr := redisserver.Start(b).Addr // one server for every redis row
		stores = append(stores, struct {
			name string
			open func(b *testing.B) idempotency.Store
		}{"redis", func(b *testing.B) idempotency.Store {
			s, _ := redisStore(b, addr)
			return s
		}})
	} else {
		b.Logf("no redis-server: the redis rows are left out")
	}

	clientCounts := []int{1, 2, 8, 64}
	for _, st := range stores {
		for _, mode := range []string{"fresh", "replay"} {
			for _, g := range clientCounts {
				b.Run(fmt.Sprintf("%s-%s/clients=%d", st.name, mode, g), func(b *testing.B) {
					s := st.open(b)
					replayKey := "replay-" + strconv.FormatInt(keySeq.Add(1), 10)
					if _, err := s.Claim(ctx, replayKey, "t0", fp[:], lease); err != nil {
						b.Fatal(err)
					}
					if err := s.Complete(ctx, replayKey, "t0", fp[:], result, time.Hour); err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					throughput(b, g, func(int) error {
						if mode == "replay" {
							c, err := s.Claim(ctx, replayKey, "t1", fp[:], lease)
							if err == nil && c.State != idempotency.Completed {
								err = fmt.Errorf("replay found state %v", c.State)
							}
							return err
						}
						key := "fresh-" + strconv.FormatInt(keySeq.Add(1), 10)
						if _, err := s.Claim(ctx, key, "t", fp[:], lease); err != nil {
							return err
						}
						return s.Complete(ctx, key, "t", fp[:], result, ttl)
					})
				})
			}
		}
	}
	for _, g := range clientCounts {
		b.Run(fmt.Sprintf("outbox-file/clients=%d", g), func(b *testing.B) {
			j, err := outbox.OpenFile(filepath.Join(b.TempDir(), "journal"))
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			o, err := outbox.New(j, outbox.Options{})
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 256)
			b.ReportAllocs()
			throughput(b, g, func(int) error {
				_, err := o.Enqueue(ctx, outbox.Op{Kind: "send", Payload: payload})
				return err
			})
		})
	}
}
