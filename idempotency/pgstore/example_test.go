package pgstore_test

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/pgstore"
)

// A handler that saves its response in the same transaction as the order
// it creates: after a crash at any point, a retry either gets this
// response replayed or runs the handler on a clean slate. It needs a
// PostgreSQL server, so it has no Output.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db/shop")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(pool, pgstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	go func() { // expired keys cost only space: reap them now and then
		for range time.Tick(time.Minute) {
			if _, err := store.Reap(ctx); err != nil {
				log.Print(err)
			}
		}
	}()

	createOrder := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		lease, keyed := idempotency.FromContext(ctx)
		tx, err := pool.Begin(ctx)
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable) // nothing was done
			return
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
		var id int64
		if err := tx.QueryRow(ctx, "INSERT INTO orders (item) VALUES ($1) RETURNING id", "book").Scan(&id); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		body, _ := json.Marshal(map[string]int64{"id": id})
		header := http.Header{"Content-Type": {"application/json"}}
		if keyed {
			// Fails, and fails tx, if this request no longer holds its key.
			if err := store.CompleteTx(ctx, tx, lease, http.StatusCreated, header, body); err != nil {
				http.Error(w, "try again", http.StatusServiceUnavailable)
				return
			}
		}
		if err := tx.Commit(ctx); err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		// The same response as saved: the middleware sends it as it is.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})

	m, err := idempotency.New(idempotency.Options{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("POST /orders", m.Handler(createOrder))
}
