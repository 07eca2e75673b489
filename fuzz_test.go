package retry_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/require"
)

// The fuzz targets' seed corpora live in testdata/fuzz/<FuzzName>/; plain
// `go test` runs them, `go test -fuzz=FuzzX` grows them.

// fuzzPolicy builds a Policy from fuzzed fields. jitter picks one of the
// built-in jitters (or none, for the default); spread is BandJitter's.
func fuzzPolicy(base int64, factor float64, maxDelay int64, attempts int, maxElapsed, attemptTimeout int64, jitter uint8, spread float64) retry.Policy {
	js := fuzzJitters(spread)
	return retry.Policy{
		MaxAttempts:    attempts,
		BaseBackoff:    time.Duration(base),
		Factor:         factor,
		MaxBackoff:     time.Duration(maxDelay),
		MaxElapsed:     time.Duration(maxElapsed),
		AttemptTimeout: time.Duration(attemptTimeout),
		Jitter:         js[int(jitter)%len(js)],
	}
}

func fuzzJitters(spread float64) []retry.Jitter {
	return []retry.Jitter{
		nil, // the default, FullJitter
		retry.NoJitter,
		retry.FullJitter,
		retry.EqualJitter,
		retry.DecorrelatedJitter,
		retry.BandJitter(spread),
		retry.DecorrelatedJitter + 1, // a JitterKind with no name: Validate rejects it
	}
}

// effective is what a Policy's fields stand for once zeros take their
// defaults, as the Policy doc states them.
type effective struct {
	attempts       int
	base, maxDelay time.Duration
	factor         float64
}

func effectiveOf(p retry.Policy) effective {
	e := effective{attempts: p.MaxAttempts, base: p.BaseBackoff, maxDelay: p.MaxBackoff, factor: p.Factor}
	if e.attempts == 0 {
		e.attempts = 4
	}
	if e.base == 0 {
		e.base = 200 * time.Millisecond
		if e.maxDelay > 0 {
			e.base = min(e.base, e.maxDelay) // the default base fits under a MaxBackoff that is set
		}
	}
	if e.factor == 0 {
		e.factor = 2
	}
	if e.maxDelay == 0 {
		e.maxDelay = max(5*time.Second, e.base)
	}
	return e
}

// invalidFields lists, independently of Validate, every field of p that
// Validate must reject. spread is the BandJitter's, if p has one.
func invalidFields(p retry.Policy, spread float64) []string {
	e := effectiveOf(p)
	var bad []string
	if e.base < 0 {
		bad = append(bad, "BaseBackoff")
	}
	if e.maxDelay < 0 || e.maxDelay < e.base {
		bad = append(bad, "MaxBackoff")
	}
	if math.IsNaN(e.factor) || math.IsInf(e.factor, 0) || e.factor < 1 {
		bad = append(bad, "Factor")
	}
	if p.MaxElapsed < 0 {
		bad = append(bad, "MaxElapsed")
	}
	if p.AttemptTimeout < 0 {
		bad = append(bad, "AttemptTimeout")
	}
	if p.MaxAttempts < 0 && (p.MaxElapsed == 0 || e.base < retry.MinUnboundedWait) {
		bad = append(bad, "MaxAttempts")
	}
	if isBand(p.Jitter) && !(spread >= 0 && spread <= 1) || p.Jitter == retry.DecorrelatedJitter+1 {
		bad = append(bad, "Jitter")
	}
	return bad
}

// isBand reports whether j is a BandJitter: the one built-in that is not a
// named constant.
func isBand(j retry.Jitter) bool {
	return j != nil && reflect.TypeOf(j) == reflect.TypeOf(retry.BandJitter(0))
}

// namedField returns the field an ErrInvalidPolicy error names first.
func namedField(err error) string {
	msg := strings.TrimPrefix(err.Error(), retry.ErrInvalidPolicy.Error()+": ")
	field, _, _ := strings.Cut(msg, " ")
	return strings.TrimSuffix(field, ":")
}

// atMost and atLeast compare a wait with a bound computed in float64, which
// may round by half an ulp of the bound: up to 4µs near math.MaxInt64.
func atMost(w, bound time.Duration) bool  { return w <= bound || w-bound <= bound>>50+1 }
func atLeast(w, bound time.Duration) bool { return w >= bound || bound-w <= bound>>50+1 }

