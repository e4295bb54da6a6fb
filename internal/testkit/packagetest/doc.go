// Package packagetest tests scripts/package.sh, synclab's Debian package,
// the way an administrator uses it: it builds the package for this
// machine's architecture, checks what it holds, runs lintian on it,
// installs it with dpkg -i (policy-rc.d forbidding service starts), checks
// the installed files, `systemd-analyze verify`s the installed units, runs
// `timed --version` and `timed keygen`, then removes the package (the
// configuration, the key and the state stay) and purges it (they go).
//
// It changes the host, so it runs only as root, and only on a host that
// has none of the package's files, state directories or key (it says which
// one it found otherwise); it purges what it installed even when it fails.
// As a normal user it skips; with CI=true a host where it cannot run (a
// missing tool, files in the way) is a failure, since CI must run it.
//
// The package has no code of its own: the tests are the point.
package packagetest
