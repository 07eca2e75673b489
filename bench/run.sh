#!/usr/bin/env bash
# run.sh measures every table of BENCHMARKS.md in one run: each benchmark
# COUNT times, then benchstat's medians, then a check of each target.
#
# It needs only Go (the peers and benchstat come from the module proxy);
# redis-server, if installed, adds the Redis rows; PostgreSQL, if
# installed, the pgstore and pgjournal rows. With the defaults: 524 s
# on 2 quiet cores (load 0.1-1.3, 2026-12-03), 882 s on 2 cores shared
# with other jobs (load 5-9; the growth steps about 4 minutes of it).
# About twice that with COUNT=10. The River comparison is its sibling,
# bash bench/pgriver/run.sh (about 5 minutes). env.txt records the load average
# at the start and at the end. Knobs, as environment variables:
#   COUNT      runs of each benchmark (default 6, the fewest for which benchstat gives a CI)
#   BENCHTIME  -benchtime of the benchmarks timed by duration (default 100ms)
#   KEYTIME    -benchtime of the keyed guard sets' growth rows (default 50ms)
#   OUT        where the raw output goes (default bench/results/<UTC time>)
# Each step's command is printed before it runs and kept in $OUT/commands.txt.
set -euo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
ROOT=$(cd .. && pwd)

