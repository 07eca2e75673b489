package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// An op enqueued, failed once, and run again under the same key. In a
// service, the journal outlives the process: a restarted process opens it
// and its Run resumes the op. The fake clock lets the example skip the
// backoff; leave Clock nil in production.
func Example() {
	dir, _ := os.MkdirTemp("", "outbox")
	defer os.RemoveAll(dir)

	j, err := outbox.OpenFile(filepath.Join(dir, "journal"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	o, err := outbox.New(j, outbox.Options{Clock: retrytest.NewAutoClock()})
	if err != nil {
		fmt.Println(err)
		return
	}
	keys, calls := map[string]bool{}, 0
	o.Handle("charge", func(ctx context.Context, op outbox.Op) error {
		keys[op.Key] = true // a real handler sends op.Key as the Idempotency-Key
		if calls++; calls == 1 {
			return errors.New("503 Service Unavailable")
		}
		fmt.Printf("charged %s\n", op.Payload)
		return nil
	})

	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- o.Run(ctx) }()
	defer func() { stop(); <-ran }() // Run returns once its handler calls have

	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "charge", Payload: []byte("order 42: 10 EUR")})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := o.Wait(context.Background(), key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.State, "after", r.Attempts, "attempts, under", len(keys), "key")
	// Output:
	// charged order 42: 10 EUR
	// succeeded after 2 attempts, under 1 key
}
