package retrydebug

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// Refresh settings of the page, in seconds.
const (
	defaultRefresh = 5
	maxRefresh     = 3600
)

// ServeHTTP shows what r holds: mount it as net/http/pprof's and expvar's
// handlers are mounted, on an internal listener, never on the one that
// serves users, since operation names and traffic patterns tell an
// attacker much:
//
//	mux.Handle("/debug/retries", rec)
//
// The page lists the operations with their totals; each links to a page of
// its last calls (?op=name; ?other=1 for the overflow bucket), where each
// call shows its attempts and waits as a strip of marks and bars, its waits
// in numbers, its elapsed time and how it ended, with the calls that gave
// up in red. The pages are plain HTML from html/template, with no script
// and nothing loaded from elsewhere, so they work on an air-gapped host;
// they refresh themselves every 5 seconds (?refresh=N sets another period,
// ?refresh=0 none). ?format=json returns the [Snapshot], or with ?op= the
// [Operation], as JSON.
//
// Nothing shown comes from an error's message, a header or a query: only
// operation names, numbers, stop reasons, HTTP statuses, gRPC codes and
// the Trace's short fixed reasons. It answers GET and HEAD only.
func (r *Recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := req.URL.Query()
	var one *operation
	if q.Has("op") || q.Has("other") {
		if one = r.lookup(q.Get("op"), q.Get("other") != ""); one == nil {
			http.Error(w, "no such operation", http.StatusNotFound)
			return
		}
	}

	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	var body bytes.Buffer
	if q.Get("format") == "json" {
		enc := json.NewEncoder(&body)
		enc.SetIndent("", "  ")
		var err error
		if one != nil {
			err = enc.Encode(one.snapshot(true))
		} else {
			err = enc.Encode(r.Snapshot())
		}
		if err != nil {
			http.Error(w, "encoding failed", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(body.Bytes())
		return
	}

	refresh, refreshParam := defaultRefresh, q.Get("refresh")
	if n, err := strconv.Atoi(refreshParam); err == nil {
		refresh = min(max(n, 0), maxRefresh)
		refreshParam = strconv.Itoa(refresh)
	} else {
		refreshParam = ""
	}
	p := page{Refresh: refresh, JSONHref: "?format=json"}
	if one != nil {
		o := one.snapshot(true)
		p.JSONHref = href(o, "", "format", "json")
		p.Rows = []opRow{newRow(o, refreshParam)}
		p.Op = newOpPage(o)
	} else {
		for _, op := range r.operations() {
			p.Rows = append(p.Rows, newRow(op.snapshot(false), refreshParam))
		}
		p.Budgets = r.budgetTokens()
		p.Breakers, p.Throttles = r.breakerStatuses(), r.throttleStatuses()
		p.Config, p.HasConfig = r.configVersionNow()
		for _, route := range r.idempotencyRoutes() {
			p.Idem = append(p.Idem, newIdemRow(route))
		}
		p.Outboxes = newOutboxRows(r.outboxOps())
		p.Shed = newShedRows(r.shedStatuses())
		p.Chaos = newChaosRows(r.chaosSwitches())
	}
	if err := pageTemplate.Execute(&body, p); err != nil {
		http.Error(w, "rendering failed", http.StatusInternalServerError)
		return
	}
	// No script runs and nothing loads from elsewhere: say so to the
	// browser too, so that an escaping bug could not be turned into one.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body.Bytes())
}
