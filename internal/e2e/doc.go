// Package e2e tests the real binaries as real processes on loopback: built
// once per test run, started with real flags, observed only through their
// CLIs (`X status --json`), stopped with real signals (SIGKILL, SIGTERM).
// It needs no privileges; the network-namespace tests that need root live
// with the lab harness (internal/labnet) and the daemons' lab tests.
package e2e
