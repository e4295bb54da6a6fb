package web

import (
	"image/png"
	"os"
	"strings"
	"testing"
)

// TestScreenshotInDocs: the operations guide shows the live page, in a
// screenshot the e2e test takes in headless Chromium during a failover
// (regenerate it with go test ./internal/testkit/e2e/electd -run
// TestWebLive -docs.update, as root with chromium installed).
func TestScreenshotInDocs(t *testing.T) {
	const shot = "../../docs/web-live.png"
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("%v: take it with go test ./internal/testkit/e2e/electd -run TestWebLive -docs.update", err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", shot, err)
	}
	if cfg.Width < 1000 || cfg.Height < 800 {
		t.Errorf("%s is %dx%d: not the whole page", shot, cfg.Width, cfg.Height)
	}
	guide, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guide), "](web-live.png)") {
		t.Error("docs/operations.md does not show web-live.png")
	}
}
