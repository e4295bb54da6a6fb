package app

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/synclab/synclab/internal/daemon"
)

// labFlags are the flags every daemon's `run` takes to find the lab file
// and its own host in it; SYNCLAB_* variables are read by all four, so
// that /etc/default/synclab says it once per machine.
func labFlags(name string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "lab-file", EnvVars: []string{EnvVar(name, "lab-file"), "SYNCLAB_LAB_FILE"}, Value: DefaultLabFile,
			Usage: "the lab file `PATH` (TOML: the hosts with their IDs and addresses, each daemon's port and settings), the same on every machine; flags and environment variables override it. Not there: not used, unless named; \"\": none"},
		&cli.StringFlag{Name: "lab-host", EnvVars: []string{EnvVar(name, "lab-host"), "SYNCLAB_LAB_HOST"},
			Usage: "which of the lab file's hosts this machine is (`ID` or name), when its addresses do not say (default: the host whose address is one of this machine's)"},
	}
}

// labUse is what the lab file gave a daemon's run: for status, logs, and
// errors that name the line a value came from.
type labUse struct {
	lab     *Lab
	host    *LabHost
	how     string            // how the host was found
	members bool              // --id and --members came from the file
	why     string            // why not
	origins map[string]string // flag -> "FILE:LINE (field)"
	// overridden: the file's settings a flag or a variable replaced.
	overridden map[string]string
	warn       string // why the host's own settings could not apply
}

// source describes the configuration for status: "lab file PATH, host 2
// (pc2), address 10.0.0.2 on eth0".
func (u *labUse) source() string {
	if u == nil {
		return ""
	}
	s := "lab file " + u.lab.Path
	if u.host != nil {
		s += fmt.Sprintf(", host %s, %s", u.host, u.how)
	}
	if u.why != "" {
		s += "; " + u.why
	}
	return s
}

// explain adds to err, when it names a flag whose value came from the lab
// file, where that value is.
func (u *labUse) explain(err error) error {
	if u == nil || err == nil {
		return err
	}
	for _, f := range slices.Sorted(maps.Keys(u.origins)) {
		if strings.Contains(err.Error(), "--"+f) {
			return wrapSame(err, fmt.Sprintf("%v (%s set it: %s)", err, "the lab file", u.origins[f]))
		}
	}
	return err
}

// wrapSame is err with another message, of the same kind (a usage error
// stays one: exit 2).
func wrapSame(err error, msg string) error {
	if _, ok := err.(UsageError); ok {
		return UsageError{fmt.Errorf("%s", msg)}
	}
	return fmt.Errorf("%s", msg)
}

