package journaltest_test

import (
	"path/filepath"
	"testing"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/journaltest"
)

func TestFileJournal(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journaltest.Open {
		path := filepath.Join(t.TempDir(), "journal")
		return func() (outbox.Journal, error) { return outbox.OpenFile(path) }
	})
}
