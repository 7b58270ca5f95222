# ucl — see README.md. `make test` is what CI runs (.ci/run).
GO        ?= go
BIN       := bin/ucl
ARLOCAL   := test/arlocal/node_modules/arlocal/bin/index.js
MCPCLIENT := test/mcp/node_modules/@modelcontextprotocol/sdk/package.json
BUNDLER   := test/bundler/node_modules/arbundles/package.json
OPENAICLIENT := test/openai/node_modules/openai/package.json
FUZZTIME  ?= 30s
BENCHTIME ?= 1x
LOG_BENCHTIME ?= 2s
QUERY_BENCHTIME ?= 300x
# npm ci prints each package it fetches: a cold install takes minutes and
# should not look hung.
NPM_FLAGS ?= --no-audit --no-fund --loglevel=http
GATEWAY_PORT ?= 1984
MINE_EVERY ?= 5

.PHONY: all build install gateway test test-large test-short race demo bench bench-peers bench-100k bench-1m fuzz arlocal mcp-client openai-client bundler vet clean eval

all: build

# CGO_ENABLED=0: the only C in ucl is go-ethereum's secp256k1 (reached
# through goar, never called by ucl), whose init builds a signing context
# in every process: ~8 ms of CPU and 10-20 ms of wall time per command
# (`ucl --version`: 11 -> 4 ms CPU). Without cgo go-ethereum uses its pure-Go
# curve instead. The race detector needs cgo: `make test` keeps it.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/ucl

# ucl on your PATH: go install puts it in $GOBIN, else $GOPATH/bin.
install:
	CGO_ENABLED=0 $(GO) install ./cmd/ucl
	@gobin=$$($(GO) env GOBIN); [ -n "$$gobin" ] || gobin=$$($(GO) env GOPATH)/bin; \
	  echo "installed $$gobin/ucl"; \
	  case ":$$PATH:" in *":$$gobin:"*) ;; *) echo "add it to your PATH: export PATH=\"$$gobin:\$$PATH\"";; esac

# A local Arweave gateway to try sync, snapshot push and rebuild: arlocal on
# GATEWAY_PORT, the wallet of the store at UCL_DIR (default ~/.ucl) funded,
# a block mined every MINE_EVERY seconds (0: on Enter). Ctrl-C stops it.
gateway: build arlocal
	@PORT=$(GATEWAY_PORT) MINE_EVERY=$(MINE_EVERY) ./scripts/gateway.sh $(BIN)

# The Arweave test gateway (arlocal 1.1.66 from npm), installed into the repo
# from the committed lockfile. The Go test harness starts it itself.
arlocal: $(ARLOCAL)
$(ARLOCAL): test/arlocal/package.json test/arlocal/package-lock.json
	$(call npm_ci,test/arlocal,arlocal (the local Arweave gateway),$(ARLOCAL))

# The local bundler of the bundler end-to-end tests (test/bundler/bundler.mjs:
# the Turbo upload API in front of arlocal, verifying each data item with
# arbundles 0.11.2 and bundling with arweave-js 1.15.7), installed from the
# committed lockfile.
bundler: $(BUNDLER)
$(BUNDLER): test/bundler/package.json test/bundler/package-lock.json
	$(call npm_ci,test/bundler,the local bundler (arbundles, arweave-js),$(BUNDLER))

# The official MCP TypeScript SDK (@modelcontextprotocol/sdk 1.32.2), the
# client of the MCP end-to-end tests, installed from the committed lockfile.
mcp-client: $(MCPCLIENT)
$(MCPCLIENT): test/mcp/package.json test/mcp/package-lock.json
	$(call npm_ci,test/mcp,the MCP TypeScript SDK,$(MCPCLIENT))

# The official OpenAI Node client (openai 7.55.0), the client of the
# `ucl serve` proxy end-to-end test, installed from the committed lockfile.
openai-client: $(OPENAICLIENT)
$(OPENAICLIENT): test/openai/package.json test/openai/package-lock.json
	$(call npm_ci,test/openai,the OpenAI Node client,$(OPENAICLIENT))

# npm_ci DIR,WHAT,STAMP installs DIR's lockfile with npm ci, saying so
# first. A node_modules that is a symlink (a shared install) is left alone:
# npm ci would empty the directory it points to.
define npm_ci
	@if [ -L $(1)/node_modules ]; then \
	  echo "$(1)/node_modules is a symlink to a shared install: not reinstalled"; \
	else \
	  echo "== installing $(2) with npm ci into $(1) (1-6 minutes on a cold cache)"; \
	  (cd $(1) && npm ci $(NPM_FLAGS)) && touch $(3); \
	fi
