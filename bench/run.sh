#!/usr/bin/env bash
# run.sh runs the benchmark module: every benchmark with -benchmem, enough
# times for benchstat, then the cancellation latency test, then prints
# benchstat's summary and a check of stormguard's targets (issue 5).
#
# It needs only Go: the peers and benchstat come from the module proxy.
# About 2-3 minutes on 2 cores. Knobs, as environment variables:
#   COUNT      runs of each benchmark (default 10)
#   BENCHTIME  -benchtime of each run (default 100ms)
#   OUT        where the raw output goes (default bench/results/<UTC time>)
set -euo pipefail
cd "$(dirname "$0")"

COUNT=${COUNT:-10}
BENCHTIME=${BENCHTIME:-100ms}
OUT=${OUT:-results/$(date -u +%Y%m%dT%H%M%SZ)}
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
mkdir -p "$OUT"
benchstat() { go run "$BENCHSTAT" "$@"; }

SEQ='^Benchmark(FirstSuccess|ThreeFailures|RetryGrowth|HTTPGet|HTTPPut)$'
PAR='^Benchmark(FirstSuccessParallel|BudgetParallel|BudgetHealthyParallel)$'
start=$SECONDS
{
	echo "date:   $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "go:     $(go version)"
	echo "cpus:   $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')  load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
	echo "cmd:    go test -run='^\$' -bench='$SEQ' -benchmem -count=$COUNT -benchtime=$BENCHTIME ."
	echo "        go test -run='^\$' -bench='$PAR' -benchmem -count=$COUNT -benchtime=$BENCHTIME -cpu=1,2 ."
	echo "        go test -run='^TestCancelLatency\$' -count=1 -v ."
} | tee "$OUT/env.txt"

go test -run='^$' -bench="$SEQ" -benchmem -count="$COUNT" -benchtime="$BENCHTIME" . | tee "$OUT/bench.txt"
# The parallel scenarios run on 1 and on 2 cores, to show how they scale.
go test -run='^$' -bench="$PAR" -benchmem -count="$COUNT" -benchtime="$BENCHTIME" -cpu=1,2 . | tee -a "$OUT/bench.txt"
go test -run='^TestCancelLatency$' -count=1 -v . | tee "$OUT/cancel.txt"

echo
echo "==================== summary (benchstat: median ± 95% CI) ===================="
benchstat "$OUT/bench.txt" | tee "$OUT/summary.txt"
grep -A12 '^cancel latency' "$OUT/cancel.txt" | sed -n '1,/^is ctx/p' | tee -a "$OUT/summary.txt"

