package app

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// DefaultLabFile is where every daemon looks for the lab file (--lab-file).
const DefaultLabFile = "/etc/synclab/lab.toml"

// LabDaemons are the daemons a lab file has a section for, and
// DefaultPorts their cluster ports where it gives none.
var (
	LabDaemons   = []string{"timed", "mutexd", "electd", "orderd"}
	DefaultPorts = map[string]uint16{"timed": 7300, "mutexd": 7400, "electd": 7500, "orderd": 7600}
)

// Lab is a lab file: the lab described once, copied to every machine
// beside the key, read by every daemon.
//
//	cluster = "physics-lab"                 # optional (default synclab)
//	key-file = "cluster.key"                # optional; relative to this file
//
//	[[host]]
//	id = 1
//	address = "10.0.0.1"
//	name = "pc1"                            # optional
//	[host.timed]                            # optional: this host's own settings
//	serve = "0.0.0.0"
//	stratum = 8
//
//	[[host]]
//	id = 2
//	address = "10.0.0.2"
//
//	[timed]                                 # every host's timed
//	server = ["10.0.0.1"]
//	[electd]
//	port = 7500                             # the cluster port (defaults: 7300, 7400, 7500, 7600)
//	algorithm = "bully"
//
// A daemon's section takes its `run` flags by name (values as on the
// command line; lists for flags that repeat) and "port"; a host's section
// overrides it for that host. Precedence, highest first: a flag, its
// environment variable, the host's section, the daemon's section, the top
// of the file, the default. The member list is the hosts' addresses at the
// daemon's port (timed joins the cluster, for Berkeley mode, only where
// its section gives a port); a host finds its own entry by its interface
// addresses, or is told (--id, --lab-host).
type Lab struct {
	Path     string
	Cluster  string // "" when not given
	KeyFile  string // absolute; "" when not given
	Insecure *bool
	Hosts    []LabHost

	settings map[string]labSection // a daemon's section
	lines    map[string]int        // a key's path ("host[1].timed.serve") -> its line
}

// LabHost is one [[host]].
type LabHost struct {
	ID   uint32
	Addr netip.Addr
	Name string

	settings map[string]labSection
	line     int
}

// labSection is a daemon's settings: key -> value.
type labSection map[string]labSetting

// labSetting is one value of a daemon's section: its text as a flag
// takes it (several for a TOML array), where it is, and its field name.
type labSetting struct {
	values []string
	list   bool
	line   int
	field  string // "electd.algorithm", "host 2's electd.algorithm"
}

// String names a host for people: "2 (pc2)", or "2".
func (h LabHost) String() string {
	if h.Name != "" {
		return fmt.Sprintf("%d (%s)", h.ID, h.Name)
	}
	return strconv.FormatUint(uint64(h.ID), 10)
}

// LoadLab reads the lab file at path. A file that is not there is no
// error unless the operator named it (explicit): the lab file is optional
// (nil, nil).
func LoadLab(path string, explicit bool) (*Lab, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab file: %w", err)
	}
	return ParseLab(path, data)
}

// labContentError is a mistake in what a lab file says (not a failure to
// read it).
type labContentError struct{ msg string }

func (e *labContentError) Error() string { return e.msg }

// errorf is an error at a line of the lab file: "FILE:LINE: what".
func (l *Lab) errorf(line int, format string, args ...any) error {
	if line <= 0 {
		return &labContentError{fmt.Sprintf("%s: %s", l.Path, fmt.Sprintf(format, args...))}
	}
	return &labContentError{fmt.Sprintf("%s:%d: %s", l.Path, line, fmt.Sprintf(format, args...))}
}

// ParseLab parses a lab file's bytes (path names it in errors) and
// refuses one that says something contradictory, naming the line and the
// field.
func ParseLab(path string, data []byte) (*Lab, error) {
	l := &Lab{Path: path, settings: map[string]labSection{}, lines: map[string]int{}}
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, &labContentError{fmt.Sprintf("%s:%d:%d: %v", path, row, col, err)}
		}
		return nil, &labContentError{fmt.Sprintf("%s: %v", path, err)}
	}
	l.indexLines(data)
	known := append([]string{"cluster", "key-file", "insecure", "host"}, LabDaemons...)
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		switch {
		case k == "cluster":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, l.errorf(l.lines[k], "cluster: want the cluster's name, a non-empty string")
			}
			l.Cluster = s
		case k == "key-file":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, l.errorf(l.lines[k], "key-file: want a path (relative to %s's directory)", filepath.Base(path))
			}
			if !filepath.IsAbs(s) {
				s = filepath.Join(filepath.Dir(path), s)
			}
			l.KeyFile = s
		case k == "insecure":
			b, ok := v.(bool)
			if !ok {
				return nil, l.errorf(l.lines[k], "insecure: want true or false")
			}
			l.Insecure = &b
		case k == "host":
			if err := l.parseHosts(v); err != nil {
				return nil, err
			}
		case slices.Contains(LabDaemons, k):
			sec, err := l.parseSection(k, k, v, k+".")
			if err != nil {
				return nil, err
			}
			l.settings[k] = sec
		default:
			return nil, l.errorf(l.lines[k], "unknown key %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	if len(l.Hosts) == 0 {
		return nil, l.errorf(0, "no [[host]]: a lab file lists the lab's machines, each with an id and an address")
	}
	return l, l.checkPorts()
}

