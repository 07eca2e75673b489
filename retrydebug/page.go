package retrydebug

import (
	_ "embed"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
)

//go:embed page.html
var pageHTML string

// pageTemplate is parsed once; html/template escapes every name and text in
// the context it lands in (element, attribute, URL, CSS).
var pageTemplate = template.Must(template.New("page").Parse(pageHTML))

// maxBar is the width in CSS pixels of the longest wait on a page; the
// others are drawn to the same scale, so that the bars of one page compare.
const maxBar = 160

// page is what the template shows: the operations table, or one operation
// and its calls.
type page struct {
	Refresh   int
	JSONHref  string
	Rows      []opRow
	Op        *opPage
	Budgets   []BudgetTokens
	Breakers  []BreakerStatus
	Throttles []ThrottleStatus
	Idem      []idemRow
	// Config is the version of the retry configuration in force, if one
	// is registered.
	Config    uint64
	HasConfig bool
	Outboxes  []outboxRow
	Shed      []shedRow
	Chaos     []chaosRow
}

// idemRow is a route's line in the idempotency table: the outcomes a
// service owner watches, each in a column, and the store's latency.
type idemRow struct {
	Route                                      string
	Requests, Executed, Replayed, InFlight     int64
	Mismatch, StoreFailed, LeaseLost, Released int64
	Rejected                                   int64
	StoreP50, StoreP95, StoreP99               string
}

func newIdemRow(r IdempotencyRoute) idemRow {
	o := r.Outcomes
	return idemRow{
		Route: r.Route, Requests: r.Requests,
		Executed: o[idempotency.OutcomeExecuted.String()], Replayed: o[idempotency.OutcomeReplayed.String()],
		InFlight: o[idempotency.OutcomeInFlight.String()], Mismatch: o[idempotency.OutcomeMismatch.String()],
		StoreFailed: o[idempotency.OutcomeStoreFailed.String()], LeaseLost: o[idempotency.OutcomeLeaseLost.String()],
		Released: o[idempotency.OutcomeReleased.String()], Rejected: o[idempotency.OutcomeRejected.String()],
		StoreP50: human(r.StoreTime.P50), StoreP95: human(r.StoreTime.P95), StoreP99: human(r.StoreTime.P99),
	}
}

type opRow struct {
	Name, Href              string
	Calls, Attempts, GaveUp int64
	Stale                   int64
	RetriesPerCall          string
	P50, P95, P99           string
	Histogram, Stops        string
}

type opPage struct {
	Name  string
	Other bool
	Calls []callRow
}

type callRow struct {
	Class                   string // "ok", "failed", or "gaveup": shown red
	Time, Name              string
	Attempts                int
	Strip                   []stripItem
	More                    bool
	Waits, Elapsed, Outcome string
}

// stripItem is a mark in a call's strip: an attempt, or the wait before one
// as a bar whose width is its length.
type stripItem struct {
	Attempt bool
	Class   string // of an attempt: "fail" or "ok"
	Width   int    // of a wait, in pixels
	Title   string
}

// href returns the link to an operation's page, keeping the refresh setting.
func href(o Operation, refresh string, extra ...string) string {
	v := url.Values{}
	if o.Other {
		v.Set("other", "1")
	} else {
		v.Set("op", o.Name)
	}
	if refresh != "" {
		v.Set("refresh", refresh)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	return "?" + v.Encode()
}

func newRow(o Operation, refresh string) opRow {
	row := opRow{
		Name: o.Name, Href: href(o, refresh),
		Calls: o.Calls, Attempts: o.Attempts, GaveUp: o.GaveUp, Stale: o.Stale,
		RetriesPerCall: "0",
		P50:            human(o.Elapsed.P50), P95: human(o.Elapsed.P95), P99: human(o.Elapsed.P99),
	}
	if o.Calls > 0 {
		row.RetriesPerCall = strconv.FormatFloat(float64(o.Retries)/float64(o.Calls), 'f', 2, 64)
	}
	var b strings.Builder
	for i, n := range o.RetriesPerCall {
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" · ")
		}
		plus := ""
		if i == len(o.RetriesPerCall)-1 {
			plus = "+"
		}
		fmt.Fprintf(&b, "%d%s: %d", i, plus, n)
	}
	row.Histogram = b.String()
	b.Reset()
	for s := range retry.StopReason(stopSlots) { // in the order of retry.StopReason
		if n := o.Stops[s.String()]; n > 0 {
			if b.Len() > 0 {
				b.WriteString(" · ")
			}
			fmt.Fprintf(&b, "%s %d", s, n)
		}
	}
	row.Stops = b.String()
	return row
}

func newOpPage(o Operation) *opPage {
	p := &opPage{Name: o.Name, Other: o.Other, Calls: make([]callRow, 0, len(o.Recent))}
	var longest time.Duration
	for _, c := range o.Recent {
		for _, w := range c.Waits {
			longest = max(longest, w)
		}
	}
	for _, c := range o.Recent {
		p.Calls = append(p.Calls, newCallRow(c, longest))
	}
	return p
}

func newCallRow(c Call, longest time.Duration) callRow {
	row := callRow{
		Class:    "ok",
		Time:     c.Time.Format("15:04:05.000"),
		Name:     c.Name,
		Attempts: c.Attempts,
		More:     c.WaitsTruncated,
		Elapsed:  human(c.Elapsed),
	}
	switch {
	case c.GaveUp:
		row.Class = "gaveup"
	case c.Stop != retry.StopSuccess.String():
		row.Class = "failed"
	}
	// One mark per attempt that has its wait shown, and the waits between.
	marks := min(c.Attempts, len(c.Waits)+1)
	waits := make([]string, 0, len(c.Waits))
	for n := 1; n <= marks; n++ {
		if n > 1 {
			w := c.Waits[n-2]
			waits = append(waits, human(w))
			width := 2
			if longest > 0 {
				width = max(width, int(int64(maxBar)*int64(w)/int64(longest)))
			}
			row.Strip = append(row.Strip, stripItem{Width: width, Title: "wait " + human(w) + " before attempt " + strconv.Itoa(n)})
		}
		class := "fail"
		if n == c.Attempts && c.Stop == retry.StopSuccess.String() {
			class = "ok"
		}
		row.Strip = append(row.Strip, stripItem{Attempt: true, Class: class, Title: "attempt " + strconv.Itoa(n)})
	}
	row.Waits = strings.Join(waits, " ")
	if c.WaitsTruncated {
		row.Waits += " …"
	}
	out := []string{c.Stop}
	if c.Status != 0 {
		out = append(out, "HTTP "+strconv.Itoa(c.Status))
	}
	if c.GRPCCode != "" {
		out = append(out, "gRPC "+c.GRPCCode)
	}
	if c.Reason != "" && c.Stop != retry.StopSuccess.String() && !strings.HasPrefix(c.Reason, strconv.Itoa(c.Status)+" ") {
		out = append(out, c.Reason)
	}
	row.Outcome = strings.Join(out, " · ")
	return row
}

// human rounds d to about three significant digits: 86.4ms → 86ms,
// 1.2437s → 1.24s.
func human(d time.Duration) string {
	switch {
	case d >= time.Second:
		d = d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Millisecond)
	case d >= time.Microsecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
