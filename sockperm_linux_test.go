package ucl

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// otherUID is the second user of the socket tests (nobody).
const otherUID = 65534

// asOtherUser runs fn on an OS thread whose credentials are otherUID's.
// setuid(2) called raw changes only the calling thread (the libc and Go
// wrappers change every thread), and a goroutine that ends locked to its
// thread takes the thread with it, so no other goroutine ever runs as
// otherUID. Socket syscalls made by fn (connect, read, write) happen on
// this thread, as the kernel's permission and SO_PEERCRED checks see it.
func asOtherUser(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETGID, otherUID, 0, 0); e != 0 {
			t.Errorf("setgid: %v", e)
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETUID, otherUID, 0, 0); e != 0 {
			t.Errorf("setuid: %v", e)
			return
		}
		fn()
	}()
	<-done
}

// tryReplay connects to path as it stands and asks for a replay; it
// returns whether the connect succeeded and what came back.
func tryReplay(path string) (connected bool, answer string) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, ""
	}
	defer syscall.Close(fd)
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		return false, ""
	}
	req := "POST /v1/replay HTTP/1.1\r\nHost: ucl\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	syscall.Write(fd, []byte(req))
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		out = append(out, buf[:n]...)
		if strings.Contains(string(out), `"done":true`) {
			break
		}
	}
	return true, string(out)
}

// Issue 29.2: with the store directory at 0755 and the owner's umask 000,
// another local user connected in the window between Listen and the chmod
// to 0600 and read plaintext with POST /v1/replay; and once connected, or
// with any socket mode that lets it reach the socket, nothing refused it.
// Here a second uid races every Serve start (connecting in a loop), then
// connects with the socket's mode opened wide: it must never get an
// answer, and never even connect while the mode is the owner's.
func TestSocketOtherUserCannotReadStore(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to act as a second uid (setuid); run as root to test the socket against another user")
	}
	s := newTestStore(t)
	if _, err := s.Append(context.Background(), AppendRequest{JSONL: testJSONL}); err != nil {
		t.Fatal(err)
	}
	// Let the other user reach the store directory, as a store directory
	// at 0755 does.
	for d := s.Dir(); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := SocketPath(s.Dir())

	var connects, answers atomic.Int64
	var leaked atomic.Value
	const starts = 30
	for i := 0; i < starts; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		var racing sync.WaitGroup
		stop := make(chan struct{})
		racing.Add(1)
		go func() {
			defer racing.Done()
			asOtherUser(t, func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					ok, ans := tryReplay(path)
					if ok {
						connects.Add(1)
					}
					if ans != "" {
						answers.Add(1)
						leaked.Store(ans)
					}
				}
			})
		}()
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx) }()
		c := waitDial(t, s.Dir(), done)
		c.Close()
		close(stop)
		racing.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := connects.Load(); n > 0 {
		t.Errorf("another uid connected %d times to the owner's socket while it started (%d starts, umask 000, directory 0755)", n, starts)
	}

	// Whatever the file modes: open the socket to everyone; the peer
	// check must still refuse the other uid.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	waitDial(t, s.Dir(), done).Close()
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	var connected bool
	asOtherUser(t, func() {
		var ans string
		connected, ans = tryReplay(path)
		if ans != "" {
			answers.Add(1)
			leaked.Store(ans)
		}
	})
	if !connected {
		t.Fatal("the other uid could not connect to a socket of mode 0777: the test does not reach the peer check")
	}
	if n := answers.Load(); n > 0 {
		ans, _ := leaked.Load().(string)
		t.Fatalf("another uid got %d answers from the owner, e.g. %.200q", n, ans)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// waitDial waits until the owner started by Serve (its result on done)
// answers, and returns a Client.
func waitDial(t *testing.T, dir string, done chan error) *Client {
	t.Helper()
	for {
		c, err := Dial(dir)
		if err == nil {
			return c
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v", err)
		default:
		}
		runtime.Gosched()
	}
}
