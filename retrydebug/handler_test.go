package retrydebug_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stormguard/retry/retrydebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// workload records successes, retries and give-ups under two names.
func workload(t *testing.T) *retrydebug.Recorder {
	t.Helper()
	rec := retrydebug.NewRecorder(0, 0)
	for range 4 {
		rec.Record("inventory.get", succeeded(t))
	}
	rec.Record("inventory.get", retried(t, 3))
	rec.Record("inventory.get", exhausted(t, 4))
	rec.Record("inventory.get", exhausted(t, 2))
	rec.Record("inventory.get", notRetried(t))
	rec.Record("payments.charge", succeeded(t))
	return rec
}

// rows returns the <tr> elements of body whose class attribute starts with
// class.
func rows(body, class string) []string {
	return regexp.MustCompile(`<tr class="`+regexp.QuoteMeta(class)+`[^"]*">.*?</tr>`).FindAllString(body, -1)
}

// The index lists each operation with its totals and a link to its calls.
func TestIndexShowsOperations(t *testing.T) {
	t.Parallel()
	resp, body := get(t, workload(t), "/debug/retries")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))

	ops := rows(body, "op")
	require.Len(t, ops, 2)
	inv := ops[0]
	assert.Contains(t, inv, `<a href="?op=inventory.get">inventory.get</a>`)
	assert.Contains(t, inv, `<td class="num calls">8</td>`)
	assert.Contains(t, inv, `<td class="num attempts">`+strconv.Itoa(4+4+4+2+1)+`</td>`)
	assert.Contains(t, inv, `<td class="num gaveup bad">2</td>`, "give-ups stand out")
	assert.Contains(t, inv, "0: 5 · 1: 1 · 3: 2", "retries per call")
	assert.Contains(t, inv, "ok 5 · not retried 1 · attempts exhausted 2")
	assert.Contains(t, ops[1], `<td class="num gaveup">0</td>`)
	assert.Contains(t, body, `href="?format=json"`)
}

// An operation's page lists its calls, newest first, those that gave up in
// red, each with a strip of its attempts and waits drawn to scale.
func TestOperationPageShowsCalls(t *testing.T) {
	t.Parallel()
	resp, body := get(t, workload(t), "/debug/retries?op=inventory.get")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	calls := rows(body, "call")
	require.Len(t, calls, 8)
	assert.Len(t, rows(body, "call gaveup"), 2)
	assert.Len(t, rows(body, "call failed"), 1, "a permanent error is a failure, not a give-up")
	assert.Len(t, rows(body, "call ok"), 5)

	// Newest first: the permanent error, then the two exhaustions.
	assert.Contains(t, calls[0], "not retried · permanent")
	assert.Contains(t, calls[1], `class="call gaveup"`)
	assert.Contains(t, calls[1], "attempts exhausted")
	assert.Contains(t, calls[1], `<td class="text num waits">200ms</td>`)
	exhausted4 := calls[2]
	assert.Contains(t, exhausted4, `<td class="text num waits">200ms 400ms 800ms</td>`)
	assert.Contains(t, exhausted4, `<td class="num elapsed">1.4s</td>`)
	assert.Equal(t, 4, strings.Count(exhausted4, `<span class="att fail"`), "four failed attempts")
	widths := regexp.MustCompile(`class="wait" style="width: (\d+)px"`).FindAllStringSubmatch(exhausted4, -1)
	require.Len(t, widths, 3)
	assert.Equal(t, []string{"40", "80", "160"}, []string{widths[0][1], widths[1][1], widths[2][1]}, "bars to scale, the longest wait on the page the widest")

	retried3 := calls[3]
	assert.Contains(t, retried3, `class="call ok"`)
	assert.Equal(t, 3, strings.Count(retried3, `<span class="att fail"`))
	assert.Equal(t, 1, strings.Count(retried3, `<span class="att ok"`), "the last attempt succeeded")
	assert.Contains(t, calls[7], `<span class="att ok" title="attempt 1"></span></span>`, "a first success is one mark, no bar")
	assert.Contains(t, body, `href="?format=json&amp;op=inventory.get"`)
}

// The page refreshes itself, every 5 seconds unless told otherwise.
func TestPageRefreshes(t *testing.T) {
	t.Parallel()
	rec := workload(t)
	for _, c := range []struct{ query, want string }{
		{"", `<meta http-equiv="refresh" content="5">`},
		{"?refresh=30", `<meta http-equiv="refresh" content="30">`},
		{"?refresh=99999", `<meta http-equiv="refresh" content="3600">`},
		{"?refresh=-3", ""},
		{"?refresh=0", ""},
		{"?refresh=soon", `<meta http-equiv="refresh" content="5">`},
		{"?op=inventory.get&refresh=2", `<meta http-equiv="refresh" content="2">`},
	} {
		_, body := get(t, rec, "/debug/retries"+c.query)
		if c.want == "" {
			assert.NotContains(t, body, `http-equiv="refresh"`, c.query)
		} else {
			assert.Contains(t, body, c.want, c.query)
		}
	}
	_, body := get(t, rec, "/debug/retries?refresh=2")
	assert.Contains(t, body, `href="?op=inventory.get&amp;refresh=2"`, "links keep the refresh setting")
}

// The page loads nothing from elsewhere and runs no script, and says so to
// the browser.
func TestPageIsSelfContained(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"/debug/retries", "/debug/retries?op=inventory.get"} {
		resp, body := get(t, workload(t), target)
		csp := resp.Header.Get("Content-Security-Policy")
		assert.Contains(t, csp, "default-src 'none'", target)
		assert.NotContains(t, csp, "script-src", target)
		assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
		assert.NotContains(t, body, "<script", target)
		assert.NotRegexp(t, `(src|href)="(https?:)?//`, body, target)
		assert.NotContains(t, body, "@import", target)
	}
}

