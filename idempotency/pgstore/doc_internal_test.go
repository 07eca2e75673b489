package pgstore

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDocShowsTheTable keeps the SQL that the package doc shows, for teams
// that run their own migrations, the same as what Migrate runs.
func TestDocShowsTheTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, line := range strings.Split(string(doc), "\n") {
		shown = append(shown, strings.TrimPrefix(strings.TrimPrefix(line, "//"), "\t"))
	}
	text := strings.Join(shown, "\n")
	want := fmt.Sprintf(schema, "idempotency_keys", "idempotency_keys_expires_at", "idempotency_keys_leases") + ";"
	if !strings.Contains(text, want) {
		t.Errorf("doc.go does not show the table Migrate creates:\n%s", want)
	}
}
