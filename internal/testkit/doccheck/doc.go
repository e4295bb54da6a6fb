// Package doccheck checks the repository's documentation as a reader
// meets it: README.md stays short (at most 300 lines); every relative link
// in README.md and docs/ resolves to a file of the repository, and every
// #anchor to a heading of its page; every flag a page names (`--probe`,
// `electd run --probe 0`) is a flag of a daemon (or a script), and each
// daemon page's flag tables give the binary's defaults, both read from
// the generated references; every event the daemons' source logs at WARN
// (those a daemon's EventLevel raises to WARN too) is in
// docs/operations.md's list for the operator, and every event that list
// names is logged at WARN; each binary's command reference
// (docs/reference/NAME.md, every flag) is at most two links from
// README.md; the daemon pages quote what a build from before bully's
// second state format says of it (TestDowngradeRefusalQuoted); and no help text, doc or comment refers to the course notes
// by file or "seed" number, which means nothing to a reader without the
// files (and "seed" is also the simulator's).
//
// docs/pending/ is left out: it holds notes the lead folds into the
// guides, in whatever shape their authors wrote them.
//
// The package has no code of its own: the tests are the point.
package doccheck
