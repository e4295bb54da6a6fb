package main

import (
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/synclab/synclab/pkg/core"
)

func timedcoreDatagram(from netip.AddrPort, b []byte) core.Datagram {
	return core.Datagram{Addr: from, Data: b, Time: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
