#!/usr/bin/env bash
# gomod.sh runs a go command that edits a nested module's go.mod and go.sum
# (go get, go mod tidy), as a user's go command would see the module.
#
# In the workspace (go.work) our own modules are replaced by their
# directories, but go get and go mod tidy read only the module's go.mod, and
# the version it requires (the one being prepared) is not published yet. So
# this serves the working tree as that version from a file proxy, with
# GOWORK=off, and a module cache of its own so that the working tree's zips
# never enter yours under a real version number. Third-party modules come
# from your module cache, then from go env GOPROXY. Afterwards it drops our
# own modules' lines from go.sum: their hashes would be the working tree's,
# not the tags'.
#
# Usage: bash .ci/gomod.sh DIR go-args…      e.g.
#        bash .ci/gomod.sh retrygrpc get golang.org/x/net@v0.60.0
#        bash .ci/gomod.sh all mod tidy      (every nested module)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
target=$1
shift
scratch=$(mktemp -d)
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT

cd "$root"
go run ./internal/tools/cmd/release proxy "$scratch/proxy" >/dev/null
cache=$(go env GOMODCACHE)
upstream=$(go env GOPROXY)
if [[ $target == all ]]; then
	dirs=$(find . -name go.mod -not -path './.git/*' -not -path './go.mod' -exec dirname {} \; | sort)
else
	dirs=$target
fi
for d in $dirs; do
	echo "gomod.sh: $d: go $*"
	(
		cd "$root/$d"
		GOWORK=off GOFLAGS="-mod=mod -modcacherw" GOMODCACHE="$scratch/modcache" \
			GOPROXY="file://$scratch/proxy,file://$cache/cache/download,$upstream" \
			GONOSUMDB=github.com/stormguard/retry GOPRIVATE= GONOPROXY= go "$@"
		if [[ -f go.sum ]]; then
			sed -i.bak '\#^github.com/stormguard/retry[ /]#d' go.sum && rm -f go.sum.bak
		fi
	)
done
