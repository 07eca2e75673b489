package outbox

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
)

// Handler makes one attempt of an op. It returns nil when the op has had
// its effect; any other error is judged by the Policy's Classifier, as
// retry.Do judges it: mark an error with retry.Permanent to end the op at
// once, with retry.RetryAfter to ask for a least wait.
//
// It must send op.Key as the idempotency key of its call, so that the
// server runs the op once however many attempts reach it. Its ctx ends when
// Run is stopped or the attempt times out: a handler must return then.
type Handler func(ctx context.Context, op Op) error

// defaultMaxAttempts is retry.Policy's: a zero MaxAttempts means it here too.
const defaultMaxAttempts = 4

// Outbox runs durable ops: each Enqueue'd op is written to a [Journal]
// before Enqueue returns, and Run calls its handler until it succeeds or is
// given up, resuming after a restart where the previous process stopped.
//
// The rules are retry.Do's, applied across processes: the key never
// changes; the attempt count is durable before each call, so MaxAttempts
// counts calls made by every process, one cut short by a crash included;
// the time of the next attempt is drawn once, with the Policy's Jitter, and
// written, so that neither a restart resets the backoff nor a fleet that
// restarts together comes back as one herd. An op that succeeded or was
// given up never runs again.
//
// Its methods are safe for concurrent use.
type Outbox struct {
	j           Journal
	policy      retry.Policy
	guards      guard.Keyed
	policies    *retryconfig.Live
	clock       retry.Clock
	horizon     time.Duration
	concurrency int

	mu       sync.Mutex
	handlers map[string]Handler
	bad      error // a bad Handle call, returned by Run
	ops      map[string]*item
	due      opHeap
	parked   map[string][]*item // pending ops of a kind with no handler yet
	wake     chan struct{}
	running  bool

	// Counts for Stats, kept as ops move.
	unfinished int     // pending or running
	inCall     int     // running: attempts under way
	inCallOwn  int     // of them, of ops counted in unfinished
	failed     int     // dead letters
	byAge      ageHeap // the unfinished ops, oldest first

	shared *sharedRun // set when j is a SharedJournal (shared.go)

	counts  JournalCounts // a CountingJournal's, as of Run's latest poll
	counted bool          // counts holds a poll's answer

	swept time.Time // when forgetExpired last looked
}

// item is the Outbox's state of one op.
type item struct {
	e        Entry
	index    int // in the heap; -1 when not there
	ageIndex int // in byAge; -1 when not there
	// adding is set while Enqueue's Add runs; durable, made only when a
	// second Enqueue of the same key has to wait for it, is closed then.
	adding  bool
	durable chan struct{}
	addErr  error
	out     *outcome // replaced by Redrive
	err     error    // the last attempt's error, in this process
	// budgeted says the Policy's Budget has counted e's next attempt
	// (Budget.Started or Retrying), in this process: Next counts a retry
	// it allows, and an attempt given back is sent again uncounted.
	budgeted bool
	redrive  bool // a Redrive is writing
	// Over a SharedJournal: released says the attempt's last write gave
	// its lease back (ReleasingJournal), leaseDone that the attempt no
	// longer uses its lease (shared.go's startShared).
	released, leaseDone bool
	inCall              bool // counted as running, see callStarted
	// inCallOwn, counted and dead say where Stats counts the op.
	inCallOwn, counted, dead bool
	call                     uint64 // calls started, see callStarted
}

// outcome is one run of an op to its end, for Wait.
type outcome struct {
	done chan struct{} // closed when the op finishes, res then set
	res  Result
}

func newOutcome() *outcome { return &outcome{done: make(chan struct{})} }

// result is the Result of a finished op.
func (p *item) result() Result {
	r := Result{Key: p.e.Op.Key, State: p.e.State, Attempts: p.e.Attempts}
	if p.e.State == Failed {
		r.Reason, r.Err = p.e.Reason, p.err
		if r.Err == nil {
			r.Err = errors.New(p.e.Reason)
		}
	}
	return r
}

