// Package scenario replays protocol scenario scripts in tests, like
// etcd-io/raft's interaction tests: a script is a sequence of commands
// ("> cmd args"), each followed by its expected output, with comment lines
// starting with #. A test hands Files a function that runs one script and
// returns it with each command's output regenerated; Files compares, or with
// -rewrite writes the files anew (read the diff: it is the change, in
// protocol terms). The token ring's scripts use it; any core's can.
package scenario
