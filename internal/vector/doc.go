// Package vector holds the building blocks of vector search: embedders that
// turn chunk text into vectors, a content-addressed embedding cache, and
// nearest-neighbour indexes (an exact oracle and a deterministic HNSW). It
// is not a projection and knows nothing about the log: the vector
// projection, which feeds a log into an Index, is projstd.VectorProjection
// (projections/projstd).
//
// # Pieces
//
//   - Embedder: Name (model + dimension; the cache key, and part of any
//     projection digest), Dim, Embed. HashEmbedder ("hash-v1/384") is the
//     offline default; StaticEmbedder ("static-v1/<model hash>/<dim>")
//     loads a model2vec directory (tokenizer.json + model.safetensors) and
//     runs it offline in pure Go; HTTPEmbedder speaks Ollama /api/embed or the
//     OpenAI-style /v1/embeddings; CachedEmbedder puts a Cache (MemCache, or
//     BoltCache in a bbolt file) in front of any Embedder, keyed by
//     (Name, SHA-256 of the text), so rebuilds never re-ask a model.
//   - Index: Add / Delete / Search / Len / Dim / Digest / MarshalBinary /
//     UnmarshalBinary, implemented by Exact (brute force) and HNSW. Load
//     decodes either from bytes.
//   - Code slots (slots.go): the 8-bit form Exact scans, one fixed-size
//     slot per vector in a file the caller keeps. ScanSlots is an exact
//     search over such a file read in blocks (no index in memory, no
//     mapping), ScanSearch finishes it over the candidates' vectors, and
//     DigestEach is an index's Digest computed from vectors read one at a
//     time. The vector projection searches this way by default.
//
// # Code slot format (version 1)
//
//	slot = step float64 LE ‖ codes int8 × dim             (8 + dim bytes)
//
// codes and step are the 8-bit coding of the vector normalised as Add
// stores it (q8.go: step = max|v[i]|/127, codes[i] = round(v[i]/step)
// half away from zero, in [-127, 127]). A zero vector, and an emptied
// slot, are 8 + dim zero bytes. The file's header and slot numbering are
// the caller's (projstd's scan.bin: a 16-byte header "UCLVSCAN" ‖ uint16
// version 1 ‖ uint16 0 ‖ uint32 dim, then slot s at 16 + s·(8+dim)).
// ScanSlots (slots read from a file) and ScanSlotsMem (slots a
// long-lived process holds) refuse a slot whose step is negative, NaN or
// infinite (ErrSlotFile), and return the same candidates; TestScanSlotsIsExact holds that its candidates, scored
// by ScanSearch, give Exact.Search's answer, ties broken by id.
//
// # Invariants
//
//   - Vectors are stored L2-normalised, so the score is the cosine
//     similarity, computed by dot (one fixed summation order, no FMA; AVX
//     on amd64 reproduces the portable code bit for bit). A stored zero
//     vector (e.g. the embedding of empty text) counts in Len and Digest but
//     is never a hit; a zero query returns no hits.
//   - Search results are ordered by score descending, ties by ID ascending.
//   - Digest is SHA-256 over the logical content only (ContentDigest): the
//     same (id, vector) set gives the same digest in Exact and HNSW,
//     whatever the operation history.
//   - MarshalBinary is a pure function of the sequence of Add/Delete calls
//     (and M, EfConstruction): same operations ⇒ identical bytes, on any
//     machine; marshalling midway and continuing from the decoded copy gives
//     the same bytes as never stopping. Both formats start with an 8-byte
//     magic and a uint16 version and end with a SHA-256 trailer; they are
//     documented on Exact and HNSW. Decoders reject anything else with
//     ErrCorrupt and are fuzzed (seeds, including testdata's golden files,
//     run in go test).
//
// # The graph file (HNSW version 2)
//
// The HNSW's file is its memory layout: fixed-size sections (levels,
// vectors, layer-0 link slots, upper-layer link runs, id offsets, ids, the
// ids' sorted order) at 64-byte boundaries, so:
//
//   - WriteTo streams it section by section (memory beyond the graph: the id
//     order and a 64 KB buffer; MarshalBinary is WriteTo into a buffer);
//   - OpenHNSWFile maps it copy-on-write and checks the 64-byte header and
//     the size only. A search reads the pages of the nodes it visits and the
//     ids of its hits; ids are found by binary search of the sorted table,
//     so nothing is decoded or indexed at open. Adds and Deletes on a mapped
//     graph change this process's pages, never the file; new nodes go to
//     the heap, in blocks of 1024 vectors (no growing copy of the vectors).
//   - The open is trusted: damage inside the file shows as a failed bounds
//     check (a panic the vector projection recovers as damage) or as poor
//     hits; VerifyFile (the projection's digest path) and UnmarshalBinary
//     check the trailer and every structural rule.
//   - Version 1 (variable-length records, decoded whole) is still read.
//
// Incremental saves (hnswdelta.go): after a file is written and opened,
// WriteDelta appends one record of what changed since the last save (the
// nodes added, the slots deleted, the changed link lists of older nodes)
// and ApplyDeltas replays records onto the mapped file without repeating
// any search, so a save and an open cost what changed, not the graph. The
// graph after file + records is the graph of never stopping (same WriteTo
// bytes); records are checked completely (checksum, ranges, levels, links
// to live nodes on their layer, the entry point) before one is applied,
// and FuzzApplyDeltas holds that an accepted record leaves a graph the full
// decoder accepts.
//
// Intended use by the vectors projection: on a chunk event, Embed its text
// and Add(chunkID, v) (re-adding an identical vector is a no-op, so replay is
// idempotent); on a tombstone, Delete(chunkID) (unknown ids are a no-op);
// checkpoint with WriteTo (through fsutil.WriteAtomic) and WriteDelta, and
// restore with OpenHNSWFile and ApplyDeltas; the projection digest should
// cover Embedder.Name() and Index.Digest(). That is the projection's
// layout with its Graph option. Its default (since vector projection
// version 6) keeps no graph: every vector is a code slot and every search
// is exact (ScanSlots), because on the hash embedder's vectors a graph
// needs an insertion per vector whose cost grows with the graph (the
// 200K-chunk catch-up cost 654 µs of CPU a chunk with the graph from
// 120K, 55 µs without), and the quantised prefilters that would avoid a
// full scan lose the exact top 10 on these nearly orthogonal vectors (one
// bit a dimension, asymmetric sign scoring, re-ranking the best 1000 of
// 100K: recall@10 0.37 for 60-word queries, 0.20 for 3-word ones). Since
// version 7 the candidates' records (ScanSearch's input) sit by slot in a
// file beside the code slots, so a catch-up appends both.
//
// # HNSW determinism rules
//
// The graph follows Malkov & Yashunin (Algorithm 1 insert, 2 search-layer,
// 4 neighbour-selection heuristic without extension or kept-pruned links,
// 5 k-NN search; layer 0 keeps up to 2M links). Nothing depends on an RNG,
// a clock or map order:
//
//   - A node's level is a function of its id: P(level ≥ l) = M^-l, from
//     integer thresholds on splitmix64(FNV-1a(id)) (no floating-point log).
//   - Every ordering decision uses (similarity desc, internal index asc);
//     internal indexes are insertion order, so ties favour the older node.
//   - The entry point is always the lowest-index node of the highest level;
//     when it is deleted the next one is found by the same rule.
//   - Delete repairs the graph: every node linking to the deleted one
//     re-selects, with the heuristic, from its remaining links plus the
//     deleted node's links. Deleted slots are squeezed out in order (on
//     marshal, and in place once they outnumber live nodes), which keeps
//     every relative order and so every future decision.
//
// # Why ucl carries its own HNSW
//
// github.com/coder/hnsw v0.6.1 (the only version the module proxy serves)
// was measured here by TestCoderHNSWv061 (3000 vectors of dimension 384,
// M=16, 100 queries, recall@10 against Exact):
//
//	uniform random:  EfSearch 20 → 0.029, 100 → 0.034, 400 → 0.031
//	clustered (50):  EfSearch 20 → 0.329, 100 → 0.368, 400 → 0.343
//
// Recall does not improve with EfSearch because its heap's Max returns the
// last array element rather than the maximum, so searches stop early. Its
// layer entry points come from map iteration and Export walks maps, so two
// builds of the same 1000 vectors with the same Rng seed exported different
// bytes. DESIGN.md requires recall@10 ≥ 0.95 and byte-identical rebuilds.
// This package's HNSW on the same 3000 vectors: clustered 0.990 / 1.000 /
// 1.000 and uniform random 0.416 / 0.851 / 0.900 at EfSearch 20 / 100 / 128
// (uniform random 384-d points have no neighbourhood structure and are the
// worst case for any graph index; real embeddings are clustered). On
// clustered 384-d data (50 centres, M=16, EfConstruction=128, 200 queries;
// BenchmarkHNSWSearch):
//
//	10K:  recall@10 0.9995 at EfSearch 64, 1.000 at 128
//	100K: recall@10 0.913 at EfSearch 64, 0.964 at 96, 0.980 at 128 (the
//	      default), 0.9945 at 200; with EfConstruction 64 the build is ~25%
//	      faster and recall at 128 drops to 0.961
//
// # Performance (2 cores shared with other builds, AMD EPYC; bench_test.go)
//
//	HashEmbedder, 64-word text          ~32 µs
//	dot, 384-d                          ~18-26 ns AVX, ~200 ns portable
//	HNSW build 10K×384                  ~1.1-1.5 s
//	HNSW build 100K×384                 ~28-47 s, depending on machine load
//	HNSW search k=10, 100K              ~0.35-0.7 ms (EfSearch 64-200)
//	Exact search k=10, 100K             ~5.1 ms (2 goroutines) as a float32
//	                                    scan; k=200 over 100K uniform
//	                                    vectors 13.5 ms float32, 3.0 ms as
//	                                    the 8-bit scan it is now (q8.go;
//	                                    BenchmarkExactScan100K, loaded
//	                                    machine)
//	int8·int16 dot, 384-d               ~19 ns AVX2
//	serialized size                     ~1.7 KB per 384-d vector (M=16)
//	mapped graph file, 1M×384 (1.64 GB; a 1M-event store, hash embedder):
//	  OpenHNSWFile 0.1 ms; one k=10 search at EfSearch 256 11-21 ms of
//	  CPU, reading 10.6-12.7 MB of the file (TestProbeGraphFile)
//
// The build is memory-bound at 100K (vectors are 150 MB): level-0 links sit
// in one arena and neighbours' vectors are prefetched before scoring.
//
// The vector projection without a graph (projstd version 6, before its
// records moved out of bbolt; its
// BenchmarkVectorsBuild and BenchmarkVectorsQuery, hash embedder, ~60-word
// chunks, CPU time of the process, machine shared):
//
//	build, CPU a chunk       100K 45 µs, 200K 52 µs, 1M 58 µs (with a
//	                         graph from 120K, as before: 654-727 µs at 200K)
//	scan.bin at 1M           387 MB (8 + 384 bytes a vector)
//	one k=10 search at 1M    ~100-120 ms of CPU (two goroutines; two
//	                         thirds of it the kernel's copy of the file),
//	                         recall@10 1.000 against the exact scan of the
//	                         stored records (30 queries); 14 ms at 100K
//
// Version 7 (records by slot in recs.bin, 388 MB at 1M; vectors.db 94 MB
// instead of 485 MB, and 725-823 MB during the build): `ucl project
// rebuild --only vectors` of a 1M-event store, 3 alternated rounds on a
// shared machine, CPU 69-80 s (median 70.4) against version 6's 70-78 s
// (median 73.6), peak RSS 573-587 MB against 956-970 MB; in one profile
// of each, bbolt's Tx.Commit 3.7 s (5.4%) against 11.7 s (15.6%).
package vector