// FuzzPolicyWait: any Policy and any step is either rejected by Validate,
// naming a field that is wrong, or gives waits within [0, MaxBackoff] that
// follow the jitter's formula; and a Do on a valid one sleeps only such waits.
func FuzzPolicyWait(f *testing.F) {
	// A few seeds in code; the interesting ones are in testdata/fuzz.
	f.Add(int64(0), 0.0, int64(0), 0, int64(0), int64(0), uint8(0), 0.0, 1, int64(0), 0.5)
	f.Add(int64(time.Second), 1e308, int64(time.Minute), math.MaxInt, int64(0), int64(0), uint8(1), 0.0, math.MaxInt, int64(0), 0.999)
	f.Add(int64(1), 2.0, int64(math.MaxInt64), -1, int64(time.Hour), int64(time.Second), uint8(5), 0.3, 64, int64(math.MaxInt64), 0.0)
	f.Fuzz(func(t *testing.T, base int64, factor float64, maxDelay int64, attempts int, maxElapsed, attemptTimeout int64, jitter uint8, spread float64, n int, prev int64, u float64) {
		p := fuzzPolicy(base, factor, maxDelay, attempts, maxElapsed, attemptTimeout, jitter, spread)
		e := effectiveOf(p)
		hi := max(e.maxDelay, 0) // the doc promises range even for a rejected policy

		bad := invalidFields(p, spread)
		err := p.Validate()
		if len(bad) == 0 {
			require.NoError(t, err, "Validate(%+v)", p)
		} else {
			require.ErrorIs(t, err, retry.ErrInvalidPolicy, "Validate(%+v), want one of %v named", p, bad)
			require.Contains(t, bad, namedField(err), "Validate(%+v) = %q, want it to name one of %v", p, err, bad)
		}

		steps := []int{n, n + 1, 0, 1, 2, 3, 64, math.MaxInt, math.MinInt}
		if n == math.MaxInt {
			steps[1] = n
		}
		for _, k := range steps {
			w := p.Wait(k, time.Duration(prev), u)
			require.True(t, w >= 0 && w <= hi, "Wait(%d, %v, %v) = %v, want within [0, %v] for %+v", k, time.Duration(prev), u, w, hi, p)
		}
		if err != nil {
			return
		}
		if u >= 0 && u < 1 { // the draw Do makes; outside it only the clamp is promised
			checkJitterFormula(t, p, e, spread, n, time.Duration(prev), u)
		}
		checkDoWaits(t, p, e)
	})
}

// checkJitterFormula checks Wait(n) against the formula in the Jitter's doc.
func checkJitterFormula(t *testing.T, p retry.Policy, e effective, spread float64, n int, prev time.Duration, u float64) {
	t.Helper()
	flat := p
	flat.Jitter = retry.NoJitter
	d := flat.Wait(n, prev, u) // min(MaxBackoff, BaseBackoff·Factor^(n−1))
	if n < math.MaxInt {
		next := flat.Wait(n+1, prev, u)
		require.GreaterOrEqual(t, next, d, "NoJitter Wait(%d) = %v < Wait(%d) = %v: the delay shrank", n+1, next, n, d)
	}
	first := flat.Wait(1, prev, u)
	require.True(t, atLeast(first, e.base) && atMost(first, e.base), "NoJitter Wait(1) = %v, want BaseBackoff %v", first, e.base)

	w := p.Wait(n, prev, u)
	switch j := p.Jitter; {
	case j == nil || j == retry.FullJitter:
		require.True(t, atMost(w, d), "FullJitter Wait(%d) = %v, want within [0, %v]", n, w, d)
	case j == retry.NoJitter:
		require.Equal(t, d, w, "%v Wait(%d) = %v, want %v", j, n, w, d)
	case j == retry.EqualJitter:
		require.True(t, atLeast(w, d/2) && atMost(w, d), "EqualJitter Wait(%d) = %v, want within [%v, %v]", n, w, d/2, d)
	case j == retry.DecorrelatedJitter:
		require.True(t, atLeast(w, e.base), "DecorrelatedJitter Wait(%d) = %v, want within [%v, %v]", n, w, e.base, e.maxDelay)
	default: // BandJitter(spread)
		require.True(t, isBand(j), "unexpected Jitter %v", j)
		lo := time.Duration(float64(d) * (1 - spread))
		require.True(t, atLeast(w, lo), "%v Wait(%d) = %v, want at least %v", j, n, w, lo)
		if up := float64(d) * (1 + spread); up < float64(e.maxDelay) {
			require.True(t, atMost(w, time.Duration(up)), "%v Wait(%d) = %v, want at most %v", j, n, w, time.Duration(up))
		}
	}
}

