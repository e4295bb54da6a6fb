// Package app is what the four binaries share on the command line: the
// urfave/cli/v2 app skeleton with the common `run` flags (each also read from
// an environment variable NAME_FLAG, so a systemd EnvironmentFile configures a
// host), the lab file every daemon reads beneath them (Lab: the lab described
// once, the hosts at each daemon's port, each host finding its own entry by
// its addresses; its values go through the flags, so flag > variable > lab
// file > default and the resolved daemon.Config stays the one source; `run
// --check` prints it), their translation into a daemon.Config, the `status`
// client command (its human rendering: one style for every measured time,
// FormatDuration), `version` (BuildInfo),
// `keygen` (the cluster key file, one implementation for the three binaries,
// which tests and the demo call too: WriteNewKeyFile), `man` (the manual
// page, every flag with its variable) and `completion bash|zsh`, and the
// exit-code convention (0 success, 1 failure, 2 usage error). A cluster
// needs a key or --insecure: without either, `run` exits 2 saying what to
// run.
//
// A binary supplies a Spec: its name, its extra run flags, a Build function
// that finishes the daemon.Config and returns the core to run, and how to
// print its status for humans. The CLI is a thin client of the daemon's
// control API; it never implements protocol logic itself.
package app
