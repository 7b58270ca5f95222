package mcpserver

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrNoToken is returned by HTTPHandler when it is given no bearer token: an
// MCP endpoint on TCP without one would let any local process read and
// forget memory.
var ErrNoToken = errors.New("mcpserver: an HTTP endpoint needs a bearer token")

// HTTPHandler serves the MCP server over streamable HTTP in stateless mode
// (every POST is a complete exchange, so any number of clients and restarts
// of the server need no session affinity). Requests must carry
// "Authorization: Bearer TOKEN"; others get 401 before reaching the server.
// Mount it at /mcp.
func HTTPHandler(srv *mcp.Server, token string) (http.Handler, error) {
	if token == "" {
		return nil, ErrNoToken
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(strings.TrimSpace(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ucl"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}
