package pgjournal

import (
	"os"
	"strings"
	"testing"
)

// The package doc shows the table Migrate creates: keep them the same.
func TestDocShowsTheTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	q, err := newSQL("outbox_ops")
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, line := range strings.Split(string(doc), "\n") {
		shown = append(shown, strings.TrimPrefix(strings.TrimPrefix(line, "//"), "\t"))
	}
	text := strings.Join(shown, "\n")
	want := strings.ReplaceAll(q.create, `"outbox_ops"`, "outbox_ops")
	for _, ix := range []string{"due", "ready", "leased"} {
		want = strings.ReplaceAll(want, `"outbox_ops_`+ix+`"`, "outbox_ops_"+ix)
	}
	if !strings.Contains(text, want) {
		t.Errorf("doc.go does not show the table Migrate creates:\n%s", want)
	}
}