echo
echo "==================== stormguard targets (medians) ===================="
benchstat -format csv "$OUT/bench.txt" 2>/dev/null | awk -F, -v cancel="$OUT/cancel.txt" '
	# Collect median per unit and benchmark; names of the sequential
	# scenarios lose their -GOMAXPROCS suffix.
	/^,[^,]+,CI$/ { unit = $2; next }
	unit != "" && $1 ~ /\// {
		name = $1
		if (name !~ /Parallel/) sub(/-[0-9]+$/, "", name)
		v[unit, name] = $2
	}
	function ns(n) { return v["sec/op", n] * 1e9 }
	function fastest(scn, peers,   i, n, p, best) {
		n = split(peers, p, " ")
		best = ""
		for (i = 1; i <= n; i++)
			if ((("sec/op", scn "/" p[i]) in v) && (best == "" || ns(scn "/" p[i]) < ns(scn "/" best))) best = p[i]
		return best
	}
	function verdict(ok) { return ok ? "met" : "MISSED" }
	END {
		all = "cenkalti avast-v4 avast-v5 sethvargo failsafe"
		s = "FirstSuccess"; f = fastest(s, all)
		r = ns(s "/stormguard") / ns(s "/" f)
		printf "first success:  stormguard %.1f ns/op %d allocs/op; fastest peer %s %.1f ns/op; ratio %.2f (target < 0.20: %s); allocs <= 1: %s\n",
			ns(s "/stormguard"), v["allocs/op", s "/stormguard"], f, ns(s "/" f), r, verdict(r < 0.2), verdict(v["allocs/op", s "/stormguard"] <= 1)
		printf "                with context.Background: %.1f ns/op %d allocs/op\n", ns(s "/stormguard-bg"), v["allocs/op", s "/stormguard-bg"]
		f = fastest(s, "cenkalti avast-v4 avast-v5-new sethvargo failsafe")
		printf "                fastest peer with a per-call ctx: %s %.1f ns/op; ratio %.2f\n", f, ns(s "/" f), ns(s "/stormguard") / ns(s "/" f)
		s = "ThreeFailures"; f = fastest(s, all)
		printf "three failures: stormguard %.1f ns/op, timer armed %.1f ns/op; fastest peer %s %.1f ns/op; below every peer: %s, timer armed: %s\n",
			ns(s "/stormguard"), ns(s "/stormguard-timer"), f, ns(s "/" f),
			verdict(ns(s "/stormguard") < ns(s "/" f)), verdict(ns(s "/stormguard-timer") < ns(s "/" f))
		printf "retry allocs:   failures 0/1/3/7 -> %d/%d/%d/%d allocs/op (timer armed: %d/%d/%d/%d)\n",
			v["allocs/op", "RetryGrowth/failures=0/stormguard"], v["allocs/op", "RetryGrowth/failures=1/stormguard"],
			v["allocs/op", "RetryGrowth/failures=3/stormguard"], v["allocs/op", "RetryGrowth/failures=7/stormguard"],
			v["allocs/op", "RetryGrowth/failures=0/stormguard-timer"], v["allocs/op", "RetryGrowth/failures=1/stormguard-timer"],
			v["allocs/op", "RetryGrowth/failures=3/stormguard-timer"], v["allocs/op", "RetryGrowth/failures=7/stormguard-timer"]
		split("FirstSuccessParallel BudgetParallel BudgetHealthyParallel", ps, " ")
		for (i = 1; i <= 3; i++) {
			for (j = 1; j <= 2; j++) {
				s = ps[i] (j == 1 ? "/stormguard" : "/stormguard-bg")
				if ((("sec/op", s "-2") in v))
					printf "%-40s 1 core %5.1f ns/op, 2 cores %5.1f ns/op: speed-up %.2fx (ideal 2x)\n", s ":", ns(s), ns(s "-2"), ns(s) / ns(s "-2")
			}
		}
		s = "HTTPGet/stormguard"
		if ((("allocs/op", s) in v)) {
			fewer = v["allocs/op", s] < v["allocs/op", "HTTPGet/retryablehttp"]
			fewer = fewer && v["allocs/op", "HTTPPut/stormguard"] < v["allocs/op", "HTTPPut/retryablehttp"]
			printf "http:           allocs/op GET %d vs retryablehttp %d (std client %d); PUT %d vs %d (std client %d): fewer: %s\n",
				v["allocs/op", s], v["allocs/op", "HTTPGet/retryablehttp"], v["allocs/op", "HTTPGet/retryablehttp-std"],
				v["allocs/op", "HTTPPut/stormguard"], v["allocs/op", "HTTPPut/retryablehttp"], v["allocs/op", "HTTPPut/retryablehttp-std"],
				verdict(fewer)
			printf "                PUT body read from GetBody %d B/op (3 x 64 KiB = 196608: no buffering), B/op %d vs handloop %d\n",
				v["bodyread-B/op", "HTTPPut/stormguard"], v["B/op", "HTTPPut/stormguard"], v["B/op", "HTTPPut/handloop"]
		} else
			print "http:           no stormguard row yet (package retryhttp)"
		while ((getline line < cancel) > 0)
			if (line ~ /^stormguard(-http)? /) { split(line, c, " +"); printf "cancel:         %s p50 %s p99 %s (target p99 < 1ms), goroutines left %s\n", c[1], c[2], c[3], c[7] }
	}' | tee -a "$OUT/summary.txt"

echo
echo "raw output in $OUT/ ($((SECONDS - start))s)"
