package forge

import "golang.org/x/sys/unix"

func setHdrIncl(fd uintptr) error {
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_HDRINCL, 1)
}