endef

vet:
	$(GO) vet ./...

# Everything, every package under the race detector: unit, fuzz seed
# corpora, crash, arlocal and end-to-end tests of the built binary (test/
# builds ucl with -race too, so the CLI's own goroutines are checked, and
# runs its end-to-end tests in parallel). atexit_sleep_ms=0: a race binary
# otherwise idles 1 s when it exits, each test binary and each process the
# tests start; races are still reported when they happen and still fail
# the run (exit code 66). A GORACE of your own comes after, so it wins.
# ./test/ is named first: go test starts packages (2 at a time on 2 cores)
# in the order given, and the end-to-end package, the longest by far
# (~8 min), would otherwise start last and run alone at the end with a
# core idle; ./... then adds every other package once. go test prints in
# that order: the other packages' lines appear when ./test/ ends. The
# largest sizes of a few scale tests and measurements wait for
# UCL_TEST_LARGE=1 under the race detector (make test-large runs them).
test: arlocal mcp-client openai-client bundler vet
	GORACE="atexit_sleep_ms=0 $$GORACE" $(GO) test -count=1 -race -timeout 60m ./test/ ./...

test-large: arlocal mcp-client openai-client bundler vet
	UCL_TEST_LARGE=1 GORACE="atexit_sleep_ms=0 $$GORACE" $(GO) test -count=1 -race -timeout 120m ./test/ ./...

test-short:
	$(GO) test -short ./...

demo: build
	@./scripts/demo.sh $(BIN)

# Benchmarks print the figures of docs/design.md ("Performance targets"). The log's per-event
# benchmarks run for LOG_BENCHTIME; the rebuild/build benchmarks do a whole
# build per iteration, so BENCHTIME=1x runs each once.
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(LOG_BENCHTIME) -timeout 60m ./log/
	$(GO) test -run "^$$" -bench . -benchtime $(QUERY_BENCHTIME) -timeout 60m ./query/
	$(GO) test -run "^$$" -bench . -skip RotateKeys -benchtime $(QUERY_BENCHTIME) -timeout 60m .
	$(GO) test -run "^$$" -bench RotateKeys -benchtime $(BENCHTIME) -timeout 60m .
	$(GO) test -run "^$$" -bench . -benchtime $(BENCHTIME) -timeout 60m ./projections/... ./arweave/ ./snapshot/ ./test/
	$(MAKE) bench-peers
	@echo "== not run: the 1M-event \`ucl query\` process figure (issue 9) and the 100K-2M build and peer figures (issue 26). Opt in with make bench-1m (builds 100K-2M-event stores once into BENCH_1M_DIR, 10-50 min each, then reuses them; hours)"

# The log beside etcd's WAL and SQLite in one run, alternating rounds
# (DESIGN.md §10's "same run" figures), then the fts build beside SQLite
# FTS5. A separate module (bench/peers): the product depends on neither.
# PEERS_FLAGS: -rounds, -batches, -singles, -replay, -fts, -ftsids, -dir.
PEERS_FLAGS ?=
bench-peers:
	cd bench/peers && $(GO) run . $(PEERS_FLAGS)

bench-100k:
	UCL_BENCH_100K=1 $(MAKE) bench