// indexLines records the line of every key and table of the document
// (TOML's own parser, its positions): "cluster", "host[0]",
// "host[0].timed", "host[0].timed.serve", "electd.algorithm".
func (l *Lab) indexLines(data []byte) {
	var p unstable.Parser
	p.Reset(data)
	var table []string
	arrays := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		if e.Kind != unstable.KeyValue && e.Kind != unstable.Table && e.Kind != unstable.ArrayTable {
			continue
		}
		var parts []string
		line := 0
		for it := e.Key(); it.Next(); {
			if line == 0 {
				line = p.Shape(it.Node().Raw).Start.Line
			}
			parts = append(parts, string(it.Node().Data))
		}
		switch e.Kind {
		case unstable.ArrayTable:
			name := strings.Join(parts, ".")
			parts[len(parts)-1] += fmt.Sprintf("[%d]", arrays[name])
			arrays[name]++
			table = parts
			l.lines[strings.Join(parts, ".")] = line
		case unstable.Table:
			// A sub-table of the last element of an array of tables
			// ([host.timed] after [[host]]) belongs to that element.
			if len(parts) > 1 {
				if n := arrays[parts[0]]; n > 0 {
					parts[0] += fmt.Sprintf("[%d]", n-1)
				}
			}
			table = parts
			l.lines[strings.Join(parts, ".")] = line
		default:
			l.lines[strings.Join(append(slices.Clone(table), parts...), ".")] = line
		}
	}
}

func (l *Lab) parseHosts(v any) error {
	list, ok := v.([]any)
	if !ok {
		return l.errorf(l.lines["host"], "host: want [[host]] tables, each with an id and an address")
	}
	ids, addrs, names := map[uint32]int{}, map[netip.Addr]int{}, map[string]int{}
	for i, item := range list {
		at := fmt.Sprintf("host[%d]", i)
		tab, ok := item.(map[string]any)
		if !ok {
			return l.errorf(l.lines["host"], "host: want [[host]] tables, each with an id and an address")
		}
		h := LabHost{line: l.lines[at], settings: map[string]labSection{}}
		line := func(k string) int {
			if n := l.lines[at+"."+k]; n > 0 {
				return n
			}
			return h.line
		}
		id, ok := tab["id"].(int64)
		switch {
		case tab["id"] == nil:
			return l.errorf(h.line, "host without an id: give every [[host]] an id (1 to %d), unique in the lab", uint32(math.MaxUint32))
		case !ok || id < 1 || id > math.MaxUint32:
			return l.errorf(line("id"), "host id %v: want an integer from 1 to %d", tab["id"], uint32(math.MaxUint32))
		}
		h.ID = uint32(id)
		if prev, dup := ids[h.ID]; dup {
			return l.errorf(line("id"), "host id %d appears twice (lines %d and %d)", h.ID, prev, line("id"))
		}
		ids[h.ID] = line("id")
		s, ok := tab["address"].(string)
		if !ok {
			return l.errorf(line("address"), "host %d: want its address, an IP address in a string (\"10.0.0.%d\")", h.ID, h.ID)
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return l.errorf(line("address"), "host %d: address %q: want an IP address (the lab file is matched against this machine's addresses: no names)", h.ID, s)
		}
		if a = a.Unmap(); a.IsUnspecified() || a.IsMulticast() {
			return l.errorf(line("address"), "host %d: address %s: want the host's own unicast address", h.ID, a)
		}
		h.Addr = a
		if prev, dup := addrs[a]; dup {
			return l.errorf(line("address"), "host %d: address %s is another host's too (lines %d and %d)", h.ID, a, prev, line("address"))
		}
		addrs[a] = line("address")
		if n, present := tab["name"]; present {
			name, ok := n.(string)
			switch {
			case !ok || name == "":
				return l.errorf(line("name"), "host %d: name: want a non-empty string", h.ID)
			case strings.Trim(name, "0123456789") == "":
				return l.errorf(line("name"), "host %d: name %q: a name of digits would read as a host id", h.ID, name)
			}
			if prev, dup := names[name]; dup {
				return l.errorf(line("name"), "host %d: name %q is another host's too (lines %d and %d)", h.ID, name, prev, line("name"))
			}
			names[name] = line("name")
			h.Name = name
		}
		for _, k := range slices.Sorted(maps.Keys(tab)) {
			switch {
			case k == "id" || k == "address" || k == "name":
			case slices.Contains(LabDaemons, k):
				sec, err := l.parseSection(fmt.Sprintf("host %d's %s", h.ID, k), k, tab[k], at+"."+k+".")
				if err != nil {
					return err
				}
				h.settings[k] = sec
			default:
				return l.errorf(line(k), "host %d: unknown key %q (known: id, address, name, and a section per daemon: %s)", h.ID, k, strings.Join(LabDaemons, ", "))
			}
		}
		l.Hosts = append(l.Hosts, h)
	}
	return nil
}

