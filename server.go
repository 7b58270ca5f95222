package ucl

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
)

// maxRequestBytes bounds one request body. Decoding a request costs a
// few times its size (the JSON text, the strings it holds, the events
// built from them), so it is refused from its declared length before it
// is read, and cut where it runs over; a Client sends a larger append in
// pieces (appendPieceBytes).
const maxRequestBytes = 64 << 20

// SocketPath returns the owner's socket path of the store in dir.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// Handler returns the JSON API of api over HTTP (package doc: routes and
// bodies). Serve mounts it on the store's socket; other servers may mount
// it elsewhere.
func Handler(api API) http.Handler {
	mux := http.NewServeMux()
	route(mux, "append", api.Append)
	route(mux, "remember", api.Remember)
	route(mux, "tombstone", api.Tombstone)
	route(mux, "search", api.Search)
	route(mux, "context", api.Context)
	route(mux, "sessions", api.Sessions)
	route(mux, "session", api.Session)
	route(mux, "get", api.Get)
	route(mux, "index", api.Index)
	route(mux, "dedupe", api.Dedupe)
	route(mux, "edit", api.Edit)
	route(mux, "thread", api.Thread)
	route(mux, "catch_up", api.CatchUp)
	route(mux, "projection_status", api.ProjectionStatus)
	route(mux, "rebuild_projections", api.RebuildProjections)
	route(mux, "verify_projections", api.VerifyProjections)
	route(mux, "push", api.Push)
	route(mux, "sync_status", api.SyncStatus)
	route(mux, "status", api.Status)
	route(mux, "checkpoints", api.Checkpoints)
	route(mux, "share_grant", api.ShareGrant)
	route(mux, "share_revoke", api.ShareRevoke)
	route(mux, "share_list", api.ShareList)
	route(mux, "share_pull", api.SharePull)
	route(mux, "prove", api.Prove)
	route(mux, "audit_show", api.AuditShow)
	route(mux, "audit_verify", api.AuditVerify)
	route(mux, "snapshot_create", api.SnapshotCreate)
	route(mux, "snapshot_list", api.SnapshotList)
	route(mux, "snapshot_verify", api.SnapshotVerify)
	route(mux, "snapshot_restore", api.SnapshotRestore)
	route(mux, "snapshot_publish", api.SnapshotPublish)
	route(mux, "rotate_keys", api.RotateKeys)
	stream(mux, "replay", "line", func(ctx context.Context, req ReplayRequest, emit func(any) error) error {
		return api.Replay(ctx, req, func(l json.RawMessage) error { return emit(l) })
	})
	stream(mux, "audit_log", "entry", func(ctx context.Context, req AuditLogRequest, emit func(any) error) error {
		return api.AuditLog(ctx, req, func(e AuditEntry) error { return emit(e) })
	})
	return mux
}

type response struct {
	Result any        `json:"result"`
	Error  *wireError `json:"error,omitempty"`
}

func decodeRequest(w http.ResponseWriter, r *http.Request, req any) bool {
	if r.ContentLength > maxRequestBytes {
		writeJSON(w, response{Error: toWire(badRequest("request of %d bytes is over the limit of %d", r.ContentLength, maxRequestBytes))})
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err := dec.Decode(req); err != nil {
		writeJSON(w, response{Error: toWire(badRequest("decode request: %v", err))})
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) // a client that went away has nothing to read it
}

func route[Req, Res any](mux *http.ServeMux, name string, f func(context.Context, Req) (*Res, error)) {
	mux.HandleFunc("POST /v1/"+name, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if !decodeRequest(w, r, &req) {
			return
		}
		res, err := f(r.Context(), req)
		out := response{Error: toWire(err)}
		if res != nil {
			out.Result = res
		}
		writeJSON(w, out)
	})
}

func stream[Req any](mux *http.ServeMux, name, field string, f func(context.Context, Req, func(any) error) error) {
	mux.HandleFunc("POST /v1/"+name, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if !decodeRequest(w, r, &req) {
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		err := f(r.Context(), req, func(v any) error { return enc.Encode(map[string]any{field: v}) })
		if err != nil {
			enc.Encode(map[string]any{"error": toWire(err)})
			return
		}
		enc.Encode(map[string]any{"done": true})
	})
}

// Serve answers the API on the store's socket (DIR/ucl.sock, mode 0600)
// until ctx is done, then removes the socket. Only the owner serves: the
// Store holds the store lock, so a socket file already there was left by
// a dead owner and is replaced.
func (s *Store) Serve(ctx context.Context) error {
	path := SocketPath(s.st.Dir)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	// The store directory is 0700; the mode is the socket's own guard.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: Handler(s)}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			srv.Shutdown(context.Background())
		case <-done:
		}
	}()
	err = srv.Serve(ln)
	close(done)
	<-stopped
	os.Remove(path)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
