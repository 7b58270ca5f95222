#!/bin/sh
# A local Arweave gateway (arlocal) for trying the Arweave jobs: started on
# PORT, the wallets of the stores at UCL_DIR and UCL_DIRS (space-separated,
# e.g. the two stores of the sharing example) funded, its URL printed, blocks
# mined every MINE_EVERY seconds (0: each time Enter is pressed). When the
# local bundler is installed (make bundler) it is started too, on
# BUNDLER_PORT, so `ucl sync push --via bundler` works as against Turbo.
# Ctrl-C stops them and removes their data.
#
#   scripts/gateway.sh [UCL_BIN]
#   env: PORT (1984), BUNDLER_PORT (1985), MINE_EVERY (5), UCL_DIR, UCL_DIRS
#
# Another wallet is funded with one line while it runs:
#   curl http://127.0.0.1:1984/mint/ADDRESS/1000000000000000
set -eu
bin=${1:-bin/ucl}
port=${PORT:-1984}
every=${MINE_EVERY:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
arlocal=$root/test/arlocal/node_modules/arlocal/bin/index.js
[ -f "$arlocal" ] || { echo "arlocal is not installed: run make arlocal" >&2; exit 1; }

db=$(mktemp -d "${TMPDIR:-/tmp}/ucl-gateway-XXXXXX")
# arlocal joins --dbpath to its working directory even when absolute.
(cd "$(dirname "$db")" && exec node "$arlocal" "$port" --dbpath "$(basename "$db")" --hidelogs) &
pid=$!
bpid=
stop() {
	[ -z "$bpid" ] || { kill "$bpid" 2>/dev/null || true; wait "$bpid" 2>/dev/null || true; }
	kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$db"
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

url=http://127.0.0.1:$port
tries=0
until curl -fs "$url/info" >/dev/null 2>&1; do
	kill -0 "$pid" 2>/dev/null || { echo "arlocal exited (is port $port free? PORT=N picks another)" >&2; exit 1; }
	tries=$((tries + 1))
	[ "$tries" -lt 600 ] || { echo "arlocal did not answer on $url within 60s" >&2; exit 1; }
	sleep 0.1
done

funded=0
for dir in "${UCL_DIR:-$HOME/.ucl}" ${UCL_DIRS:-}; do
	addr=$(UCL_DIR=$dir "$bin" status --json 2>/dev/null | sed -n 's/.*"wallet_address":"\([^"]*\)".*/\1/p')
	if [ -n "$addr" ]; then
		curl -fs "$url/mint/$addr/1000000000000000" >/dev/null
		echo "funded the wallet $addr of the store $dir"
		funded=$((funded + 1))
	fi
done
[ "$funded" -gt 0 ] || echo "no store found (run \`$bin init\` first, or set UCL_DIR / UCL_DIRS): nothing funded" >&2
echo "gateway: $url"
echo "  export UCL_GATEWAY=$url     # then: $bin sync push; $bin sync status --refresh"
echo "  fund another wallet: curl $url/mint/ADDRESS/1000000000000000"
bundler=$root/test/bundler/bundler.mjs
if [ -d "$root/test/bundler/node_modules/arbundles" ]; then
	bport=${BUNDLER_PORT:-1985}
	(cd "$root/test/bundler" && exec node bundler.mjs --gateway "$url" --port "$bport" >/dev/null) &
	bpid=$!
	echo "bundler: http://127.0.0.1:$bport (Turbo upload API, bundles into the gateway)"
	echo "  export UCL_BUNDLER=http://127.0.0.1:$bport   # then: $bin sync push --via bundler (no AR needed)"
else
	echo "no local bundler (make bundler installs it): sync push --via bundler needs one" >&2
fi
if [ "$every" = 0 ]; then
	echo "press Enter to mine a block (Ctrl-C stops the gateway)"
	while read -r _; do curl -fs "$url/mine" >/dev/null && echo "mined"; done
else
	echo "mining a block every ${every}s (Ctrl-C stops the gateway)"
	while kill -0 "$pid" 2>/dev/null; do
		sleep "$every"
		curl -fs "$url/mine" >/dev/null || true
	done
fi