// New returns an Outbox over j, loading the ops j holds: pending ones run
// when Run is called. A [SharedJournal] is not loaded: Run claims its ops
// as they fall due. The Outbox does not close j.
func New(j Journal, opts Options) (*Outbox, error) {
	if j == nil {
		return nil, errors.New("outbox: New with a nil Journal")
	}
	o := &Outbox{
		j:           j,
		policy:      opts.Policy,
		guards:      opts.Guards,
		policies:    opts.Policies,
		clock:       opts.Clock,
		horizon:     opts.Horizon,
		concurrency: opts.Concurrency,
		handlers:    make(map[string]Handler),
		ops:         make(map[string]*item),
		parked:      make(map[string][]*item),
		wake:        make(chan struct{}, 1),
	}
	switch {
	case o.horizon < 0:
		return nil, fmt.Errorf("outbox: Options.Horizon %v is negative", o.horizon)
	case o.horizon == 0:
		o.horizon = 24 * time.Hour
	}
	switch {
	case o.concurrency < 0:
		return nil, fmt.Errorf("outbox: Options.Concurrency %d is negative", o.concurrency)
	case o.concurrency == 0:
		o.concurrency = 1
	}
	check := o.policy
	if check.MaxAttempts < 0 && check.MaxElapsed == 0 {
		check.MaxElapsed = o.horizon // NotAfter ends an op with no count limit
	}
	if err := check.Validate(); err != nil {
		return nil, fmt.Errorf("outbox: Options.Policy: %w", err)
	}
	if o.clock == nil {
		o.clock = opts.Policy.Clock
	}
	if o.clock == nil {
		o.clock = realClock{}
	}
	o.policy = o.fill(check)
	if dj, ok := j.(DefaultsJournal); ok {
		if err := dj.UseDefaults(Defaults{Horizon: o.horizon, Clock: o.clock}); err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
	}
	if sj, ok := j.(SharedJournal); ok {
		// Ops are claimed as they fall due, not loaded (shared.go).
		var err error
		if o.shared, err = newSharedRun(sj, opts); err != nil {
			return nil, err
		}
		return o, nil
	}
	entries, err := j.Load(context.Background())
	if err != nil {
		return nil, fmt.Errorf("outbox: load journal: %w", err)
	}
	// Sized once: a million ops resumed would otherwise rehash the map
	// twenty times over.
	o.ops = make(map[string]*item, len(entries))
	for _, e := range entries {
		p := &item{e: e, index: -1, ageIndex: -1, out: newOutcome()}
		if e.LastError != "" {
			p.err = errors.New(e.LastError)
		}
		o.ops[e.Op.Key] = p
		switch e.State {
		case Pending:
			heap.Push(&o.due, p)
			o.unfinishedAdd(p)
		case Failed:
			p.dead = true
			o.failed++
		}
		if e.State != Pending {
			p.out.res = p.result()
			close(p.out.done)
		}
	}
	return o, nil
}

// Handle sets the handler of ops of the given kind, replacing any before.
// Set handlers before Run; ops of a kind with no handler stay pending,
// untouched, until one is set. An empty kind or a nil h is an error that
// Run returns.
func (o *Outbox) Handle(kind string, h func(ctx context.Context, op Op) error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if kind == "" || h == nil {
		o.bad = errors.Join(o.bad, fmt.Errorf("outbox: Handle(%q) with an empty kind or a nil handler", kind))
		return
	}
	o.handlers[kind] = h
	for _, p := range o.parked[kind] {
		heap.Push(&o.due, p)
	}
	delete(o.parked, kind)
	o.poke()
}

