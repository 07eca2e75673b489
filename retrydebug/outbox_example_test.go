package retrydebug_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrydebug"
)

// An outbox's ops on the page: pending, running, failed, and the age of
// the oldest one not finished.
func ExampleRecorder_Outbox() {
	dir, _ := os.MkdirTemp("", "outbox")
	defer os.RemoveAll(dir)
	j, err := outbox.OpenFile(filepath.Join(dir, "journal"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer j.Close()
	o, err := outbox.New(j, outbox.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	o.Enqueue(context.Background(), outbox.Op{Kind: "charge", Payload: []byte("order 42")})

	rec := retrydebug.NewRecorder(0, 0)
	rec.Outbox("payments", o)
	mux := http.NewServeMux()
	mux.Handle("/debug/retries", rec)

	for _, s := range rec.Snapshot().Outboxes {
		fmt.Println(s.Name, "pending", s.Pending, "running", s.Running, "failed", s.Failed)
	}
	// Output:
	// payments pending 1 running 0 failed 0
}
