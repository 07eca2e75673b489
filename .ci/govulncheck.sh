#!/usr/bin/env bash
# govulncheck.sh checks the core module against the Go vulnerability database
# with nothing but the Go module proxy: vuln.go.dev need not be reachable.
#
# The database comes as the golang.org/x/vulndb module, whose data/osv folder
# holds one OSV file per advisory (GO-YYYY-NNNN.json). govulncheck reads such a
# flat folder given as -db file://…: it builds the index (index/db.json,
# index/modules.json) in memory, so no cmd/indexdb step, and none of vulndb's
# own dependencies, are needed. govulncheck and the database are both pinned,
# so that a CI run gives the same answer on any day; set VULNDB_VERSION=latest
# to check against the newest advisories the proxy serves.
#
# It exits 0 when no vulnerable symbol is reachable from the code, 3 when one
# is (govulncheck's own code for findings), and 1 on any other failure.
# Advisories for modules or packages that are required but not called are
# printed and do not fail the run.
#
# Usage: bash .ci/govulncheck.sh [package pattern…]   (default ./...)
# VULNDB_DIR=dir reads a folder of OSV files instead, e.g. one with a made-up
# advisory against a dependency, to see the script fail as it should.
set -euo pipefail

GOVULNCHECK_VERSION=v1.9.0
VULNDB_VERSION=${VULNDB_VERSION:-v0.0.0-20261105234957-e22db6528018}

root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Outside any module, so that the look-ups cannot touch the project's go.mod.
cd "$scratch"
if [[ -z ${VULNDB_DIR:-} ]]; then
	db_version=$(go list -m -f '{{.Version}}' "golang.org/x/vulndb@$VULNDB_VERSION")
	go mod download "golang.org/x/vulndb@$db_version"
	VULNDB_DIR="$(go env GOMODCACHE)/golang.org/x/vulndb@$db_version/data/osv"
	echo "govulncheck.sh: database golang.org/x/vulndb@$db_version"
fi
if ! compgen -G "$VULNDB_DIR/GO-*.json" >/dev/null; then
	echo "govulncheck.sh: no OSV files (GO-*.json) in $VULNDB_DIR: has vulndb's layout changed?" >&2
	exit 1
fi
# Installed, not go run: go run would turn govulncheck's exit code 3 into 1.
GOBIN="$scratch/bin" go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"
echo "govulncheck.sh: $(ls "$VULNDB_DIR" | wc -l) advisories, $(go env GOVERSION), govulncheck $GOVULNCHECK_VERSION"

cd "$root"
status=0
"$scratch/bin/govulncheck" -db "file://$VULNDB_DIR" "${@:-./...}" || status=$?
if [[ $status == 3 ]]; then
	echo "govulncheck.sh: vulnerable code is reachable. For findings in the standard library," \
		"run with a Go release that has the fix (the 'Fixed in' one), e.g. GOTOOLCHAIN=go1.N.M," \
		"which the go command fetches as the golang.org/toolchain module through the proxy." >&2
fi
exit "$status"
