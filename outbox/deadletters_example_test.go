package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// A dead letter listed with its Trace, and re-driven once the cause is
// fixed; Stats counts the ops as they move.
func ExampleOutbox_DeadLetters() {
	dir, _ := os.MkdirTemp("", "outbox")
	defer os.RemoveAll(dir)
	j, err := outbox.OpenFile(filepath.Join(dir, "journal"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	o, err := outbox.New(j, outbox.Options{Clock: retrytest.NewAutoClock(), Policy: retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fixed := false
	o.Handle("charge", func(ctx context.Context, op outbox.Op) error {
		if !fixed {
			return errors.New("503 Service Unavailable")
		}
		return nil
	})
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- o.Run(ctx) }()
	defer func() { stop(); <-ran }()

	key, _ := o.Enqueue(context.Background(), outbox.Op{Kind: "charge", Payload: []byte("order 42")})
	o.Wait(context.Background(), key)
	fmt.Printf("%+v\n", o.Stats())

	dead, _ := o.DeadLetters(context.Background())
	for _, e := range dead {
		fmt.Printf("%s: %s (%s)\n", e.Reason, e.Trace, e.LastError)
	}
	fixed = true
	o.Redrive(context.Background(), key)
	r, _ := o.Wait(context.Background(), key)
	fmt.Println(r.State)
	// Output:
	// {Pending:0 Running:0 Failed:1 OldestPending:0s}
	// attempts used up: 3 attempts, waits [200ms 400ms], 600ms, attempts exhausted (error) (503 Service Unavailable)
	// succeeded
}
