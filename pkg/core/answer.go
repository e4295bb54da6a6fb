package core

// Answerer is implemented by a core that answers some datagrams on the
// spot, by itself: a server of a request/response protocol (timed's NTP
// server, which answers mode-3 requests and Cristian's time requests).
// A driver that reads datagrams in batches asks it first, datagram by
// datagram, and writes the answers of a batch together: no StepDatagram
// and Ready round, no report of the write, no allocation, per request.
// The driver serialises Answer with every other call into the core, as it
// does StepDatagram.
type Answerer interface {
	// Answer handles d when it is a request the core answers alone, and
	// reports handled: there is then nothing else to do about d but to
	// write ans, the answer, if it has one (ans.Data nil: dropped, counted
	// by the core, err saying why). ans.Data is appended to buf[:0], which
	// the driver owns and reuses once ans is written; the core keeps no
	// reference to buf or to d.Data. The driver finishes ans as it would a
	// Ready datagram (NTPStamp, NTPSign) right before the write. When d is
	// not such a request, Answer changes nothing and reports handled
	// false: the driver steps d with StepDatagram.
	Answer(d Datagram, buf []byte) (ans Datagram, handled bool, err error)
}

// AnswerStamper is an Answerer that wants to know when some of its answers
// really left: after writing an answer with TxStamp, the driver calls
// AnswerSent with the answer's bytes as written and, as Time, the kernel's
// transmit stamp on the local clock. An answer the kernel gave no stamp
// for is not reported (the core keeps nothing for it). An NTP server in
// interleaved mode sends that stamp in its next answer to the client.
// AnswerSent is serialised with every other call into the core.
type AnswerStamper interface {
	AnswerSent(ans Datagram)
}
