// Package installtest tests scripts/install.sh, the installer of synclab's
// daemons: it runs the script with --dest into temporary directories (no
// root needed, nothing on the host touched) and checks what lands where,
// with which modes, that a second run changes nothing and says so, that
// --dry-run writes nothing, that an admin's /etc/default file survives,
// and that uninstall removes exactly what install put there.
//
// The package has no code of its own: the tests are the point.
package installtest
