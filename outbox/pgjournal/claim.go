package pgjournal

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stormguard/retry/outbox"
)

// Claim leases due ops to c.Owner in one statement (UPDATE … WHERE id IN
// (SELECT … FOR UPDATE SKIP LOCKED)): see [outbox.SharedJournal]. The
// lease token is c.Owner, '#' and 64 random bits, new to each call. With
// c.Count, the statement adds 1 to each claimed op's attempts.
func (j *Journal) Claim(ctx context.Context, c outbox.ClaimRequest) ([]outbox.Entry, error) {
	if err := j.check(); err != nil {
		return nil, err
	}
	switch {
	case c.Limit < 1:
		return nil, fmt.Errorf("pgjournal: claim of %d ops (want at least 1)", c.Limit)
	case !c.Until.After(c.Now):
		return nil, errors.New("pgjournal: claim with a lease that ends before it starts")
	case len(c.Kinds) == 0:
		return nil, nil
	}
	token := c.Owner + "#" + rand.Text()[:13]
	count := 0
	if c.Count {
		count = 1 // the attempt claimed for, counted in the claim's write
	}
	rows, err := j.pool.Query(ctx, j.sql.claim, token, c.Until, c.Now, c.Kinds, c.Limit, count)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: claim: %w", err)
	}
	es, ids, err := scanAll(rows)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: claim: %w", err)
	}
	// RETURNING keeps no order: sort as the subquery chose.
	order := make([]int, len(es))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := es[a].Next.Compare(es[b].Next); c != 0 {
			return c
		}
		return int(ids[a] - ids[b])
	})
	out := make([]outbox.Entry, len(es))
	for i, k := range order {
		out[i] = es[k]
	}
	return out, nil
}

// Renew extends the leases of held that still hold their op, in one
// statement, and returns the keys of the others.
func (j *Journal) Renew(ctx context.Context, held []outbox.Entry, until time.Time) (lost []string, err error) {
	if err := j.check(); err != nil {
		return nil, err
	}
	if len(held) == 0 {
		return nil, nil
	}
	keys, leases := make([]string, len(held)), make([]string, len(held))
	for i, e := range held {
		keys[i], leases[i] = e.Op.Key, e.Lease
	}
	rows, err := j.pool.Query(ctx, j.sql.renew, keys, leases, until)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: renew: %w", err)
	}
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pgjournal: renew: %w", err)
	}
	for _, k := range keys {
		if !slices.Contains(kept, k) {
			lost = append(lost, k)
		}
	}
	return lost, nil
}

// Release ends e's lease when it still holds the op.
func (j *Journal) Release(ctx context.Context, e outbox.Entry) error {
	if err := j.check(); err != nil {
		return err
	}
	if e.Lease == "" {
		return nil
	}
	return j.submit(ctx, &write{e: e, release: true})
}

// UpdateRelease writes e, a pending op, and gives its lease back, in one
// write of a batch (outbox.ReleasingJournal): an attempt that leaves its op
// pending pays one write where Update then Release paid two, one batch
// after the other.
func (j *Journal) UpdateRelease(ctx context.Context, e outbox.Entry) error {
	if err := j.check(); err != nil {
		return err
	}
	if e.State != outbox.Pending {
		return fmt.Errorf("pgjournal: UpdateRelease of an op in state %v: only a pending op holds a lease to give back", e.State)
	}
	return j.submit(ctx, &write{e: e, free: true})
}

// Get returns the latest state of the ops among keys, in one statement.
func (j *Journal) Get(ctx context.Context, keys []string) ([]outbox.Entry, error) {
	if err := j.check(); err != nil {
		return nil, err
	}
	rows, err := j.pool.Query(ctx, j.sql.get, keys)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: get: %w", err)
	}
	es, _, err := scanAll(rows)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: get: %w", err)
	}
	return es, nil
}

var (
	_ outbox.CountingJournal  = (*Journal)(nil)
	_ outbox.ReleasingJournal = (*Journal)(nil)
)

// Counts counts the table's ops, for outbox.Outbox.Stats: pending (no
// live lease at now), running (leased) and failed, and when the oldest
// op not finished was enqueued. It reads every row's state: one statement
// per poll of each Outbox that runs over the journal.
func (j *Journal) Counts(ctx context.Context, now time.Time) (outbox.JournalCounts, error) {
	if err := j.check(); err != nil {
		return outbox.JournalCounts{}, err
	}
	var c outbox.JournalCounts
	var pending, running, failed int64
	var oldest pgtype.Timestamptz
	if err := j.pool.QueryRow(ctx, j.sql.counts, now).Scan(&pending, &running, &failed, &oldest); err != nil {
		return c, fmt.Errorf("pgjournal: counts: %w", err)
	}
	c.Pending, c.Running, c.Failed = int(pending), int(running), int(failed)
	if oldest.Valid {
		c.OldestPending = oldest.Time
	}
	return c, nil
}
