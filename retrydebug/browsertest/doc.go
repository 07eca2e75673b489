// Package browsertest tests package retrydebug's page in a real browser:
// headless Chromium, driven through the DevTools protocol by chromedp,
// against the handler on loopback, with a workload of successes, retries
// and give-ups. It checks what a person sees: the totals, the calls that
// gave up in red, the bar strips of the waits, and the page refreshing
// itself.
//
// It is a module of its own so that chromedp stays out of the library's
// dependencies. The test looks for Chromium as "chromium" on PATH or at
// /usr/bin/chromium; without it the test is skipped, unless the
// environment has CI=true, where a missing browser is a failure.
//
//	cd retrydebug/browsertest && go test ./...
//
// With RETRYDEBUG_SCREENSHOT=path it writes a screenshot of an operation's
// page there; docs/retrydebug.png is one:
//
//	RETRYDEBUG_SCREENSHOT=$PWD/../../docs/retrydebug.png go test ./...
package browsertest