// labReserved are the flags a daemon's section may not set, and why.
var labReserved = map[string]string{
	"id":       "a host's id is its [[host]]'s (found by its address, or --id / --lab-host)",
	"members":  "the member list is the [[host]] list at the daemon's port",
	"lab-file": "the lab file cannot name another",
	"lab-host": "a host is told which it is on its own command line or environment (SYNCLAB_LAB_HOST)",
	"cluster":  "the cluster's name is set once, at the top of the file",
	"key-file": "the key file is set once, at the top of the file",
	"insecure": "insecure is set once, at the top of the file",
}

// parseSection reads a daemon's section (name says whose, for errors;
// at is its key path's prefix).
func (l *Lab) parseSection(name, daemon string, v any, at string) (labSection, error) {
	tab, ok := v.(map[string]any)
	if !ok {
		return nil, l.errorf(l.lines[strings.TrimSuffix(at, ".")], "%s: want a table ([%s]) of %s's settings", name, daemon, daemon)
	}
	sec := labSection{}
	for _, k := range slices.Sorted(maps.Keys(tab)) {
		line := l.lines[at+k]
		field := name + "." + k
		if why, reserved := labReserved[k]; reserved {
			return nil, l.errorf(line, "%s: not in a daemon's section: %s", field, why)
		}
		s := labSetting{line: line, field: field}
		switch x := tab[k].(type) {
		case []any:
			s.list = true
			for _, e := range x {
				text, err := scalarText(e)
				if err != nil {
					return nil, l.errorf(line, "%s: %v", field, err)
				}
				s.values = append(s.values, text)
			}
		default:
			text, err := scalarText(x)
			if err != nil {
				return nil, l.errorf(line, "%s: %v", field, err)
			}
			s.values = []string{text}
		}
		if k == "port" {
			if p, err := strconv.ParseUint(s.values[0], 10, 16); s.list || err != nil || p == 0 {
				return nil, l.errorf(line, "%s: want a port, 1 to 65535", field)
			}
		}
		sec[k] = s
	}
	return sec, nil
}

// scalarText is a TOML value as a flag takes it.
func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case map[string]any:
		return "", fmt.Errorf("a table where a value was expected")
	case []any:
		return "", fmt.Errorf("a list inside a list")
	case time.Time, toml.LocalDate, toml.LocalDateTime, toml.LocalTime:
		return "", fmt.Errorf("a date; durations are strings like \"50ms\"")
	}
	return "", fmt.Errorf("unexpected value %v", v)
}

// port is daemon's cluster port on host h (its own section's, the
// daemon's, or the default) and whether the file gives one.
func (l *Lab) port(daemon string, h *LabHost) (uint16, bool) {
	s, ok := l.setting(daemon, h, "port")
	if !ok {
		return DefaultPorts[daemon], false
	}
	p, _ := strconv.ParseUint(s.values[0], 10, 16)
	return uint16(p), true
}

// setting is key of daemon's settings for host h (nil: the section's).
func (l *Lab) setting(daemon string, h *LabHost, key string) (labSetting, bool) {
	if h != nil {
		if s, ok := h.settings[daemon][key]; ok {
			return s, true
		}
	}
	s, ok := l.settings[daemon][key]
	return s, ok
}

