package ucl

import "golang.org/x/sys/unix"

// peerUID returns the uid of the process that connected the unix socket
// fd (SO_PEERCRED: the credentials at connect time, kept by the kernel).
func peerUID(fd int) (int, error) {
	u, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return 0, err
	}
	return int(u.Uid), nil
}