// fuzzCalls bounds the calls of a fuzzed Do: op turns permanent at this call,
// so that a policy with no attempt limit and tiny waits still ends soon.
const fuzzCalls = 4

// checkDoWaits runs Do on the fake clock with an op that always fails and
// checks that it sleeps only waits within [0, MaxBackoff], as many as it
// retries, within MaxElapsed.
func checkDoWaits(t *testing.T, p retry.Policy, e effective) {
	t.Helper()
	var announced []time.Duration
	p.OnRetry = func(_ context.Context, _ retry.Attempt, wait time.Duration) { announced = append(announced, wait) }
	calls := 0
	op := func(context.Context) error {
		calls++
		if calls == fuzzCalls {
			return retry.Permanent(errBadRequest)
		}
		return errUnavailable
	}
	clk := retrytest.NewClock()
	p.Clock = clk
	start := clk.Now()
	tr, err := retrytest.Do(context.Background(), op, p)
	require.Error(t, err)

	limit := fuzzCalls
	if e.attempts > 0 {
		limit = min(limit, e.attempts)
	}
	if p.MaxElapsed == 0 {
		require.Equal(t, limit, calls, "calls under %+v", p)
	} else {
		require.LessOrEqual(t, calls, limit, "calls under %+v", p)
	}
	require.Equal(t, calls, tr.Attempts(), "Trace.Attempts()")
	delays := tr.Waits()
	require.Len(t, delays, calls-1, "Trace.Waits() = %v after %d calls", delays, calls)
	require.Equal(t, announced, delays, "Trace.Waits() = %v, OnRetry saw %v", delays, announced)
	var slept time.Duration
	for i, d := range delays {
		require.True(t, d >= 0 && d <= e.maxDelay, "wait %d = %v, want within [0, %v] for %+v", i+1, d, e.maxDelay, p)
		slept = addSat(slept, d)
	}
	require.Equal(t, slept, clk.Now().Sub(start), "the fake clock moved by the waits and nothing else")
	if p.MaxElapsed > 0 {
		require.Less(t, slept, p.MaxElapsed, "waits %v pass MaxElapsed %v", delays, p.MaxElapsed)
	}
	if calls < limit {
		require.ErrorIs(t, err, retry.ErrDeadline, "Do stopped early after %d calls", calls)
	}
}

// addSat is a + b for non-negative durations, saturating like Do's.
func addSat(a, b time.Duration) time.Duration {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// FuzzClassify builds an error tree from a small program of bytes and checks
// that DefaultClassifier decides on it exactly as its doc says, that Do acts
// on that decision, and that neither panics or calls Error on op's error.
func FuzzClassify(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{opLeaf, opPermanent, opLeaf, opJoin})
	f.Add([]byte{opLeaf, opRetryAfter, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 512 {
			t.Skip("long programs add nothing but time")
		}
		m, err := buildError(prog)
		want := m.decision()
		got := retry.DefaultClassifier(context.Background(), retry.Attempt{Err: err})
		require.Equal(t, want, got, "DefaultClassifier(%s)", m)

		p := retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: time.Second, Jitter: retry.NoJitter}
		checkDoDecides(t, err, m, want, p)
		p.MaxElapsed = time.Minute
		checkDoDecides(t, err, m, want, p)
	})
}

