package main

import "golang.org/x/sys/unix"

// mayCorrectClock says whether this process holds CAP_SYS_TIME, without
// which the kernel refuses every correction of the system clock.
func mayCorrectClock() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true // unknown: let the kernel say
	}
	return data[0].Effective&(1<<unix.CAP_SYS_TIME) != 0
}
