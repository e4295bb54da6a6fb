// Package testkit holds, in its subdirectories, the packages only tests,
// benchmarks and documentation checks import: the namespace lab
// (labnet), the end-to-end tests of the real binaries (e2e), the
// benchmarks (bench), headless Chromium for the pages (browser), the
// scenario harnesses (scenario, mutexscript, electscript), the fuzz
// programs (corefuzz), the package, install and documentation checks, a
// buffer for logs read while written (syncbuf), and the CI gate
// (testenv).
//
// Everything a daemon, a CLI or the demo runs lives beside this directory
// under internal/ (or under pkg/). The package's test keeps the line: no
// program imports a testkit package, and every other internal package is
// imported by a program.
package testkit