// checkPorts refuses two daemons on one port of a host: they could not
// both bind it.
func (l *Lab) checkPorts() error {
	for i := range l.Hosts {
		h := &l.Hosts[i]
		seen := map[uint16]string{}
		for _, d := range LabDaemons {
			p, given := l.port(d, h)
			if other, clash := seen[p]; clash {
				line := 0
				if s, ok := l.setting(d, h, "port"); ok && given {
					line = s.line
				}
				return l.errorf(line, "%s.port %d on host %s is %s's too: two daemons cannot share a port (defaults: timed 7300, mutexd 7400, electd 7500, orderd 7600)", d, p, h, other)
			}
			seen[p] = d
		}
	}
	return nil
}

// Members is daemon's member list: every host at its port.
func (l *Lab) Members(daemon string) map[uint32]netip.AddrPort {
	m := make(map[uint32]netip.AddrPort, len(l.Hosts))
	for i := range l.Hosts {
		h := &l.Hosts[i]
		p, _ := l.port(daemon, h)
		m[h.ID] = netip.AddrPortFrom(h.Addr, p)
	}
	return m
}

// Joins says whether daemon is a member of the lab's cluster: always for
// a daemon that needs one; for one whose cluster is optional (timed: only
// Berkeley mode needs it), where the file gives it a port.
func (l *Lab) Joins(daemon string, optional bool) bool {
	if !optional {
		return true
	}
	if _, ok := l.settings[daemon]["port"]; ok {
		return true
	}
	for _, h := range l.Hosts {
		if _, ok := h.settings[daemon]["port"]; ok {
			return true
		}
	}
	return false
}

// Host finds this machine's [[host]]: by id, by hint (an id or a name:
// --lab-host), or by this machine's addresses (local, from LocalAddrs).
// how says how it was found; an error says exactly why none was.
func (l *Lab) Host(id uint32, hint string, local map[netip.Addr]string) (h *LabHost, how string, err error) {
	switch {
	case id != 0:
		for i := range l.Hosts {
			if l.Hosts[i].ID == id {
				return &l.Hosts[i], "named by --id", nil
			}
		}
		return nil, "", fmt.Errorf("%s: no host has id %d (hosts: %s)", l.Path, id, l.hostList())
	case hint != "":
		for i := range l.Hosts {
			if strconv.FormatUint(uint64(l.Hosts[i].ID), 10) == hint || l.Hosts[i].Name == hint {
				return &l.Hosts[i], "named by --lab-host (SYNCLAB_LAB_HOST) " + hint, nil
			}
		}
		return nil, "", fmt.Errorf("%s: --lab-host %q is no host's id or name (hosts: %s)", l.Path, hint, l.hostList())
	}
	var found []*LabHost
	for i := range l.Hosts {
		if _, ok := local[l.Hosts[i].Addr]; ok {
			found = append(found, &l.Hosts[i])
		}
	}
	switch len(found) {
	case 1:
		h := found[0]
		return h, fmt.Sprintf("address %s on %s", h.Addr, local[h.Addr]), nil
	case 0:
		var mine []string
		for _, a := range slices.SortedFunc(maps.Keys(local), netip.Addr.Compare) {
			if !a.IsLoopback() && !a.IsLinkLocalUnicast() {
				mine = append(mine, fmt.Sprintf("%s on %s", a, local[a]))
			}
		}
		if len(mine) == 0 {
			mine = []string{"none but loopback and link-local ones"}
		}
		return nil, "", fmt.Errorf("%s: this machine is none of its hosts: its addresses (%s) are none of the hosts' (%s); add it as a [[host]], or say which host it is (--lab-host ID, SYNCLAB_LAB_HOST=ID)",
			l.Path, strings.Join(mine, ", "), l.hostList())
	}
	var which []string
	for _, h := range found {
		which = append(which, fmt.Sprintf("%s (%s on %s)", h, h.Addr, local[h.Addr]))
	}
	return nil, "", fmt.Errorf("%s: this machine has the addresses of several hosts, %s: say which host it is (--lab-host ID, SYNCLAB_LAB_HOST=ID)", l.Path, strings.Join(which, " and "))
}

func (l *Lab) hostList() string {
	var s []string
	for _, h := range l.Hosts {
		s = append(s, fmt.Sprintf("%d=%s", h.ID, h.Addr))
	}
	return strings.Join(s, ", ")
}

// settingsFor is daemon's settings on host h (nil: none known), the
// host's over the section's, by key.
func (l *Lab) settingsFor(daemon string, h *LabHost) labSection {
	out := labSection{}
	maps.Copy(out, l.settings[daemon])
	if h != nil {
		maps.Copy(out, h.settings[daemon])
	}
	delete(out, "port")
	return out
}
