package web

import (
	_ "embed"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

//go:embed live.js
var liveJS string

//go:embed live.css
var liveCSS string

// Handler serves the page and its data, read-only: GET and HEAD only
// (anything else is 405), and, unless public, only to a Host that names
// a loopback address or localhost (a page of another site that a DNS
// name rebinds to 127.0.0.1 is refused).
//
//	GET /             the page (self-contained: script and style inline)
//	GET /api/state    the State, as JSON
//	GET /api/stream   the State at each change, as server-sent events
//	GET /api/diagram  the last window's diagram (internal/diagram's page)
func (s *Server) Handler(public bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", s.page)
	mux.HandleFunc("/api/state", s.stateJSON)
	mux.HandleFunc("/api/stream", s.stream)
	mux.HandleFunc("/api/diagram", s.diagramPage)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		// Nothing from elsewhere: inline script and style, frames and
		// fetches of this server only.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: this page changes nothing (GET and HEAD only)", http.StatusMethodNotAllowed)
			return
		}
		if !public && !loopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("host %q is not a loopback address: open the page as http://127.0.0.1:PORT/ or http://localhost:PORT/", r.Host), http.StatusMisdirectedRequest)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// loopbackHost: the Host header names localhost or a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

func (s *Server) stateJSON(w http.ResponseWriter, r *http.Request) {
	b, _, err := s.Snapshot()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// stream sends the state at once, then at each change (at most one per
// 50ms), and a comment every 15s so that proxies keep it open.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if r.Method == http.MethodHead {
		return
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		b, changed, err := s.Snapshot()
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return
		}
		fl.Flush()
	wait:
		for {
			select {
			case <-r.Context().Done():
				return
			case <-keep.C:
				if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
					return
				}
				fl.Flush()
			case <-changed:
				break wait
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *Server) diagramPage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b := s.diagram
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if b == nil {
		fmt.Fprint(w, `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>no diagram yet</title></head><body><p>No diagram yet: the trace window has no events (see the page).</p></body></html>`)
		return
	}
	w.Write(b)
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	title := html.EscapeString(s.cfg.Daemon + ": the lab, live")
	fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>
%s</style></head>
<body>
<header><h1>%s</h1><p id="subtitle">connecting…</p><p id="error" hidden></p></header>
<section id="lab"><h2>Members</h2><div id="table"></div><ul id="notes"></ul>
<h3>Clock offset from this member, ± its bound, over the last minute</h3><div id="charts"></div></section>
<section id="trace"><h2>Space-time diagram of the last seconds</h2><p id="traceinfo"></p><ul id="tracemembers"></ul>
<p><label><input type="checkbox" id="follow" checked> follow the run (untick to hold this drawing and explore it)</label></p>
<iframe id="diagram" title="space-time diagram"></iframe></section>
<section id="verdicts"><h2>Checker's verdicts over the window</h2><p id="verdictinfo"></p><table id="vtable"></table><ul id="vnotes"></ul></section>
<script>
%s</script>
</body></html>
`, title, liveCSS, title, liveJS)
}
