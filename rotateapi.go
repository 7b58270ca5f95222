package ucl

import (
	"context"
	"fmt"
	"os"

	"github.com/unlimitedcontext/ucl/internal/store"
	"github.com/unlimitedcontext/ucl/rotate"
)

// RotateKeysRequest asks for a vault-key rotation (shred).
type RotateKeysRequest struct {
	// KeysPerEvent caps the DEKs per rekey event (0: rotate.DefaultKeysPerEvent).
	KeysPerEvent int      `json:"keys_per_event,omitempty"`
	Progress     Progress `json:"-"`
}

// RotateKeysResult says what a rotation did (package rotate).
type RotateKeysResult = rotate.Result

// rotateEnv is the seam package rotate works on: the log, the keyring, the
// metadata's key fingerprint and the projections and cache it closes and
// rebuilds. The caller holds projMu.
func (s *Store) rotateEnv() rotate.Env {
	return rotate.Env{
		Dir: s.st.Dir, Log: s.st.Log, Keys: s.st.Keys,
		KeyFingerprint: func() string { return s.st.Meta.KeyFingerprint },
		SetKeyFingerprint: func(fp string) error {
			m := s.st.Meta
			m.KeyFingerprint = fp
			if err := store.WriteMeta(s.st.Dir, m); err != nil {
				return err
			}
			s.st.Meta = m
			return nil
		},
		CloseProjections: s.closeSetLocked,
		CloseEmbedCache: func() error {
			if s.cache == nil {
				return nil
			}
			err := s.cache.Close()
			s.cache, s.popts = nil, nil
			return err
		},
		Rebuild: func(ctx context.Context, p rotate.Progress) error {
			_, err := s.caughtUpLocked(ctx, Progress(p))
			return err
		},
		Appended: s.notifyAppend,
	}
}

// RotateKeys shreds tombstoned content with a new vault-key epoch
// (rotate.Start says how; crash safe through DIR/rotate.journal). It
// refuses a store opened with a vault key from outside it
// (rotate.ErrKeyOutsideStore).
func (s *Store) RotateKeys(ctx context.Context, req RotateKeysRequest) (*RotateKeysResult, error) {
	if err := s.needKeys(); err != nil {
		return nil, err
	}
	if p := s.opts.VaultKeyPath; (p == "" && s.opts.Keys != nil) || (p != "" && !sameFile(p, store.VaultKeyFile(s.st.Dir))) {
		return nil, fmt.Errorf("rotate keys: %w: a rotation rewrites %s", rotate.ErrKeyOutsideStore, store.VaultKeyFile(s.st.Dir))
	}
	s.projMu.Lock()
	defer s.projMu.Unlock()
	return rotate.Start(ctx, s.rotateEnv(), req.KeysPerEvent, rotate.Progress(req.Progress))
}

// resumeRotation finishes or rolls back a rotation a crash interrupted;
// Open calls it. It returns nil when there was none.
func (s *Store) resumeRotation(ctx context.Context) (*RotateKeysResult, error) {
	from, to, ok, err := rotate.Interrupted(s.st.Dir)
	if err != nil || !ok {
		return nil, err
	}
	if err := s.needKeys(); err != nil {
		return nil, fmt.Errorf("finish the interrupted key rotation (epoch %d to %d): %w", from, to, err)
	}
	s.projMu.Lock()
	defer s.projMu.Unlock()
	return rotate.Resume(ctx, s.rotateEnv())
}

// shredCut returns the seq before which every tombstone is shredded
// (rotate.ShredCut).
func (s *Store) shredCut(ctx context.Context) (uint64, error) {
	return rotate.ShredCut(ctx, s.st.Log, s.st.Keys)
}

// sameFile reports whether two paths name the same existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
