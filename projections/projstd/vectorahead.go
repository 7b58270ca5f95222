package projstd

import (
	"context"
	"runtime"

	"github.com/unlimitedcontext/ucl/internal/vector"
)

// Embedding ahead of the commit.
//
// Embedding (and quantising and coding the vectors) is most of the
// vector projection's CPU, and Commit holds a commit turn: the projector
// lets one projection commit at a time, so at a million events the other
// projections waited on vectors' commits for hundreds of seconds. With an
// embedder that computes locally and is safe for concurrent use
// (vector.LocalEmbedder: the hash and static embedders), Apply hands each
// aheadBatch texts to a goroutine as they arrive, on the cores the other
// projections leave free, and Commit only collects what is done and
// embeds the rest (less than a batch). A service embedder (HTTP) still
// embeds in Commit, in batches of its own.
//
// Each vector, record and code is a function of its text alone, so what
// is stored does not depend on which goroutine made it or when. Memory:
// at most aheadWorkers batches are embedding at once (Apply waits for a
// free one), and the finished ones hold what Commit held anyway, the
// vectors of the operations since the last commit.

// aheadBatch is how many texts one goroutine embeds (~5 ms of the hash
// embedder's CPU: a goroutine and a channel are noise beside it).
const aheadBatch = 256

// aheadJob is one batch embedded ahead: ops[at[i]]'s results are vecs[i]
// (quantised), recs[i] and codes[i], or nothing (codes nil) when the
// embedder failed or the vector does not check (Commit then embeds those
// operations itself and reports the error in order).
type aheadJob struct {
	at    []int
	texts []string
	vecs  [][]float32
	recs  [][]byte
	codes [][]byte
	done  chan struct{}
}

// aheadOK reports whether v embeds ahead (vector.LocalEmbedder).
func (v *VectorProjection) aheadOK() bool {
	l, ok := v.opts.Embedder.(vector.LocalEmbedder)
	return ok && l.Local()
}

// queueEmbed notes that v.ops[i] needs a vector and starts a batch once
// aheadBatch are waiting.
func (v *VectorProjection) queueEmbed(i int) {
	if !v.ahead {
		return
	}
	v.queued = append(v.queued, i)
	if len(v.queued) < aheadBatch {
		return
	}
	if v.aheadSem == nil {
		v.aheadSem = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	}
	j := &aheadJob{at: v.queued, texts: make([]string, len(v.queued)), done: make(chan struct{})}
	for k, at := range j.at {
		j.texts[k] = v.ops[at].content
	}
	v.queued = nil
	v.aheadSem <- struct{}{} // bounds the batches embedding at once
	v.jobs = append(v.jobs, j)
	dim := v.opts.Embedder.Dim()
	go func() {
		defer close(j.done)
		defer func() { <-v.aheadSem }()
		vecs, err := v.opts.Embedder.Embed(context.Background(), j.texts)
		if err != nil || len(vecs) != len(j.texts) {
			return // Commit embeds these itself and reports the error
		}
		j.vecs = vecs
		j.recs = make([][]byte, len(vecs))
		j.codes = make([][]byte, len(vecs))
		// One block each for the batch's records and codes; a local
		// embedder's vectors are its own fresh slices, quantised in place.
		rl, sl := 4+dim, vector.SlotLen(dim)
		recs, codes := make([]byte, len(vecs)*rl), make([]byte, len(vecs)*sl)
		for k, vec := range vecs {
			// A vector that does not check or code is left out: Commit
			// embeds that text again and reports the error in order.
			if checkVec(vec, dim) != nil {
				continue
			}
			rec, c := recs[k*rl:(k+1)*rl:(k+1)*rl], codes[k*sl:(k+1)*sl:(k+1)*sl]
			quantizeInto(vec, rec, vec)
			if codeRec(c, rec) != nil {
				continue
			}
			// The float copy is not kept (4·dim bytes a vector waiting
			// for its commit): the record decodes to the same values,
			// which Commit does only for an index held in memory.
			j.recs[k], j.codes[k], j.vecs[k] = rec, c, nil
		}
	}()
}

// collectAhead waits for the batches embedding ahead and moves their
// results into v.ops; the operations still without a vector (the last
// partial batch, a failed batch) are embedded by embedPending.
func (v *VectorProjection) collectAhead() {
	for _, j := range v.jobs {
		<-j.done
		if j.vecs == nil {
			continue
		}
		for k, at := range j.at {
			if j.codes[k] == nil {
				continue // embedPending and codePending redo it
			}
			op := &v.ops[at]
			op.vec, op.rec, op.code, op.content = j.vecs[k], j.recs[k], j.codes[k], ""
		}
	}
	v.jobs, v.queued = nil, nil
}

// dropAhead waits for the batches embedding ahead and forgets them (Reset,
// Close: no goroutine outlives the projection's state).
func (v *VectorProjection) dropAhead() {
	for _, j := range v.jobs {
		<-j.done
	}
	v.jobs, v.queued = nil, nil
}
