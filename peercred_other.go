//go:build !linux && !darwin && !freebsd

package ucl

import "errors"

// peerUID is not available here: the socket's file mode (and its private
// directory at creation, sockperm.go) is the only guard.
func peerUID(int) (int, error) { return 0, errors.ErrUnsupported }
