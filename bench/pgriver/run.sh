#!/usr/bin/env bash
# The PostgreSQL journal side by side with River, on one PostgreSQL that
# the benchmark starts on loopback (fsync on); each benchmark skips
# without PostgreSQL (fails under CI=true). About 4 minutes on 2 cores.
# COUNT runs each row that many times (1 by default).
set -euo pipefail
cd "$(dirname "$0")"
count=${COUNT:-1}
go test -run '^$' -bench 'Pickup' -benchtime 300x -count "$count" .
go test -run '^$' -bench 'EnqueueTx' -benchtime 2000x -count "$count" .
go test -run '^$' -bench 'Work/fail=0' -benchtime 20000x -count "$count" .
go test -run '^$' -bench 'Work/fail=2' -benchtime 3000x -count "$count" .