// checkDoDecides runs Do with an op that always returns err and checks that
// it stops or retries as the decision says, with the waits it implies. It
// runs in a synctest bubble, on the real clock's code path: the fake clock of
// retrytest sleeps a millisecond of real time per wait, which would slow the
// fuzzer a hundredfold.
func checkDoDecides(t *testing.T, opErr error, m *errNode, d retry.Decision, p retry.Policy) {
	t.Helper()
	var tr retry.Trace
	var err error
	calls := 0
	synctest.Test(t, func(*testing.T) {
		op := func(context.Context) error { calls++; return opErr }
		tr, err = retry.Do(context.Background(), op, p)
	})

	// Rendering the Trace must not touch op's error either.
	_ = tr.String()
	slog.New(slog.NewTextHandler(io.Discard, nil)).Info("done", "trace", tr)

	switch {
	case m == nil:
		require.True(t, err == nil, "Do with a nil error failed")
		require.Equal(t, 1, calls)
		require.Equal(t, retry.StopSuccess, tr.Stop())
		return
	case !d.Retry:
		require.Equal(t, 1, calls, "Do retried %s, which DefaultClassifier will not retry", m)
		require.True(t, sameError(err, opErr), "Do must return a non-retryable error as it is: %s", m)
		require.Equal(t, retry.StopNotRetryable, tr.Stop())
		require.Equal(t, d.Reason, tr.Last().Reason)
		require.Empty(t, tr.Waits())
		return
	}

	// Waits are After plus NoJitter's 1ms, then 2ms; each must fit MaxElapsed.
	var want []time.Duration
	var slept time.Duration
	for _, step := range []time.Duration{time.Millisecond, 2 * time.Millisecond} {
		w := addSat(d.RetryAfter, step)
		if p.MaxElapsed > 0 && addSat(slept, w) >= p.MaxElapsed {
			break
		}
		want = append(want, w)
		slept += w
	}
	require.Equal(t, len(want)+1, calls, "calls for %s under %+v", m, p)
	require.Equal(t, want, tr.Waits(), "Trace.Waits() for %s", m)
	require.True(t, errors.Is(err, opErr) || !reflect.TypeOf(opErr).Comparable(), "Do's error must match op's")
	if calls == p.MaxAttempts {
		require.True(t, errors.Is(err, retry.ErrExhausted), "Do stopped after %d calls without ErrExhausted", calls)
	} else {
		require.True(t, errors.Is(err, retry.ErrDeadline), "Do stopped after %d calls without ErrDeadline", calls)
	}
}

// sameError reports whether a and b are the same error value, without ==
// on a type that is not comparable and without calling Error.
func sameError(a, b error) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) {
		return false
	}
	if reflect.TypeOf(a).Comparable() {
		return a == b
	}
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() // slices: same backing array
}

// The instructions of buildError's programs, one byte each (taken modulo
// opCount). The stack starts empty; popping an empty stack gives nil.
const (
	opNil        = iota // push nil
	opLeaf              // push a new plain error
	opWrap              // push fmt.Errorf("…: %w", pop)
	opJoin              // push errors.Join(pop, pop)
	opPermanent         // push retry.Permanent(pop)
	opRetryAfter        // push retry.RetryAfter(pop, d), d from the next 8 bytes
	opTypedNil          // push a typed-nil *nilSafeError
	opPanicky           // push an error whose Error panics
	opCanceled          // push context.Canceled
	opDeadline          // push context.DeadlineExceeded
	opNilSafe           // push &nilSafeError{pop}, whose Error panics on a nil inner error
	opMulti             // push multiError{pop, pop}: an uncomparable Unwrap() []error that may hold nils
	opCount
)

// errNode models the tree buildError makes, so that the expected decision is
// computed without the code under test.
type errNode struct {
	kind  int
	after time.Duration // for opRetryAfter
	kids  []*errNode    // nil entries stand for nil errors in multiError
}

func (n *errNode) String() string {
	if n == nil {
		return "nil"
	}
	name := [...]string{"nil", "leaf", "wrap", "join", "permanent", "retryAfter", "typedNil", "panicky", "canceled", "deadline", "nilSafe", "multi"}[n.kind]
	if n.kind == opRetryAfter {
		name += "(" + n.after.String() + ")"
	}
	if len(n.kids) == 0 {
		return name
	}
	kids := make([]string, len(n.kids))
	for i, k := range n.kids {
		kids[i] = k.String()
	}
	return name + "[" + strings.Join(kids, " ") + "]"
}

// walk visits the tree in the order errors.As does: a node, then its kids in
// order, depth first.
func (n *errNode) walk(visit func(*errNode) bool) bool {
	if n == nil {
		return true
	}
	if !visit(n) {
		return false
	}
	for _, k := range n.kids {
		if !k.walk(visit) {
			return false
		}
	}
	return true
}

func (n *errNode) has(kind int) bool {
	return !n.walk(func(x *errNode) bool { return x.kind != kind })
}

