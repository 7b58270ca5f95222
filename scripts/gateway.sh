#!/bin/sh
# A local Arweave gateway (arlocal) for trying the Arweave jobs: started on
# PORT, the wallet of the store at UCL_DIR funded, its URL printed, blocks
# mined every MINE_EVERY seconds (0: each time Enter is pressed). Ctrl-C
# stops it and removes its data.
#
#   scripts/gateway.sh [UCL_BIN]      env: PORT (1984), MINE_EVERY (5), UCL_DIR
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
stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$db"; }
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

addr=$("$bin" status --json 2>/dev/null | sed -n 's/.*"wallet_address":"\([^"]*\)".*/\1/p')
if [ -n "$addr" ]; then
	curl -fs "$url/mint/$addr/1000000000000000" >/dev/null
	echo "funded the store's wallet $addr"
else
	echo "no store found (run \`$bin init\` first, or set UCL_DIR): nothing funded" >&2
fi
echo "gateway: $url"
echo "  export UCL_GATEWAY=$url     # then: $bin sync push; $bin sync status --refresh"
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
