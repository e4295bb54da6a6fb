// Package scenario replays protocol scenario scripts in tests, like
// etcd-io/raft's interaction tests: a script is a sequence of commands
// ("> cmd args"), each followed by its expected output, with comment lines
// starting with #. A test hands Files a function that runs one script and
// returns it with each command's output regenerated; Files compares, or with
// -rewrite writes the files anew (read the diff: it is the change, in
// protocol terms). The token ring's scripts use it; any core's can.
//
// # Drawing a script's run
//
// A script that runs on internal/sim is traced by the simulator itself
// (sim.RecordTraces). One that runs on a small hand-driven network (the
// token ring's: a slice of frames in flight, delivered by the test) gets the
// same traces from a Tracer: format v1 of internal/trace, one file per
// member, with frame ids, Lamport times and ground-truth vector clocks, so
// that internal/diagram (`X trace draw`) draws it as the notes draw a run.
// A runner adopts it in four lines:
//
//	tr := scenario.Traced(t, "mutexd", ids, start)  // when the network is made
//	tr.Local(now, id, e)                            // each core.Event of a Ready, before its sends
//	fs := tr.Send(now, id, receivers, m.Kind, m.Payload) // each Message: one frame per receiver
//	tr.Recv(now, fs[i])                             // when frame i is handed to its core
//
// (a frame the network loses is simply never received: an arrow to
// nowhere). Then every test binary that imports this package takes
// -scenario.traces DIR and writes each traced script's traces to
// DIR/<test>/n<ID>.trace:
//
//	go test ./pkg/mutex/tokenring -run TestScenarios -scenario.traces /tmp/ring
//	mutexd trace draw /tmp/ring/TestScenarios-handoff/*.trace -o handoff.svg
//
// And a test can check its own drawing: Tracer.Files, then diagram.Build,
// Diagram.Arrows (one per delivered frame) and Diagram.CheckCausality (the
// layout in the vectors' order), as the token ring's scenario network
// does for every script it runs (its Draw, under internal/testkit/mutexscript).
package scenario
