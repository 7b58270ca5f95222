#!/usr/bin/env bash
# make demo: ucl's main job on a throw-away store — init, store a small
# conversation, replay it, verify the chain, ask for context.
set -euo pipefail
UCL=${1:-bin/ucl}
UCL_DIR=$(mktemp -d)/store
export UCL_DIR
trap 'rm -rf "$(dirname "$UCL_DIR")"' EXIT
run() { echo; echo "\$ ucl $*"; "$UCL" "$@"; }

run init
run store --session trip --role user --time 2023-05-08T13:56:00Z "I'm planning a trip to Lisbon in May, budget around 2000 euros."
run store --session trip --role assistant --time 2023-05-08T13:56:30Z "Lisbon in May is lovely. Consider Alfama for the stay and a day trip to Sintra."
run store --session trip --role user --time 2023-05-08T13:57:10Z "Book the hotel near the Tram 28 line, and I am allergic to shellfish."
echo '{"type":"store","session":"work","role":"user","kind":"knowledge","content":"The deploy key rotates every 90 days.","meta":{"source":"runbook"},"time":"2023-06-01T09:00:00Z"}' > "$(dirname "$UCL_DIR")/in.jsonl"
run append "$(dirname "$UCL_DIR")/in.jsonl"
run replay
run audit verify
run status
run query "where should I stay in Lisbon" --k 3 --now 2023-05-10T00:00:00Z
run context "what food should I avoid" --budget 300 --active trip --now 2023-05-10T00:00:00Z
run session list
