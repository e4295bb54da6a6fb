package bench

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// EtcdMinLeaseTTL is the shortest lease a default etcd 3.4 server grants:
// 1.5 x its 1 s election timeout, rounded up to whole seconds. A shorter
// request is silently raised to it.
const EtcdMinLeaseTTL = 2 * time.Second

// EtcdElectionKey is the key a campaigner with lease id puts under the
// election prefix, as etcd's concurrency.Election does: prefix, "/", the
// lease ID in lower-case hex. The leader is the key with the lowest create
// revision, so keys of one prefix never collide and the oldest live
// campaign leads.
func EtcdElectionKey(prefix string, lease int64) string {
	return prefix + "/" + strconv.FormatInt(lease, 16)
}

// OutputError is output of an external command that does not have the
// expected shape.
type OutputError struct {
	Cmd    string // e.g. "etcdctl lease grant"
	Output string // the offending output (trimmed to a line)
	Reason string
}

func (e *OutputError) Error() string {
	return fmt.Sprintf("bench: unexpected output of %s (%s): %q", e.Cmd, e.Reason, e.Output)
}

var leaseGrantRE = regexp.MustCompile(`(?m)^lease ([0-9a-f]{1,16}) granted with TTL\((\d+)s\)\s*$`)

// ParseLeaseGrant reads the answer of `etcdctl lease grant TTL`:
//
//	lease 694d7c2e1b4a7f05 granted with TTL(2s)
//
// and returns the lease ID and the TTL the server granted (which may exceed
// the one asked for: see EtcdMinLeaseTTL).
func ParseLeaseGrant(out string) (id int64, ttl time.Duration, err error) {
	m := leaseGrantRE.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, &OutputError{Cmd: "etcdctl lease grant", Output: out, Reason: `want "lease HEX granted with TTL(Ns)"`}
	}
	u, err := strconv.ParseUint(m[1], 16, 64)
	if err != nil || u == 0 || u > 1<<63-1 {
		// etcd lease IDs are positive int64s.
		return 0, 0, &OutputError{Cmd: "etcdctl lease grant", Output: out, Reason: "lease ID is not a positive int64"}
	}
	secs, err := strconv.Atoi(m[2])
	if err != nil {
		return 0, 0, &OutputError{Cmd: "etcdctl lease grant", Output: out, Reason: "TTL out of range"}
	}
	return int64(u), time.Duration(secs) * time.Second, nil
}

// Observation is one leader report of `etcdctl elect --listen -w json`: the
// election's oldest key and the leader's proposal.
type Observation struct {
	Key            string
	Proposal       string
	CreateRevision int64
	Lease          int64
	Revision       int64 // the store's revision when this was observed
}

// ParseObservation reads one line of `etcdctl elect --listen -w json NAME`,
// a GetResponse holding the leader's key-value (keys and values are base64
// in etcd's JSON, which encoding/json decodes into []byte):
//
//	{"header":{...,"revision":4,...},"kvs":[{"key":"YmVuY2gvMzk=","create_revision":3,
//	  "mod_revision":3,"version":1,"value":"Mg==","lease":4111120166130391819}]}
func ParseObservation(line []byte) (Observation, error) {
	var r struct {
		Header struct {
			Revision int64 `json:"revision"`
		} `json:"header"`
		Kvs []struct {
			Key            []byte `json:"key"`
			Value          []byte `json:"value"`
			CreateRevision int64  `json:"create_revision"`
			Lease          int64  `json:"lease"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return Observation{}, &OutputError{Cmd: "etcdctl elect --listen", Output: string(line), Reason: err.Error()}
	}
	if len(r.Kvs) != 1 {
		return Observation{}, &OutputError{Cmd: "etcdctl elect --listen", Output: string(line), Reason: fmt.Sprintf("%d key-values, want 1", len(r.Kvs))}
	}
	kv := r.Kvs[0]
	return Observation{
		Key:            string(kv.Key),
		Proposal:       string(kv.Value),
		CreateRevision: kv.CreateRevision,
		Lease:          kv.Lease,
		Revision:       r.Header.Revision,
	}, nil
}
