package projstd

// ChunkSession returns the session of a live chunk from the projection's
// in-memory metadata (query.ChunkSessioner: the query engine drops ANN
// hits outside a session filter without reading their chunks). Reads run
// beside other reads; Apply and Commit run under the engine's exclusive
// lock, never beside it.
func (v *VectorProjection) ChunkSession(id string) (string, bool) {
	m, ok := v.meta[id]
	return m.session, ok
}
