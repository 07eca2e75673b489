package browsertest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retrytest"
)

// watchdog bounds each browser step; it is never reached when all works.
const watchdog = 30 * time.Second

// chromium returns the browser's path, or skips the test without one,
// unless CI=true, where a missing browser fails it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true and no Chromium: apt-get install chromium (.ci/run does)")
	}
	t.Skip("no Chromium on PATH or at /usr/bin/chromium: skipped (apt-get install chromium to run it; CI=true fails instead)")
	return ""
}

// browser starts headless Chromium and returns a context that drives a tab
// of it. The browser is closed, and its process reaped, when the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // CI runs as root in a container
		chromedp.DisableGPU,
		// With the defaults' disable-background-networking, these keep
		// Chromium from calling home, which a closed network refuses.
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(960, 540),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // kills the browser and waits for it
	})
	// Start the browser on this ctx: the first run on a ctx ties the browser
	// to it, and each step below runs on a child of it with a timeout.
	require.NoError(t, chromedp.Do(ctx))
	return ctx
}

// do runs actions within the watchdog.
func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, watchdog)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression in the page, from the DevTools
// side: the page itself runs no script.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, watchdog)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// serve mounts rec on a loopback server, as a service mounts it on an
// internal listener, and returns the page's URL.
func serve(t *testing.T, rec *retrydebug.Recorder) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/debug/retries", rec)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/debug/retries"
}

// rowJS is a JavaScript expression for the operations-table row of name.
func rowJS(name string) string {
	return `[...document.querySelectorAll("tr.op")].find(tr => tr.querySelector("td.name").innerText === ` + strconv.Quote(name) + `)`
}

// cells returns the text of each cell of the operations-table row of name,
// as the browser renders it.
func cells(t *testing.T, ctx context.Context, name string) []string {
	t.Helper()
	return eval[[]string](t, ctx, `[...`+rowJS(name)+`.cells].map(td => td.innerText)`)
}

// reddish reports whether a CSS colour, "rgb(r, g, b)" or "rgba(r, g, b,
// a)", is visibly red: opaque, with far more red than green and blue.
func reddish(t *testing.T, color string) bool {
	t.Helper()
	inner := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(color, "rgba("), "rgb("), ")")
	parts := strings.Split(inner, ",")
	require.GreaterOrEqual(t, len(parts), 3, color)
	var c [4]float64
	c[3] = 1
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		require.NoError(t, err, color)
		c[i] = v
	}
	return c[3] > 0.5 && c[0] > c[1]+20 && c[0] > c[2]+20
}

