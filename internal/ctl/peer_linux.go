package ctl

import (
	"encoding/binary"
	"errors"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/synclab/synclab/internal/rawsock"
)

// peerCredentials asks the kernel who is at the other end of c.
func peerCredentials(c net.Conn) (Peer, error) {
	uc, ok := rawsock.Unwrap(c).(*net.UnixConn)
	if !ok {
		return Peer{}, errors.New("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var (
		p    Peer
		oerr error
	)
	err = raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		cred, oerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if oerr != nil {
			return
		}
		p = Peer{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid}
		// Supplementary groups need Linux 4.13; before that a group member
		// whose primary group differs is refused, which fails closed.
		p.Groups, _ = peerGroups(int(fd))
	})
	if err == nil {
		err = oerr
	}
	return p, err
}

// peerGroups reads SO_PEERGROUPS: an array of gid_t the kernel captured
// at connect time. x/sys offers no typed getter for it.
func peerGroups(fd int) ([]uint32, error) {
	buf := make([]byte, 64*4)
	for {
		n := uint32(len(buf))
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&n)), 0)
		if errno == unix.ERANGE && int(n) > len(buf) {
			// The kernel wrote the size it needs into n.
			buf = make([]byte, n)
			continue
		}
		if errno != 0 {
			return nil, errno
		}
		gids := make([]uint32, n/4)
		for i := range gids {
			gids[i] = binary.NativeEndian.Uint32(buf[4*i:])
		}
		return gids, nil
	}
}
