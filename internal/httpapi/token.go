package httpapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/unlimitedcontext/ucl/internal/fsutil"
)

// TokenName is the bearer token file inside the store directory.
const TokenName = "token"

// ErrBadToken is returned by LoadToken when DIR/token exists but holds no
// usable token.
var ErrBadToken = errors.New("httpapi: unusable token file")

// TokenPath returns the token file of the store in dir.
func TokenPath(dir string) string { return filepath.Join(dir, TokenName) }

// LoadToken returns the bearer token of the store in dir, creating it
// (32 random bytes, hex, mode 0600) when the file does not exist.
func LoadToken(dir string) (string, error) {
	path := TokenPath(dir)
	b, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(b))
		if len(tok) < 16 {
			return "", fmt.Errorf("read token %s: %w: want at least 16 characters", path, ErrBadToken)
		}
		return tok, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read token: %w", err)
	}
	return RotateToken(dir)
}

// RotateToken writes a new token to DIR/token (atomically, mode 0600) and
// returns it; the old token stops working when the server reloads it
// (restart).
func RotateToken(dir string) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	if err := fsutil.WriteFileAtomic(TokenPath(dir), []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	return tok, nil
}

// RequireToken wraps next so that only requests carrying "Authorization:
// Bearer token" reach it; the others get 401 and a JSON error.
func RequireToken(token string, next http.Handler) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(strings.TrimSpace(r.Header.Get("Authorization")))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ucl"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token> (the token is in the store's token file)", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}