// A person sees the operations and their totals, follows a link to the
// calls of one, sees the calls that gave up in red and the waits of each
// as bars, and sees the page refresh itself.
func TestPanelInBrowser(t *testing.T) {
	ctx := browser(t)
	rec := retrydebug.NewRecorder(0, 0)
	workload(t, rec)
	url := serve(t, rec)

	// The operations table: names and totals.
	do(t, ctx, chromedp.Navigate(url+"?refresh=0"), chromedp.WaitVisible(chromedp.CSS("table.ops")))
	assert.Equal(t, "retries", eval[string](t, ctx, `document.title`))
	assert.Equal(t, []string{"GET /users/{id}/orders", "GET http://api.example", "inventory.get", "payments.charge"},
		eval[[]string](t, ctx, `[...document.querySelectorAll("tr.op td.name")].map(td => td.innerText)`),
		"requests are named by route, or by method and origin: no path, no id, no query")
	inv := cells(t, ctx, "inventory.get")
	require.Len(t, inv, 11)
	assert.Equal(t, strconv.Itoa(inventoryCalls), inv[1], "calls")
	assert.Equal(t, strconv.Itoa(inventoryAttempts), inv[2], "attempts")
	assert.Equal(t, "1.20", inv[3], "retries per call")
	assert.Equal(t, strconv.Itoa(inventoryGaveUp), inv[4], "gave up")
	assert.Equal(t, "0", inv[5], "served stale")
	assert.Equal(t, "ok 8 · attempts exhausted 2", inv[10])
	assert.Equal(t, "2", cells(t, ctx, "payments.charge")[4])
	assert.Contains(t, cells(t, ctx, "payments.charge")[10], "retry budget exhausted 2")
	assert.Equal(t, "0", cells(t, ctx, "GET /users/{id}/orders")[4])
	assert.True(t, reddish(t, eval[string](t, ctx, `getComputedStyle(`+rowJS("inventory.get")+`.cells[4]).color`)),
		"a count of calls that gave up is red")
	assert.False(t, reddish(t, eval[string](t, ctx, `getComputedStyle(`+rowJS("GET /users/{id}/orders")+`.cells[4]).color`)),
		"a zero is not")
	assert.Equal(t, strconv.FormatFloat(rec.Snapshot().Budgets[0].Tokens, 'f', 1, 64),
		eval[string](t, ctx, `document.querySelector("table.budgets td.num").innerText`))
	assert.NotContains(t, eval[string](t, ctx, `document.body.innerText`), "not-shown", "no query value on the page")

	// Follow the link to the calls of inventory.get.
	do(t, ctx, chromedp.Click(chromedp.Search(`//a[text()="inventory.get"]`)), chromedp.WaitVisible(chromedp.CSS("table.calls")))
	assert.Equal(t, "inventory.get", eval[string](t, ctx, `document.querySelector("h1").innerText`))
	assert.Equal(t, inventoryCalls, eval[int](t, ctx, `document.querySelectorAll("tr.call").length`))
	red := eval[[]string](t, ctx, `[...document.querySelectorAll("tr.call.gaveup")].map(tr => getComputedStyle(tr.cells[0]).backgroundColor)`)
	require.Len(t, red, inventoryGaveUp)
	for _, bg := range red {
		assert.True(t, reddish(t, bg), "a call that gave up is on red: %s", bg)
	}
	for _, bg := range eval[[]string](t, ctx, `[...document.querySelectorAll("tr.call:not(.gaveup)")].map(tr => getComputedStyle(tr.cells[0]).backgroundColor)`) {
		assert.False(t, reddish(t, bg), "a call that did not give up is not: %s", bg)
	}

	// The bar strips: one bar per wait, as wide as the wait is long on the
	// page's scale, the longest 160px; one mark per attempt.
	widths := eval[[]float64](t, ctx, `[...document.querySelectorAll("tr.call .strip .wait")].map(e => e.getBoundingClientRect().width)`)
	require.Len(t, widths, inventoryWaits)
	longest := 0.0
	for _, w := range widths {
		assert.GreaterOrEqual(t, w, 2.0, "every wait is visible")
		longest = max(longest, w)
	}
	assert.InDelta(t, 160, longest, 0.5)
	assert.Equal(t, []string{"4 marks, 4 attempts", "4 marks, 4 attempts"}, eval[[]string](t, ctx,
		`[...document.querySelectorAll("tr.call.gaveup")].map(tr => tr.querySelectorAll(".strip .att.fail").length + " marks, " + tr.cells[1].innerText + " attempts")`))
	// The waits in numbers: as many as the Recorder kept, newest call first.
	waits := eval[[]string](t, ctx, `[...document.querySelectorAll("tr.call td.waits")].map(td => td.innerText)`)
	op := rec.Snapshot().Operations[2]
	require.Equal(t, "inventory.get", op.Name)
	require.Len(t, waits, len(op.Recent))
	for i, c := range op.Recent {
		assert.Len(t, strings.Fields(waits[i]), len(c.Waits), "call %d: %q", i, waits[i])
	}

	screenshot(t, ctx)

	// The page refreshes itself: a call recorded after it loaded appears
	// without the test reloading it.
	do(t, ctx, chromedp.Navigate(url+"?refresh=1"), chromedp.WaitVisible(chromedp.CSS("table.ops")))
	require.Equal(t, strconv.Itoa(inventoryCalls), cells(t, ctx, "inventory.get")[1])
	tr, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
	rec.Record("inventory.get", tr)
	deadline := time.Now().Add(watchdog)
	for {
		calls, err := chromedp.Run(ctx, chromedp.Evaluate[string](rowJS("inventory.get")+`.cells[1].innerText`))
		if err == nil && calls == strconv.Itoa(inventoryCalls+1) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the page never refreshed: calls %q, %v", calls, err)
		time.Sleep(100 * time.Millisecond) // the page reloads itself every second
	}
}

// screenshot takes a PNG of the page, to RETRYDEBUG_SCREENSHOT if set.
func screenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, watchdog)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.Greater(t, len(png), 1000)
	path := os.Getenv("RETRYDEBUG_SCREENSHOT")
	if path == "" {
		path = t.TempDir() + "/retrydebug.png"
	}
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}