// decision is DefaultClassifier's doc applied to the model.
func (n *errNode) decision() retry.Decision {
	switch {
	case n == nil:
		return retry.Decision{Reason: "ok"}
	case n.has(opPermanent):
		return retry.Decision{Reason: "permanent"}
	case n.has(opCanceled):
		return retry.Decision{Reason: "canceled"}
	case n.has(opDeadline):
		return retry.Decision{Retry: true, Reason: "attempt timed out"}
	}
	var ra *errNode
	n.walk(func(x *errNode) bool {
		if x.kind == opRetryAfter {
			ra = x
			return false
		}
		return true
	})
	if ra != nil {
		return retry.Decision{Retry: true, RetryAfter: ra.after, Reason: "retry after"}
	}
	return retry.Decision{Retry: true, Reason: n.typeReason()}
}

// typeReason is the Reason DefaultClassifier gives an error it knows nothing
// of: the type of the innermost error down the chain of single Unwraps, but
// "error" for the types of errors.New, fmt.Errorf and errors.Join.
func (n *errNode) typeReason() string {
	for (n.kind == opWrap || n.kind == opNilSafe) && len(n.kids) > 0 {
		n = n.kids[0]
	}
	switch n.kind {
	case opTypedNil, opNilSafe:
		return "*retry_test.nilSafeError"
	case opPanicky:
		return "retry_test.panickyError"
	case opMulti:
		return "retry_test.multiError"
	}
	return "error" // leaf (errors.New), wrap (fmt.Errorf), join
}

func buildError(prog []byte) (*errNode, error) {
	type item struct {
		err error
		m   *errNode
	}
	var stack []item
	pop := func() item {
		if len(stack) == 0 {
			return item{}
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return it
	}
	push := func(err error, m *errNode) { stack = append(stack, item{err, m}) }
	for i := 0; i < len(prog); i++ {
		switch int(prog[i]) % opCount {
		case opNil:
			push(nil, nil)
		case opLeaf:
			push(fmt.Errorf("leaf %d", i), &errNode{kind: opLeaf})
		case opWrap:
			x := pop()
			err := fmt.Errorf("wrap %d: %w", i, x.err) // fmt recovers a panicking Error
			m := &errNode{kind: opWrap}
			if x.m != nil {
				m.kids = []*errNode{x.m}
			}
			push(err, m)
		case opJoin:
			a, b := pop(), pop()
			err := errors.Join(a.err, b.err)
			if err == nil {
				push(nil, nil)
				break
			}
			m := &errNode{kind: opJoin}
			for _, k := range []*errNode{a.m, b.m} {
				if k != nil { // Join drops nils
					m.kids = append(m.kids, k)
				}
			}
			push(err, m)
		case opPermanent:
			x := pop()
			if x.m == nil {
				push(retry.Permanent(nil), nil)
				break
			}
			push(retry.Permanent(x.err), &errNode{kind: opPermanent, kids: []*errNode{x.m}})
		case opRetryAfter:
			var b [8]byte
			i += copy(b[:], prog[min(i+1, len(prog)):])
			d := time.Duration(binary.BigEndian.Uint64(b[:]))
			x := pop()
			if x.m == nil {
				push(retry.RetryAfter(nil, d), nil)
				break
			}
			push(retry.RetryAfter(x.err, d), &errNode{kind: opRetryAfter, after: max(d, 0), kids: []*errNode{x.m}})
		case opTypedNil:
			push((*nilSafeError)(nil), &errNode{kind: opTypedNil})
		case opPanicky:
			push(panickyError{}, &errNode{kind: opPanicky})
		case opCanceled:
			push(context.Canceled, &errNode{kind: opCanceled})
		case opDeadline:
			push(context.DeadlineExceeded, &errNode{kind: opDeadline})
		case opNilSafe:
			x := pop()
			m := &errNode{kind: opNilSafe}
			if x.m != nil {
				m.kids = []*errNode{x.m}
			}
			push(&nilSafeError{x.err}, m)
		case opMulti:
			a, b := pop(), pop()
			push(multiError{a.err, b.err}, &errNode{kind: opMulti, kids: []*errNode{a.m, b.m}})
		}
	}
	x := pop()
	return x.m, x.err
}

// nilSafeError unwraps safely from a nil receiver, but its Error dereferences
// it: a library that calls Error on a typed nil panics.
type nilSafeError struct{ err error }

func (e *nilSafeError) Error() string { return "nil-safe: " + e.err.Error() }
func (e *nilSafeError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.err
}

// multiError is an uncomparable error with several causes, some maybe nil.
type multiError []error

func (e multiError) Error() string   { return fmt.Sprint([]error(e)) }
func (e multiError) Unwrap() []error { return e }
