package server

import "github.com/synclab/synclab/pkg/core"

var _ core.MetricsWriter = (*Server)(nil)

// Metrics exports the server's counters and what it advertises. A request
// over the rate limit is either kissed (synclab_ntp_server_kod_total) or,
// kissed recently, silenced (synclab_ntp_server_dropped_total with reason
// rate_limited): never both.
func (s *Server) Metrics(m *core.MetricSet) {
	st := s.Report()
	m.Counter("synclab_ntp_server_requests_total", "Well-formed NTP client requests (answered, kissed or rate-limited).", float64(st.Requests))
	m.Counter("synclab_ntp_server_replies_total", "NTP replies carrying time.", float64(st.Replies))
	m.Counter("synclab_ntp_server_authenticated_replies_total", "NTP replies signed with a client's key.", float64(st.Authenticated))
	m.Counter("synclab_ntp_server_kod_total", "Kiss-o'-death replies, by code.", float64(st.KoDRate), core.Label{Name: "code", Value: "RATE"})
	m.Counters("synclab_ntp_server_crypto_naks_total", "Crypto-NAK replies, by reason.", "reason", st.CryptoNAK)
	m.Counters("synclab_ntp_server_dropped_total", "Packets left without an answer, by reason.", "reason", st.Dropped)
	m.Counter("synclab_ntp_server_cristian_requests_total", "Authenticated, well-formed Cristian time requests.", float64(st.CristianRequests))
	m.Counter("synclab_ntp_server_cristian_replies_total", "Cristian time requests answered.", float64(st.CristianReplies))
	if rl := st.RateLimit; rl != nil {
		m.Gauge("synclab_ntp_server_rate_limit_clients", "Clients in the rate limiter's table.", float64(rl.Clients))
		m.Counter("synclab_ntp_server_rate_limit_evicted_total", "Rate-limiter entries pushed out by newer clients at a full table.", float64(rl.Evicted))
	}
	sys := st.System
	m.Gauge("synclab_ntp_server_stratum", "Stratum the server advertises (16: unsynchronised, clients refuse the time).", float64(sys.Stratum))
	m.GaugeBool("synclab_ntp_server_synchronized", "1 if the advertised leap indicator is not 'unsynchronised', else 0.", sys.Synchronized)
	m.Gauge("synclab_ntp_server_root_delay_seconds", "Root delay the server advertises.", float64(sys.RootDelayNs)/1e9)
	m.Gauge("synclab_ntp_server_root_dispersion_seconds", "Root dispersion the server advertises.", float64(sys.RootDispersionNs)/1e9)
}