// Names are escaped wherever they land: text, attributes, links.
func TestPageEscapesHostileNames(t *testing.T) {
	t.Parallel()
	const hostile = `<script>alert(1)</script>"onmouseover="x'&`
	rec := retrydebug.NewRecorder(0, 0)
	rec.Record(hostile, exhausted(t, 2))
	rec.Record("javascript:alert(1)", succeeded(t))
	rec.Budget(`<img src=x onerror=alert(1)>`, nil)
	for _, target := range []string{"/debug/retries", "/debug/retries?op=" + urlQuery(hostile)} {
		resp, body := get(t, rec, target)
		require.Equal(t, http.StatusOK, resp.StatusCode, target)
		assert.NotContains(t, body, "<script>", target)
		assert.NotContains(t, body, `"onmouseover="`, target)
		assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", target)
	}
	_, body := get(t, rec, "/debug/retries")
	assert.Contains(t, body, `href="?op=%3Cscript%3Ealert%281%29%3C%2Fscript%3E%22onmouseover%3D%22x%27%26"`)
	assert.Contains(t, body, `href="?op=javascript%3Aalert%281%29"`, "a name is a query value, never a URL")

	resp, body := get(t, rec, "/debug/retries?format=json")
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.NotContains(t, body, "<script>")
	var s retrydebug.Snapshot
	require.NoError(t, json.Unmarshal([]byte(body), &s))
	assert.Equal(t, hostile, s.Operations[0].Name, "the JSON escapes, and keeps the name")
}

// ?format=json returns the Snapshot, or one Operation, in a stable shape.
func TestJSONShape(t *testing.T) {
	t.Parallel()
	rec := workload(t)
	_, body := get(t, rec, "/debug/retries?format=json")
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	assert.ElementsMatch(t, []string{"operations", "budgets", "idempotency"}, keys(doc))
	ops := doc["operations"].([]any)
	require.Len(t, ops, 2)
	inv := ops[0].(map[string]any)
	assert.ElementsMatch(t, []string{"name", "other", "calls", "attempts", "retries", "retries_per_call", "stops", "gave_up", "stale", "elapsed_ns", "recent"}, keys(inv))
	assert.Equal(t, "inventory.get", inv["name"])
	assert.EqualValues(t, 8, inv["calls"])
	assert.EqualValues(t, 2, inv["gave_up"])
	assert.Equal(t, map[string]any{"ok": 5.0, "not retried": 1.0, "attempts exhausted": 2.0}, inv["stops"])
	assert.ElementsMatch(t, []string{"p50", "p95", "p99", "max"}, keys(inv["elapsed_ns"].(map[string]any)))
	recent := inv["recent"].([]any)
	require.Len(t, recent, 8)
	gaveUp := recent[2].(map[string]any)
	assert.ElementsMatch(t, []string{"time", "name", "attempts", "waits_ns", "waits_truncated", "elapsed_ns", "stop", "gave_up", "reason"}, keys(gaveUp))
	assert.Equal(t, []any{2e8, 4e8, 8e8}, gaveUp["waits_ns"])
	assert.EqualValues(t, 1.4e9, gaveUp["elapsed_ns"])
	assert.Equal(t, true, gaveUp["gave_up"])
	assert.Equal(t, []any{}, recent[7].(map[string]any)["waits_ns"], "no waits is an empty list, not null")

	_, body = get(t, rec, "/debug/retries?op=payments.charge&format=json")
	var op retrydebug.Operation
	require.NoError(t, json.Unmarshal([]byte(body), &op))
	assert.Equal(t, "payments.charge", op.Name)
	assert.EqualValues(t, 1, op.Calls)
}

// The overflow bucket has a page of its own, apart from any operation of
// the same name.
func TestOverflowPage(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 1)
	rec.Record("(other operations)", succeeded(t))
	rec.Record("b", exhausted(t, 2))
	_, body := get(t, rec, "/debug/retries")
	assert.Contains(t, body, `href="?other=1"`)
	_, body = get(t, rec, "/debug/retries?other=1")
	calls := rows(body, "call")
	require.Len(t, calls, 1)
	assert.Contains(t, calls[0], `<td class="name">b</td>`, "overflow calls show their own names")
	_, body = get(t, rec, "/debug/retries?op=(other+operations)")
	assert.Len(t, rows(body, "call ok"), 1)
}

// Unknown operations are 404, methods other than GET and HEAD 405, and an
// empty Recorder says it has nothing yet.
func TestHandlerEdges(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	resp, body := get(t, rec, "/debug/retries")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "No calls yet.")
	resp, _ = get(t, rec, "/debug/retries?op=nope")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, _ = get(t, rec, "/debug/retries?other=1")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "no overflow yet")

	w := httptest.NewRecorder()
	rec.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/debug/retries", nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))

	w = httptest.NewRecorder()
	rec.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "/debug/retries", nil))
	assert.Equal(t, http.StatusOK, w.Code)
}

// Error text never reaches the page or the JSON: only the Trace's fixed
// reasons do.
func TestPageShowsNoErrorText(t *testing.T) {
	t.Parallel()
	rec := workload(t) // its failures' errors carry the secret
	for _, target := range []string{"/debug/retries", "/debug/retries?op=inventory.get", "/debug/retries?format=json"} {
		_, body := get(t, rec, target)
		assert.NotContains(t, body, secret, target)
	}
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
