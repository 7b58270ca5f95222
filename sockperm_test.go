package ucl

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The peer check reads the connecting process's uid (SO_PEERCRED on
// Linux, LOCAL_PEERCRED on the BSDs) and refuses any other than the
// owner's. Runs as any user: the "other" uid is the owner's plus one.
func TestPeerCredRefusesAnotherUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ucl.sock")
	// A private directory left by an owner killed while listening goes.
	if err := os.MkdirAll(filepath.Join(filepath.Dir(path), ".s123", "s"), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := listenOwner(path)
	if err != nil {
		t.Fatal(err)
	}
	pl := ln.(*peerListener)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v, want a socket of mode 0600", fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("listen left %d entries next to the socket, want only it", len(ents))
	}

	// checkPeer itself: this process's uid passes, another does not.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := pl.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, err := peerUID(-1); errors.Is(err, errors.ErrUnsupported) {
		t.Skip("no peer credentials on this platform: the file mode is the only guard")
	}
	if err := checkPeer(sc, os.Getuid()); err != nil {
		t.Fatalf("own uid refused: %v", err)
	}
	if err := checkPeer(sc, os.Getuid()+1); !errors.Is(err, errForeignPeer) {
		t.Fatalf("another uid: got %v, want errForeignPeer", err)
	}

	// The listener closes a foreign peer's connection unread and goes on
	// accepting: the peer reads EOF, never an answer.
	pl.uid = os.Getuid() + 1
	accepted := make(chan error, 1)
	go func() {
		c, err := pl.Accept()
		if err == nil {
			c.Close()
			err = errors.New("a foreign peer's connection was accepted")
		}
		accepted <- err
	}()
	c2, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Write([]byte("POST /v1/replay HTTP/1.1\r\nHost: ucl\r\nContent-Length: 2\r\n\r\n{}"))
	// EOF, or a reset when the close finds the request unread.
	if n, err := c2.Read(make([]byte, 1)); n != 0 || (err != io.EOF && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("foreign peer read %d bytes, err %v; want EOF or a reset", n, err)
	}
	pl.Close()
	if err := <-accepted; errors.Is(err, errForeignPeer) || (err != nil && !errors.Is(err, net.ErrClosed)) {
		t.Fatalf("accept: %v", err)
	}
}
