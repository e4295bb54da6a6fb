package app

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
	"github.com/synclab/synclab/pkg/wire"
)

// DefaultKeyFile is where `X keygen` writes, and where scripts/install.sh
// puts the cluster key the units hand to the daemons.
const DefaultKeyFile = "/etc/synclab/cluster.key"

// KeySize is the length of a secret keygen makes: 256 bits, the size of
// HMAC-SHA256's output.
const KeySize = 32

// ErrKeyExists: keygen would overwrite a key file.
var ErrKeyExists = errors.New("key file exists")

// WriteNewKeyFile writes a key file holding one new random key (ID 1) at
// path, mode 0600, atomically: a reader sees the old file or the new one,
// never half of it. It refuses to replace an existing file unless force.
// It is `X keygen` for every binary, and what tests and the demo use to
// give their clusters a key.
func WriteNewKeyFile(path string, force bool) (wire.Key, error) {
	if !force {
		if _, err := os.Lstat(path); err == nil {
			return wire.Key{}, fmt.Errorf("%w: %s", ErrKeyExists, path)
		}
	}
	k, err := newKey(1)
	if err != nil {
		return wire.Key{}, err
	}
	return k, writeKeyFile(path, []wire.Key{k})
}

// AddNewKey appends a new random key to the key file at path, with the
// next free ID, after the keys already there: they keep signing, the new
// one is accepted everywhere the file is copied. The first step of a
// rotation.
func AddNewKey(path string) (wire.Key, []wire.Key, error) {
	keys, err := LoadKeys(path)
	if err != nil {
		return wire.Key{}, nil, err
	}
	var id uint32
	for _, k := range keys {
		id = max(id, k.ID)
	}
	if id == 1<<32-1 {
		return wire.Key{}, nil, fmt.Errorf("key file %s: no key ID left after %d", path, id)
	}
	k, err := newKey(id + 1)
	if err != nil {
		return wire.Key{}, nil, err
	}
	keys = append(keys, k)
	return k, keys, writeKeyFile(path, keys)
}

func newKey(id uint32) (wire.Key, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return wire.Key{}, fmt.Errorf("reading randomness: %w", err)
	}
	return wire.Key{ID: id, Secret: secret}, nil
}

func writeKeyFile(path string, keys []wire.Key) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes the file 0600 already; said again, since the
	// secret is written next.
	if err = tmp.Chmod(0o600); err != nil {
		return err
	}
	body := "# synclab cluster key: the same file on every member of the cluster, mode 0600.\n" +
		"# Made by `keygen`; rotated with `keygen --add` (docs/security.md).\n" +
		string(wire.FormatKeyFile(keys))
	if _, err = tmp.WriteString(body); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func keygenCommand(name string) *cli.Command {
	return &cli.Command{
		Name:      "keygen",
		Usage:     "write a new random cluster key file (mode 0600), the same format for timed, mutexd, electd and orderd",
		ArgsUsage: "[PATH] (default " + DefaultKeyFile + ")",
		Description: "Creates the shared key that authenticates the cluster's frames. Run it once, on one machine, then\n" +
			"copy that same file to every member (e.g. scp -p), mode 0600, and give each daemon --key-file PATH.\n" +
			"With --add, adds a new key to an existing file for a rotation: the old key keeps signing until the\n" +
			"new one is moved to the first line on every member.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "replace an existing key file (every member then needs the new file)"},
			&cli.BoolFlag{Name: "add", Usage: "add a new key to an existing key file (rotation), after the ones there"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return Usagef("keygen takes one argument, the key file's path (default %s)", DefaultKeyFile)
			}
			if c.Bool("force") && c.Bool("add") {
				return Usagef("keygen: --force replaces the file, --add keeps it: choose one")
			}
			path := DefaultKeyFile
			if c.NArg() == 1 {
				path = c.Args().First()
			}
			w := c.App.Writer
			if c.Bool("add") {
				k, keys, err := AddNewKey(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "added key %d to %s (%d keys; key %d still signs).\n"+
					"Copy the file to every member and restart the daemons; then move the line of key %d first\n"+
					"everywhere (and restart), then remove the old key's line everywhere.\n", k.ID, path, len(keys), keys[0].ID, k.ID)
				return nil
			}
			k, err := WriteNewKeyFile(path, c.Bool("force"))
			if errors.Is(err, ErrKeyExists) {
				return fmt.Errorf("%s exists: copy it to the members that lack it, or replace it with --force (then every member needs the new file), or rotate with --add", path)
			}
			if err != nil {
				return fmt.Errorf("keygen: %w", err)
			}
			fmt.Fprintf(w, "wrote %s (key %d, %d bits, mode 0600).\n"+
				"Copy this same file to every member of the cluster (scp -p %s HOST:%s), keep it mode 0600,\n"+
				"and give each daemon --key-file %s (%s=%s).\n",
				path, k.ID, 8*len(k.Secret), path, path, path, EnvVar(name, "key-file"), path)
			return nil
		},
	}
}

// checkKey turns a cluster without a key into a usage error that says what
// to run.
func checkKey(name string, cfg daemon.Config) error {
	err := daemon.CheckKey(cfg)
	if err == nil {
		return nil
	}
	env := func(flag string) string { return EnvVar(name, flag) }
	return Usagef("%v. Authenticate it:\n"+
		"    %s keygen %s          on one machine (every synclab daemon's keygen makes the same file)\n"+
		"    copy that same file to every member (mode 0600), and run every member with --key-file %s (%s=%s)\n"+
		"or run it unauthenticated, where any host on the LAN can forge and replay its frames: --insecure (%s=true)",
		err, name, DefaultKeyFile, DefaultKeyFile, env("key-file"), DefaultKeyFile, env("insecure"))
}