# Issue 9's figure: a `ucl query` process (no owner) on 1M-event stores of
# ~300-byte contents built with durability none, one per corpus ("locomo":
# a bigram model of LoCoMo's turns; "words100": 100 words, each query term
# in a third of the chunks), and issue 26's figures, printed as one table
# at the end (ratio = ucl ÷ peer, same run):
#   - the first build of all projections (`ucl project` on a log with no
#     projections): events/s, CPU and peak RSS at BENCH_1M_SIZES (locomo);
#     a kept store is not rebuilt, its log is copied and the copy built
#     (room for one more store of the largest size: ~5 GB at 2M);
#   - one `ucl query` process (bm25, hybrid) beside a Go SQLite FTS5 query
#     process (bench/peers/cmd/fts5corpus) on the same turns, `ucl project
#     status`, and a vector query process, at each size;
#   - recall@10 of vector search against the exact scan on the 1M store
#     (projstd's BenchmarkVectorsQuery);
#   - bench/peers: appends (batches of 256, 1 writer; rounds and lockstep)
#     beside etcd's WAL and SQLite, replay beside them, the full-text build
#     beside FTS5 at 100K and 1M documents with random chunk ids, as a
#     store's (add -ftsids counting to PEERS_1M_FLAGS for the counting ids
#     of the figures up to stop 40), and its query at 1M.
# Building takes minutes per million events on 2 cores (a 2M build ~30
# min), so the stores (and the FTS5 and peers' indexes) are kept in
# BENCH_1M_DIR and reused; the whole run takes hours. GNU time
# (/usr/bin/time) gives each process's own peak RSS (see measureProc in
# test/footprint_bench_test.go).
BENCH_1M_DIR ?= $(CURDIR)/.bench-1m
BENCH_1M_SIZES ?= 100K,1M,2M
BENCH_1M_WORDS ?= 1M
BENCH_1M_RECALL ?= events1000000-locomo
PEERS_1M_FLAGS ?= -rounds 3 -replay 200000 -paired 300 -fts 100000,1000000 -ftsquery 1000000
bench-1m: B1M = $(abspath $(BENCH_1M_DIR))
bench-1m:
	mkdir -p $(B1M)/peers
	rm -f $(B1M)/summary.md
	cd bench/peers && $(GO) build -o $(B1M)/fts5corpus ./cmd/fts5corpus
	UCL_BENCH_1M=1 UCL_BENCH_1M_DIR=$(B1M) UCL_BENCH_1M_SIZES=$(BENCH_1M_SIZES) UCL_BENCH_CORPUS=locomo UCL_BENCH_BUILD=1 UCL_BENCH_FTS5=$(B1M)/fts5corpus UCL_BENCH_SUMMARY=$(B1M)/summary.md $(GO) test -run '^$$' -bench 'BenchmarkCommands/events=' -benchtime 1x -timeout 0 -v ./test/
	UCL_BENCH_1M=1 UCL_BENCH_1M_DIR=$(B1M) UCL_BENCH_1M_SIZES=$(BENCH_1M_WORDS) UCL_BENCH_CORPUS=words100 $(GO) test -run '^$$' -bench 'BenchmarkCommands/events=' -benchtime 1x -timeout 0 -v ./test/
	UCL_BENCH_VEC_DIR=$(B1M)/$(BENCH_1M_RECALL)/projections/vectors UCL_BENCH_VEC_RECALL=1 $(GO) test -run '^$$' -bench 'BenchmarkVectorsQuery$$' -benchtime 1x -timeout 0 ./projections/projstd/ > $(B1M)/recall.txt; \
	  s=$$?; cat $(B1M)/recall.txt; [ $$s = 0 ] || exit $$s; \
	  awk '/^BenchmarkVectorsQuery/ { for (i = 3; i <= NF; i++) m[$$i] = $$(i-1) } \
	    END { if (!("recall@10" in m)) exit 1; printf "| recall@10 of vector search vs the exact scan, %d vectors ($(BENCH_1M_RECALL)) | %s (%.1f ms CPU a query) | exact scan of the stored vectors | target ≥ 0.95 |\n", m["vectors"], m["recall@10"], m["cpu-ms/query"] }' \
	  $(B1M)/recall.txt >> $(B1M)/summary.md
	cd bench/peers && $(GO) run . $(PEERS_1M_FLAGS) -dir $(B1M)/peers -summary $(B1M)/summary.md
	@echo; echo "== issue 26's figures, this run (ratio = ucl ÷ peer, median [min–max] over rounds):"; echo; \
	  echo "| figure | ucl | peer | ratio; target |"; echo "|---|---|---|---|"; cat $(B1M)/summary.md

fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# Retrieval quality: the hand-made set (query/testdata/eval), the LoCoMo
# development set in process, and, when ../shared/eval is present, its
# runner through the built binary (a few minutes). The LoCoMo data stays
# outside the repository.
EVAL_DIR ?= ../shared/eval
eval:
	$(GO) test -count=1 -run '^TestEvaluate$$' -v ./query/
	@if [ -f $(EVAL_DIR)/locomo-dev.json ]; then \
	  UCL_EVAL=1 UCL_EVAL_LOCOMO=$(abspath $(EVAL_DIR))/locomo-dev.json $(GO) test -count=1 -run '^TestLoCoMoDev$$' -v ./query/ && \
	  $(EVAL_DIR)/run; \
	else echo "eval: $(EVAL_DIR) not found: skipping the LoCoMo development set"; fi

clean:
	rm -rf bin