COUNT=${COUNT:-6}
BENCHTIME=${BENCHTIME:-100ms}
KEYTIME=${KEYTIME:-50ms}
OUT=${OUT:-results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
benchstat() { (cd "$BENCH" && go run "$BENCHSTAT" "$@"); }

start=$SECONDS
{
	echo "date:   $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "go:     $(go version)"
	echo "cpus:   $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')  load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
	echo "redis:  $(redis-server --version 2>/dev/null | cut -d' ' -f3 || echo 'not installed')"
	echo "knobs:  COUNT=$COUNT BENCHTIME=$BENCHTIME KEYTIME=$KEYTIME"
} | tee "$OUT/env.txt"

# step NAME DIR CMD...: runs CMD in DIR, its output into $OUT/NAME.txt.
step() {
	local name=$1 dir=$2
	shift 2
	echo "($dir) $*" | tee -a "$OUT/commands.txt"
	(cd "$dir" && "$@") > "$OUT/$name.txt" 2>&1 || { tail -30 "$OUT/$name.txt"; echo "step $name failed"; exit 1; }
}

B=(go test -run='^$' -benchmem -count="$COUNT")
# Core and HTTP (the sequential rows), the parallel rows on 1 and 2 cores,
# and the cancellation latency.
step core "$BENCH" "${B[@]}" -benchtime="$BENCHTIME" -bench='^Benchmark(FirstSuccess|ThreeFailures|RetryGrowth|HTTPGet|HTTPPut|HTTPFirstSuccess)$' .
step parallel "$BENCH" "${B[@]}" -benchtime="$BENCHTIME" -cpu=1,2 -bench='^Benchmark(FirstSuccessParallel|BudgetParallel|BudgetHealthyParallel)$' .
step cancel "$BENCH" go test -run='^TestCancelLatency$' -count=1 -v .
# The guarded call (Budget + Breaker + Throttle) against the hand floor and
# failsafe-go, and retryhttp's refusal against a hand-written check.
step guarded "$BENCH" "${B[@]}" -benchtime="$BENCHTIME" -bench='^BenchmarkGuarded(HTTPRefused)?$' .
# Hedging (a fixed workload per run), idempotency, gRPC.
step hedge "$BENCH" "${B[@]}" -benchtime=1x -bench='^BenchmarkHedgeTail$' .
step idempotency "$BENCH" "${B[@]}" -benchtime=500ms -bench='^BenchmarkIdempotency(Handler|Parallel)?$' .
step grpc "$BENCH" "${B[@]}" -benchtime=2000x -bench='^BenchmarkGRPC' .
# Scale: waiting calls and the outage run a fixed workload; contention and
# stores run for BENCHTIME.
step scale "$BENCH" "${B[@]}" -benchtime=1x -bench='^BenchmarkScale(Waiting|Outage)$' .
step scale-par "$BENCH" "${B[@]}" -benchtime="$BENCHTIME" -bench='^BenchmarkScale(Contention|Store)$' .
# Growth: each axis from its small end to its large value (keyed guard
# sets, named policies, Limiter admission, for BENCHTIME; the keyed sets'
# 60 rows for half of it), then the file journal's recovery from 10^4 to
# 10^6 ops (the journals written once per run, about half a minute) and
# the Outbox's memory after the retention, once per run each.
step growth "$BENCH" "${B[@]}" -benchtime="$BENCHTIME" -bench='^BenchmarkScale(Config|Shed)$' .
step growth-keys "$BENCH" "${B[@]}" -benchtime="$KEYTIME" -bench='^BenchmarkScaleKeys$' .
step growth-outbox "$BENCH" "${B[@]}" -benchtime=1x -bench='^BenchmarkScale(Recovery|Retention)$' .
# The packages' own benchmarks: observers, Throttle and Breaker, config.
step observe "$ROOT" "${B[@]}" -benchtime="$BENCHTIME" -bench=. ./retrydebug
step otel "$ROOT/retryotel" "${B[@]}" -benchtime="$BENCHTIME" -bench=. .
step guard "$ROOT" "${B[@]}" -benchtime=2000000x -bench='^BenchmarkGuardFirstSuccess$' ./guard
step config "$ROOT" "${B[@]}" -bench='^BenchmarkLive' ./retryconfig
step logline "$ROOT" "${B[@]}" -cpu=1 -benchtime="$BENCHTIME" -bench='^BenchmarkSuppressedLine$' ./retryhttp
# The outbox file journal: durable enqueues (each waits for its fdatasync)
# from 1 and 64 goroutines, the disk's own floor (BenchmarkFdatasync) in the
# same binary, and resuming 10,000 pending ops.
step outbox "$ROOT" "${B[@]}" -benchtime="$BENCHTIME" -bench='^Benchmark(Fdatasync|Enqueue|FileJournalAdd|Resume)$' ./outbox
# The PostgreSQL store and journal (skipped, as their tests are, without
# PostgreSQL).
step pgstore "$ROOT/idempotency/pgstore" "${B[@]}" -benchtime=2000x -bench='^BenchmarkFreshKey$' .
step pgstore-clients "$ROOT/idempotency/pgstore" "${B[@]}" -benchtime=2000x -bench='^BenchmarkScaleClients$' .
step pgjournal "$ROOT/outbox/pgjournal" "${B[@]}" -benchtime=5000x -bench='^BenchmarkClaim3Workers$' .

echo
echo "==================== medians (benchstat) ===================="
for f in core parallel hedge idempotency grpc scale scale-par growth growth-keys growth-outbox observe otel guard config logline outbox pgstore pgstore-clients pgjournal; do
	echo "---- $f"
	benchstat "$OUT/$f.txt"
done 2>&1 | tee "$OUT/summary.txt"
sed -n '/^cancel latency/,/^is ctx/p' "$OUT/cancel.txt" | tee -a "$OUT/summary.txt"

echo
echo "==================== targets (medians) ===================="
# One CSV of every median: unit,benchmark,value.
for f in core parallel idempotency grpc scale scale-par growth growth-keys growth-outbox guard logline outbox pgstore-clients pgjournal; do
	benchstat -format csv "$OUT/$f.txt" 2>/dev/null | awk -F, '
		/^,[^,]+,CI$/ { unit = $2; next }
		unit != "" && $1 ~ /^[A-Z]/ && $1 !~ /: / { print unit "," $1 "," $2 }'
done > "$OUT/medians.csv"
awk -F, -v cancel="$OUT/cancel.txt" '
	{ name = $2; if (name !~ /Parallel/) sub(/-[0-9]+$/, "", name); v[$1, name] = $3 }
	function ns(n) { return v["sec/op", n] * 1e9 }
	function verdict(ok) { return ok ? "met" : "MISSED" }
	function flat(label, unit, prefix, ends,   e, a, z, r, k) {
		split(ends, e, " "); a = prefix e[1]; z = prefix e[2]
		if (!((unit, a) in v) || !((unit, z) in v) || v[unit, a] == 0) { printf "%-44s no data\n", label; return }
		r = v[unit, z] / v[unit, a]
		k = (unit ~ /^sec\//) ? 1e9 : 1 # benchstat writes ns/x as sec/x
		printf "%-44s %s %.3g, %s %.3g: %.2fx (target <= 2x: %s)\n", label, e[1], v[unit, a] * k, e[2], v[unit, z] * k, r, verdict(r <= 2)
	}
	function ratio(label, a, b, target,   r) {
		if (!(("sec/op", a) in v) || !(("sec/op", b) in v)) { printf "%-44s no data\n", label ":"; return }
		r = ns(a) / ns(b)
		printf "%-44s %.3g / %.3g ns = %.2fx (target <= %.2fx: %s)\n", label ":", ns(a), ns(b), r, target, verdict(r <= target)
	}
	END {
		ratio("first success vs sethvargo", "FirstSuccess/stormguard", "FirstSuccess/sethvargo", 0.45)
		if ((("sec/op", "FirstSuccess/direct-marked") in v) && (("sec/op", "FirstSuccess/sethvargo") in v))
			printf "%-44s %.3g ns of it the mark alone; without it %.2fx\n", "first success, the floor:", ns("FirstSuccess/direct-marked"), (ns("FirstSuccess/stormguard") - ns("FirstSuccess/direct-marked")) / ns("FirstSuccess/sethvargo")
		ratio("three failures vs handloop", "ThreeFailures/stormguard", "ThreeFailures/handloop", 0.80)
		ratio("HTTP 503,503,200 vs handloop", "HTTPGet/stormguard", "HTTPGet/handloop", 1.05)
		ratio("HTTP first success vs handloop", "HTTPFirstSuccess/stormguard", "HTTPFirstSuccess/handloop", 1.03)
		printf "%-44s direct / handloop = %.2fx (two rows that do the same: the noise)\n", "HTTP first success, noise:", ns("HTTPFirstSuccess/direct") / ns("HTTPFirstSuccess/handloop")
		ratio("idempotency fresh key vs none (loopback)", "Idempotency/memory-fresh", "Idempotency/none-fresh", 1.10)
		ratio("idempotency replay vs none (loopback)", "Idempotency/memory-replay", "Idempotency/none-fresh", 1.05)
		ratio("idempotency fresh key vs none (handler)", "IdempotencyHandler/memory-fresh", "IdempotencyHandler/none", 1.10)
		ratio("idempotency replay vs none (handler)", "IdempotencyHandler/memory-replay", "IdempotencyHandler/none", 1.05)
		d = v["allocs/op", "GRPCFirstSuccess/stormguard"] - v["allocs/op", "GRPCFirstSuccess/direct"]
		printf "%-44s +%g allocs/op over direct (target <= +1: %s)\n", "gRPC first success:", d, verdict(d <= 1)
		ratio("gRPC first success vs go-grpc-middleware", "GRPCFirstSuccess/stormguard", "GRPCFirstSuccess/grpc-middleware", 1.05)
		split("do/real-clock do/fake-clock http/real-clock http/fake-clock", rows, " ")
		for (i = 1; i <= 4; i++) {
			s = "ScaleWaiting/" rows[i]
			h = v["heap-B/call", s]
			t = ((("timers/call", s) in v) ? sprintf(", %g timers/call (target 1: %s)", v["timers/call", s], verdict(v["timers/call", s] == 1)) : "")
			printf "%-44s %g heap B/call (target <= 1024: %s)%s\n", "10,000 waiting calls, " rows[i] ":", h, verdict(h <= 1024), t
		}
		split("budget budgets transport", crows, " ")
		for (i = 1; i <= 3; i++) {
			a = "ScaleContention/" crows[i] "/goroutines=1"; z = "ScaleContention/" crows[i] "/goroutines=64"
			if ((("sec/op", a) in v)) {
				r = ns(z) / ns(a)
				printf "%-44s 1: %.3g ns, 2: %.3g, 8: %.3g, 64: %.3g ns/op: %.2fx (target <= 2x: %s)\n", "contention, " crows[i] ":", ns(a),
					ns("ScaleContention/" crows[i] "/goroutines=2"), ns("ScaleContention/" crows[i] "/goroutines=8"), ns(z), r, verdict(r <= 2)
			}
		}
		while ((getline line < cancel) > 0) {
			if (line ~ /^stormguard-http /) { split(line, c, " +"); http99 = c[3] }
			if (line ~ /^handloop /) { split(line, c, " +"); hand99 = c[3] }
		}
		if ((("sec/op", "GuardFirstSuccess/both") in v)) {
			d = ns("GuardFirstSuccess/both") - ns("GuardFirstSuccess/none")
			printf "%-44s +%.3g ns per allowed attempt (target <= 30: %s)\n", "Throttle+Breaker vs none:", d, verdict(d <= 30)
		}
		split("timed untimed", lrows, " ")
		for (i = 1; i <= 2; i++) {
			s = "SuppressedLine/" lrows[i]
			if ((("sec/op", s) in v))
				printf "%-44s %.3g ns, %g allocs (target <= 50 ns, 0 allocs: %s)\n", "suppressed log line, " lrows[i] ":", ns(s), v["allocs/op", s], verdict(ns(s) <= 50 && v["allocs/op", s] == 0)
		}
		split("1 64", grows, " "); split("5000 100000", gtargets, " ")
		for (i = 1; i <= 2; i++) {
			s = "Enqueue/goroutines=" grows[i]
			if ((("enqueues/s", s) in v))
				printf "%-44s %.0f enqueues/s (target >= %d: %s)\n", "outbox enqueue, " grows[i] " goroutine(s):", v["enqueues/s", s], gtargets[i], verdict(v["enqueues/s", s] >= gtargets[i] + 0)
		}
		for (i = 1; i <= 2; i++) {
			s = "FileJournalAdd/goroutines=" grows[i]
			if ((("adds/s", s) in v))
				printf "%-44s %.0f adds/s (target >= %d: %s)\n", "file journal alone, " grows[i] " goroutine(s):", v["adds/s", s], gtargets[i], verdict(v["adds/s", s] >= gtargets[i] + 0)
		}
		for (i = 1; i <= 2; i++) {
			s = "Fdatasync/syncers=" (i == 1 ? 1 : 4)
			if ((("syncs/s", s) in v)) printf "%-44s %.0f syncs/s (the floor under an enqueue)\n", "raw fdatasync, " s ":", v["syncs/s", s]
		}
		if ((("sec/op", "Resume") in v))
			printf "%-44s %.3g ms (target < 1000: %s)\n", "outbox resume, 10,000 pending ops:", ns("Resume") / 1e6, verdict(ns("Resume") < 1e9)
		if ((("ops/s", "Claim3Workers") in v)) printf "%-44s %.0f ops/s\n", "pgjournal, 3 workers claiming:", v["ops/s", "Claim3Workers"]
		# Growth: the cost per unit at the large end over that at the small end.
		split("budgets breakers throttles floor", sets, " ")
		for (i = 1; i <= 4; i++) {
			flat("keys, " sets[i] " get (ns/op):", "sec/op", "ScaleKeys/" sets[i] "/get/keys=", "1 10000")
			flat("keys, " sets[i] " fill (ns/key):", "sec/key", "ScaleKeys/" sets[i] "/fill/keys=", "1 10000")
			flat("keys, " sets[i] " churn (ns/op):", "sec/op", "ScaleKeys/" sets[i] "/churn/keys=", "1 10000")
		}
		flat("config reload (ns/policy):", "sec/policy", "ScaleConfig/reload/policies=", "10 10000")
		flat("config lookup (ns/op):", "sec/op", "ScaleConfig/lookup/policies=", "10 10000")
		flat("shed fixed (ns/op):", "sec/op", "ScaleShed/fixed/goroutines=", "1 64")
		flat("shed adaptive (ns/op):", "sec/op", "ScaleShed/adaptive/goroutines=", "1 64")
		flat("recovery (ns/op kept):", "sec/op-kept", "ScaleRecovery/ops=", "10000 1000000")
		flat("recovery (heap B/op kept):", "heap-B/op-kept", "ScaleRecovery/ops=", "10000 1000000")
		flat("redis fresh (ns/op):", "sec/op", "ScaleStore/redis-fresh/clients=", "1 64")
		flat("redis replay (ns/op):", "sec/op", "ScaleStore/redis-replay/clients=", "1 64")
		flat("pgstore fresh (ns/op):", "sec/op", "ScaleClients/fresh/clients=", "1 64")
		flat("pgstore replay (ns/op):", "sec/op", "ScaleClients/replay/clients=", "1 64")
		for (i = 1; i <= 3; i++) {
			s = "ScaleRetention/ops=" (i == 1 ? 1000 : i == 2 ? 10000 : 100000)
			if ((("heap-B/op-finished", s) in v))
				printf "%-44s %.3g B per op after the retention (target 0, read as <= 1: %s)\n", "outbox retention, " s ":", v["heap-B/op-finished", s], verdict(v["heap-B/op-finished", s] <= 1)
		}
		if (http99 != "") printf "%-44s stormguard-http p99 %s, handloop p99 %s (target <= 2x)\n", "HTTP cancel -> return:", http99, hand99
	}' "$OUT/medians.csv" | tee -a "$OUT/summary.txt"

echo
echo "==================== guarded call (medians) ===================="
benchstat "$OUT/guarded.txt" 2>&1 | tee -a "$OUT/summary.txt"
benchstat -format csv "$OUT/guarded.txt" 2>/dev/null | awk -F, '
	/^,[^,]+,CI$/ { unit = $2; next }
	unit != "" && $1 ~ /^[A-Z]/ && $1 !~ /: / { name = $1; sub(/-[0-9]+$/, "", name); v[unit, name] = $2 }
	function verdict(ok) { return ok ? "met" : "MISSED" }
	function ratio(label, a, b, target,   r) {
		if (!(("sec/op", a) in v) || !(("sec/op", b) in v)) { printf "%-44s no data\n", label ":"; return }
		r = v["sec/op", a] / v["sec/op", b]
		printf "%-44s %.3g / %.3g ns = %.2fx (target <= %.2fx: %s)\n", label ":", v["sec/op", a] * 1e9, v["sec/op", b] * 1e9, r, target, verdict(r <= target)
	}
	END {
		split("first-success three-failures goroutines=64 refused", rows, " ")
		for (i = 1; i <= 4; i++)
			ratio("guarded " rows[i] " vs hand floor", "Guarded/" rows[i] "/stormguard", "Guarded/" rows[i] "/handloop", 1.5)
		a = v["allocs/op", "Guarded/refused/stormguard"]
		printf "%-44s %g allocs/op (target 0: %s)\n", "guarded refused by an open breaker:", a, verdict(a == 0)
		ratio("guarded first success vs failsafe-go", "Guarded/first-success/stormguard", "Guarded/first-success/failsafe", 0.45)
		ratio("retryhttp refused vs hand-written check", "GuardedHTTPRefused/stormguard", "GuardedHTTPRefused/handcheck", 2)
		ratio("retryhttp refused, Guards, vs keyed check", "GuardedHTTPRefused/stormguard-keyed", "GuardedHTTPRefused/handcheck-keyed", 2)
	}' | tee -a "$OUT/summary.txt"

echo "end:    $(date -u +%Y-%m-%dT%H:%M:%SZ)  load: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')" | tee -a "$OUT/env.txt"
echo
echo "raw output in $OUT/ ($((SECONDS - start))s)"
