package rawsock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// pair returns two ends of a connection of network ("tcp" or "unix"),
// the client's wrapped.
func pair(t *testing.T, network string) (client, server net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	c, err := net.Dial(network, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s == nil {
		t.FailNow()
	}
	w := Wrap(c)
	if _, ok := w.(*Conn); !ok {
		t.Fatalf("Wrap(%T) = %T, want *Conn", c, w)
	}
	t.Cleanup(func() { w.Close(); s.Close() })
	return w, s
}

func TestConn(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			c, s := pair(t, network)

			// Round trip both ways.
			if n, err := c.Write([]byte("ping")); n != 4 || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			buf := make([]byte, 16)
			if n, err := io.ReadFull(s, buf[:4]); n != 4 || err != nil || string(buf[:4]) != "ping" {
				t.Fatalf("server read %q, %v", buf[:n], err)
			}
			s.Write([]byte("pong"))
			if n, err := io.ReadFull(c, buf[:4]); n != 4 || err != nil || string(buf[:4]) != "pong" {
				t.Fatalf("client read %q, %v", buf[:n], err)
			}

			// A read with nothing to read waits in the poller and ends at
			// the deadline with net's timeout error.
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
			}
			var ne net.Error
			_, err := c.Read(buf)
			if !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("read past the deadline: %v, want a net.Error that says Timeout", err)
			}
			if oe, ok := err.(*net.OpError); !ok || oe.Op != "read" {
				t.Fatalf("read past the deadline: %#v, want a *net.OpError of op read, as net.Conn's", err)
			}
			c.SetReadDeadline(time.Time{})

			// A read blocked in the poller is woken by data.
			go func() {
				time.Sleep(10 * time.Millisecond)
				s.Write([]byte("late"))
			}()
			if n, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:n]) != "late" {
				t.Fatalf("waiting read got %q, %v", buf[:n], err)
			}

			// More than the socket buffers hold: Write waits for room and
			// writes it all, in order.
			big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
			done := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(s, int64(len(big))))
				done <- b
			}()
			if n, err := c.Write(big); n != len(big) || err != nil {
				t.Fatalf("big Write = %d, %v", n, err)
			}
			if got := <-done; !bytes.Equal(got, big) {
				t.Fatalf("the peer read %d bytes, not the %d written in order", len(got), len(big))
			}

			// A write with no room ends at the write deadline.
			// (Loopback TCP buffers a few MiB: write until they are full.)
			c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			var werr error
			for i := 0; i < 64 && werr == nil; i++ {
				_, werr = c.Write(big)
			}
			if !errors.Is(werr, os.ErrDeadlineExceeded) {
				t.Fatalf("write with no reader: %v, want os.ErrDeadlineExceeded", werr)
			}
			c.SetWriteDeadline(time.Time{})

			// The peer's close is the end of the stream, once what it
			// sent is read.
			s.Close()
			for {
				_, err := c.Read(buf)
				if err == io.EOF {
					break
				}
				if err != nil {
					// A close with unread data (the big write) is a reset.
					if !errors.Is(err, syscall.ECONNRESET) {
						t.Fatalf("read after the peer closed: %v, want io.EOF or ECONNRESET", err)
					}
					break
				}
			}
			// Writing to a closed peer fails (EPIPE or a reset), and
			// raises no SIGPIPE: the test would die of it.
			for range 100 {
				if _, err = c.Write([]byte("x")); err != nil {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("write to a closed peer: %v, want EPIPE or ECONNRESET", err)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "write" {
				t.Fatalf("write error %v: want a *net.OpError of op write", err)
			}
		})
	}
}

// Close wakes a read waiting in the poller, with net.ErrClosed.
func TestCloseWakesRead(t *testing.T) {
	c, _ := pair(t, "unix")
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read on a closed conn: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the read")
	}
}

func TestWrapOther(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Wrap(a) != a {
		t.Fatal("Wrap of a connection with no descriptor must return it as is")
	}
	if Unwrap(a) != a {
		t.Fatal("Unwrap of an unwrapped connection must return it")
	}
	c, _ := pair(t, "unix")
	if _, ok := Unwrap(c).(*net.UnixConn); !ok {
		t.Fatalf("Unwrap = %T, want *net.UnixConn", Unwrap(c))
	}
}

// The wrapper passes on what the connection's users look for beyond
// net.Conn: the descriptor (ctl's idle check, the peer's credentials)
// and the half-close (net/http).
func TestPassesOn(t *testing.T) {
	c, s := pair(t, "unix")
	if _, ok := c.(syscall.Conn); !ok {
		t.Fatal("a *Conn is not a syscall.Conn")
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	// The peer reads the end of the stream; the reading side still works.
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("peer read after CloseWrite: %v, want io.EOF", err)
	}
	s.Write([]byte("x"))
	if n, err := c.Read(make([]byte, 1)); n != 1 || err != nil {
		t.Fatalf("read after CloseWrite: %d, %v", n, err)
	}
}