// applyLab reads the lab file the command names and sets, through the
// command's own flags, every value it gives that neither a flag nor an
// environment variable set (so that everything after sees one resolved
// configuration, as if the operator had typed it): the member list and
// this host's ID, the cluster name, key and insecurity at the top, then
// the daemon's settings, this host's own over its section's.
func applyLab(c *cli.Context, spec Spec) (*labUse, error) {
	path := c.String("lab-file")
	if path == "" {
		return nil, nil
	}
	lab, err := LoadLab(path, c.IsSet("lab-file"))
	var ce *labContentError
	if errors.As(err, &ce) {
		return nil, UsageError{err} // a mistake in the configuration, as a bad flag is: exit 2
	}
	if lab == nil || err != nil {
		return nil, err
	}
	u := &labUse{lab: lab, origins: map[string]string{}, overridden: map[string]string{}}
	name := spec.Name
	u.members = !c.IsSet("members") && lab.Joins(name, spec.ClusterOptional)

	switch {
	case u.members:
	case c.IsSet("members"):
		u.why = "--members given: its hosts are not " + name + "'s members"
	default:
		u.why = fmt.Sprintf("no cluster for %s: its [%s] section gives no port", name, name)
	}

	// This machine's host: needed for the members; for its own settings
	// otherwise, where it is only warned of if it cannot be found.
	var id uint32
	if c.IsSet("id") {
		id = uint32(min(c.Uint("id"), 1<<32-1))
	}
	hint := c.String("lab-host")
	if local, lerr := LocalAddrs(); lerr != nil && id == 0 && hint == "" {
		err = fmt.Errorf("%s: finding which host this machine is: %w (or say which it is: --lab-host ID, SYNCLAB_LAB_HOST=ID)", path, lerr)
	} else {
		u.host, u.how, err = lab.Host(id, hint, local)
	}
	if err != nil {
		if u.members || hint != "" {
			return nil, UsageError{err}
		}
		u.warn = err.Error() + "; the lab file's own settings for this host's " + name + " are not used"
	}

	set := func(flag, value, origin string) error {
		if err := c.Set(flag, value); err != nil {
			return UsageError{fmt.Errorf("%s: %q: %s", origin, value, wantOf(findFlag(c.Command.Flags, flag)))}
		}
		u.origins[flag] = origin
		return nil
	}
	top := func(key, flag, value string) error {
		if value == "" || c.IsSet(flag) {
			return nil
		}
		return set(flag, value, fmt.Sprintf("%s:%d (%s)", path, lab.lines[key], key))
	}
	if u.members {
		var list []string
		members := lab.Members(name)
		for _, id := range slices.Sorted(maps.Keys(members)) {
			list = append(list, fmt.Sprintf("%d=%s", id, members[id]))
		}
		if err := set("members", strings.Join(list, ","), fmt.Sprintf("%s (its [[host]] list)", path)); err != nil {
			return nil, err
		}
		if !c.IsSet("id") {
			if err := set("id", strconv.FormatUint(uint64(u.host.ID), 10), fmt.Sprintf("%s:%d (host %s, %s)", path, u.host.line, u.host, u.how)); err != nil {
				return nil, err
			}
		}
	}
	// The cluster's name only where there is a cluster (timed alone
	// refuses --cluster).
	if u.members || !spec.ClusterOptional {
		if err := top("cluster", "cluster", lab.Cluster); err != nil {
			return nil, err
		}
	}
	if err := top("key-file", "key-file", lab.KeyFile); err != nil {
		return nil, err
	}
	if lab.Insecure != nil {
		if err := top("insecure", "insecure", strconv.FormatBool(*lab.Insecure)); err != nil {
			return nil, err
		}
	}
	settings := lab.settingsFor(name, u.host)
	for _, key := range slices.Sorted(maps.Keys(settings)) {
		s := settings[key]
		origin := fmt.Sprintf("%s:%d (%s)", path, s.line, s.field)
		f := findFlag(c.Command.Flags, key)
		if f == nil {
			hint := ""
			if near := nearestFlag(c.Command.Flags, key); near != "" {
				hint = fmt.Sprintf(" (did you mean --%s?)", near)
			}
			return nil, UsageError{fmt.Errorf("%s: `%s run` has no flag --%s%s; `%s run --help` lists them", origin, name, key, hint, name)}
		}
		if c.IsSet(key) {
			u.overridden[key] = origin // a flag or an environment variable says otherwise
			continue
		}
		if _, many := f.(*cli.StringSliceFlag); s.list && !many {
			return nil, UsageError{fmt.Errorf("%s: --%s takes one value, not a list", origin, key)}
		}
		for _, v := range s.values {
			if err := set(key, v, origin); err != nil {
				return nil, err
			}
		}
	}
	return u, nil
}

// printCheck is `X run --check`: the resolved configuration, and where
// the lab file's part of it comes from.
func printCheck(c *cli.Context, cfg daemon.Config, u *labUse) error {
	w := c.App.Writer
	name := c.App.Name
	if cfg.Standalone() {
		fmt.Fprintf(w, "%s would run alone (no cluster)\n", name)
	} else {
		fmt.Fprintf(w, "%s would run as member %d of %d, cluster %q, listening on %s\n", name, cfg.ID, len(cfg.Members), cfg.Cluster, cfg.Members[cfg.ID])
		var list []string
		for _, id := range slices.Sorted(maps.Keys(cfg.Members)) {
			list = append(list, fmt.Sprintf("%d=%s", id, cfg.Members[id]))
		}
		fmt.Fprintf(w, "members: %s\n", strings.Join(list, ","))
	}
	for _, warning := range cfg.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	switch {
	case len(cfg.Keys) > 0:
		fmt.Fprintf(w, "key: %s (%s)\n", c.String("key-file"), Plural(uint64(len(cfg.Keys)), "key"))
	case cfg.Insecure:
		fmt.Fprintln(w, "key: none (--insecure: any host on the LAN can forge this cluster's frames)")
	}
	if u == nil {
		fmt.Fprintln(w, "lab file: none")
		return nil
	}
	fmt.Fprintf(w, "%s\n", u.source())
	if u.warn != "" {
		fmt.Fprintf(w, "warning: %s\n", u.warn)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range slices.Sorted(maps.Keys(u.origins)) {
		fmt.Fprintf(tw, "  --%s %s\t%s\n", f, flagText(c, f), u.origins[f])
	}
	for _, f := range slices.Sorted(maps.Keys(u.overridden)) {
		fmt.Fprintf(tw, "  --%s %s\toverridden here (a flag or variable), not %s\n", f, flagText(c, f), u.overridden[f])
	}
	return tw.Flush()
}

// flagText is flag's value as the command sees it.
func flagText(c *cli.Context, flag string) string {
	if v := c.StringSlice(flag); len(v) > 0 {
		return strings.Join(v, ",")
	}
	return fmt.Sprint(c.Value(flag))
}
