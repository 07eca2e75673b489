package pgjournal_test

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
	"github.com/stormguard/retry/retryhttp"
)

// Every process of the service opens the same table and runs an Outbox
// over it; an order and the op that charges for it commit in one
// transaction.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	// A deploy step, before the processes start (New only checks).
	if err := pgjournal.Migrate(ctx, pool, pgjournal.Options{}); err != nil {
		log.Fatal(err)
	}
	j, err := pgjournal.New(pool, pgjournal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	o, err := outbox.New(j, outbox.Options{
		Policy:       retry.Policy{MaxAttempts: 20, BaseBackoff: time.Second, MaxBackoff: 5 * time.Minute},
		Concurrency:  8,
		PollInterval: time.Second,      // the default: how soon another process's op is seen
		Lease:        30 * time.Second, // the default: how long a dead process's ops wait
	})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: &retryhttp.Transport{}}
	o.Handle("charge", outbox.HTTPHandler(client, nil))
	go o.Run(ctx) // in every process: they share the ops

	// In the request handler: the order and its charge, or neither.
	req, err := http.NewRequest(http.MethodPost, "https://payments.example/charges", nil)
	if err != nil {
		log.Fatal(err)
	}
	op, err := outbox.HTTPOp(req, "charge")
	if err != nil {
		log.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		key, err := j.EnqueueTx(ctx, tx, op) // one statement
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO orders (id, charge_key) VALUES ($1, $2)`, "order-7", key)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}
