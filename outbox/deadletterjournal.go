package outbox

import "context"

// A DeadLetterJournal is a Journal that lists its failed ops itself, so
// that [Outbox.DeadLetters] does not read every op (pgjournal's Journal
// reads the failed rows alone).
type DeadLetterJournal interface {
	Journal
	DeadLetters(ctx context.Context) ([]Entry, error)
}
