// Package syncbuf is a bytes.Buffer that a test reads while another
// goroutine writes to it (a daemon's or a command's log).
//
//	var logs syncbuf.Buffer
//	go run(&logs)
//	... strings.Contains(logs.String(), "level=WARN") ...
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent Write and String; the zero value is empty
// and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
