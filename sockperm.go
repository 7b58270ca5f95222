package ucl

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// errForeignPeer is returned by a peer check when the process at the
// other end of the owner's socket runs as another user: the owner answers
// only its own user, whatever the socket's file mode.
var errForeignPeer = errors.New("ucl: socket peer is another user")

// listenOwner creates the owner's socket at path so that no other user
// can connect to it at any moment, whatever the umask and the mode of the
// store directory, and returns a listener that refuses connections from
// other users (peer credentials, peercred_*.go).
//
// Why it is race-free: Listen creates the socket file with mode
// 0777&^umask, and a chmod after it leaves a window in which another user
// can connect (and a connection, once made, outlives the chmod). So the
// socket is bound inside a fresh directory of mode 0700 (MkdirTemp; a
// umask only removes bits), where no other user can reach it, chmodded
// to 0600 there, and only then renamed to path. The rename is atomic and
// keeps the inode, so the name path never refers to a socket with a
// wider mode. The peer check covers what file modes cannot (a store
// directory copied or re-moded by hand, a socket path in a shared place).
func listenOwner(path string) (net.Listener, error) {
	removeListenDirs(filepath.Dir(path))
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".s")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	defer os.RemoveAll(tmp)
	// A short name: a unix socket path holds about 104 bytes.
	priv := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", priv)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	ul := ln.(*net.UnixListener)
	// The listener would unlink priv on Close, a name that is gone by
	// then; Serve removes path itself.
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(priv, 0o600); err != nil {
		ul.Close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	if err := os.Rename(priv, path); err != nil {
		ul.Close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	return &peerListener{UnixListener: ul, uid: os.Getuid(), kill: os.Getenv(killEnv)}, nil
}

// killEnv names a fault-injection seam for the crash tests of the
// clients (test/): with "before-write" the owner kills itself (SIGKILL)
// when it has read the start of an append or remember request, before it
// applies it; with "after-write" when it starts answering one, after the
// events are durable. The kill is the real thing, at the one moment a
// timed kill cannot hit reliably.
const killEnv = "UCL_TEST_OWNER_KILL"

// removeListenDirs removes the private directories of listenOwner that an
// owner killed between making one and renaming its socket left in dir:
// directories named .s* holding nothing but a socket named s. Only the
// owner (holding the store lock) listens, so none is in use.
func removeListenDirs(dir string) {
	ms, _ := filepath.Glob(filepath.Join(dir, ".s*"))
	for _, m := range ms {
		ents, err := os.ReadDir(m)
		if err != nil || len(ents) > 1 || (len(ents) == 1 && ents[0].Name() != "s") {
			continue
		}
		os.RemoveAll(m)
	}
}

// peerListener accepts only connections whose peer runs as uid. Others
// are closed before a byte is read from them.
type peerListener struct {
	*net.UnixListener
	uid  int
	kill string // killEnv's value
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if err := checkPeer(c, l.uid); err != nil {
			c.Close()
			continue
		}
		if l.kill != "" {
			return &killConn{Conn: c, mode: l.kill}, nil
		}
		return c, nil
	}
}

// checkPeer returns nil when the peer of c runs as uid, errForeignPeer
// when it runs as another user, and an error when its credentials cannot
// be read (the connection is then refused too).
func checkPeer(c *net.UnixConn, uid int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	var peer int
	var perr error
	if err := rc.Control(func(fd uintptr) { peer, perr = peerUID(int(fd)) }); err != nil {
		return fmt.Errorf("peer credentials: %w", err)
	}
	if errors.Is(perr, errors.ErrUnsupported) {
		return nil // no peer credentials here: the file modes guard alone
	}
	if perr != nil {
		return fmt.Errorf("peer credentials: %w", perr)
	}
	if peer != uid {
		return fmt.Errorf("peer uid %d, owner uid %d: %w", peer, uid, errForeignPeer)
	}
	return nil
}

// killConn is the killEnv seam on one connection.
type killConn struct {
	net.Conn
	mode  string
	head  []byte // the first bytes read: the request line
	write bool   // the request is an append or remember
}

func (c *killConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if len(c.head) < 32 {
		c.head = append(c.head, p[:min(n, 32-len(c.head))]...)
		h := string(c.head)
		c.write = strings.HasPrefix(h, "POST /v1/append ") || strings.HasPrefix(h, "POST /v1/remember ")
		if c.write && c.mode == "before-write" {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // until the signal lands
		}
	}
	return n, err
}

func (c *killConn) Write(p []byte) (int, error) {
	if c.write && c.mode == "after-write" {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // until the signal lands
	}
	return c.Conn.Write(p)
}