// poke wakes Run's loop, if it sleeps.
func (o *Outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Enqueue writes op to the journal and returns its key once the op is
// durable: a crash after Enqueue returns does not lose it, and Run (of
// this process or the next) will run it. It needs no Run to be durable.
//
// An empty op.Key gets a fresh random key. Enqueueing an op whose key the
// Outbox holds already, with the same Kind and Payload, returns the key and
// adds nothing (the op runs once); with another Kind or Payload it fails
// with [ErrKeyConflict]; over a [SharedJournal], so does an op that
// another process enqueued under the key. A bad op fails with an error
// matching [ErrInvalidOp]. When the journal fails to write the op,
// Enqueue returns the key it used with the error: retry the same intent
// under that key (set Op.Key), so that it can never run under two.
func (o *Outbox) Enqueue(ctx context.Context, op Op) (key string, err error) {
	now := o.clock.Now()
	op, err = prepare(op, now, o.horizon)
	if err != nil {
		return "", err
	}

	o.mu.Lock()
	if old, ok := o.ops[op.Key]; ok {
		if old.adding { // the same op, enqueued by another call just now
			if old.durable == nil {
				old.durable = make(chan struct{})
			}
			durable := old.durable
			o.mu.Unlock()
			select {
			case <-durable:
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
			o.mu.Lock()
		}
		addErr := old.addErr
		conflict := old.e.Op.Kind != op.Kind || !bytes.Equal(old.e.Op.Payload, op.Payload) && old.e.State != Succeeded
		o.mu.Unlock()
		switch {
		case addErr != nil:
			return "", addErr
		case conflict:
			return "", ErrKeyConflict
		}
		return op.Key, nil
	}
	p := &item{e: Entry{Op: op, State: Pending, Next: now, Enqueued: now}, index: -1, ageIndex: -1, adding: true, out: newOutcome()}
	o.ops[op.Key] = p
	o.mu.Unlock()

	err = o.j.Add(ctx, p.e)
	if errors.Is(err, ErrDuplicate) && o.shared != nil {
		err = o.enqueuedElsewhere(ctx, op)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p.adding = false
	if p.durable != nil {
		close(p.durable)
	}
	switch {
	case err == errEnqueuedElsewhere:
		// Another Outbox over the shared journal holds the same op: it is
		// enqueued, and Wait follows it there.
		delete(o.ops, op.Key)
		return op.Key, nil
	case errors.Is(err, ErrKeyConflict):
		delete(o.ops, op.Key)
		return "", err
	case err != nil:
		// Not durable: the key goes back with the error, so that the
		// caller can retry the same intent under it, never a second key.
		p.addErr = fmt.Errorf("outbox: enqueue: %w", err)
		delete(o.ops, op.Key)
		return op.Key, p.addErr
	}
	heap.Push(&o.due, p)
	o.unfinishedAdd(p)
	o.poke()
	return op.Key, nil
}

// Wait waits for the op with the given key to finish, and returns its
// outcome. For an op that failed (a dead letter) it returns the Result
// with an error too, as Go's Wait methods report a failure: one that
// matches [ErrFailed] and the last attempt's error (Result.Err), so that
// "err == nil" means the op had its effect. It fails with
// [ErrUnknownKey] for a key the Outbox does not hold (an op that succeeded
// more than 24h ago is forgotten, as its journal forgets it), or with ctx's cause
// when ctx ends first. It waits only: Run must run for the op to finish.
//
// Over a [SharedJournal] it also waits for ops this Outbox did not
// enqueue: one committed with a business row (pgjournal's EnqueueTx) or
// by another process. It asks the journal for the op at the poll interval
// (Options.PollInterval) while it waits, so that it sees the op finish
// wherever it runs, in a process that runs no handler too.
func (o *Outbox) Wait(ctx context.Context, key string) (Result, error) {
	o.mu.Lock()
	p, ok := o.ops[key]
	var out *outcome
	if ok {
		out = p.out
	}
	o.mu.Unlock()
	if !ok && o.shared != nil {
		var err error
		if out, err = o.adopt(ctx, key); err != nil {
			return Result{}, err
		}
		ok = out != nil
	}
	if !ok {
		return Result{}, ErrUnknownKey
	}
	if o.shared != nil {
		fctx, stop := context.WithCancel(ctx)
		followed := make(chan struct{})
		go func() {
			defer close(followed)
			o.follow(fctx, key, out)
		}()
		defer func() { stop(); <-followed }()
	}
	select {
	case <-out.done:
		if out.res.State == Failed {
			return out.res, &failedError{reason: out.res.Reason, last: out.res.Err}
		}
		return out.res, nil
	case <-ctx.Done():
		return Result{}, context.Cause(ctx)
	}
}

// realClock is the real time, when neither Options nor Policy set a Clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, d)
}
func (realClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}
