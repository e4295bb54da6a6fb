package main

import (
	"testing"

	"github.com/synclab/synclab/internal/testkit/apptest"
)

// TestReferenceDocs checks the manual page's examples and exit statuses
// against this binary's commands, and docs/reference/timed.md against its
// command line (-docs.update rewrites it).
func TestReferenceDocs(t *testing.T) { apptest.CheckDocs(t, newApp()) }
