package bench

import (
	"errors"
	"testing"
	"time"
)

func TestParseLeaseGrant(t *testing.T) {
	id, ttl, err := ParseLeaseGrant("lease 390da2026b259b05 granted with TTL(2s)\n")
	if err != nil || id != 0x390da2026b259b05 || ttl != 2*time.Second {
		t.Fatalf("= %x, %v, %v", id, ttl, err)
	}
	for _, bad := range []string{
		"",
		"Error: etcdserver: requested lease not found",
		"lease 0 granted with TTL(2s)",                 // IDs are positive
		"lease 8000000000000000 granted with TTL(2s)",  // beyond int64
		"lease 390da2026b259b05 granted with TTL(2ms)", // unit
		"lease 390DA2026B259B05 granted with TTL(2s)",  // etcdctl prints lower case
		"lease 390da2026b259b05a granted with TTL(2s)", // 17 digits
	} {
		var oe *OutputError
		if _, _, err := ParseLeaseGrant(bad); !errors.As(err, &oe) {
			t.Errorf("ParseLeaseGrant(%q) err = %v, want an *OutputError", bad, err)
		}
	}
}

func TestEtcdElectionKey(t *testing.T) {
	// etcd's Election.Campaign: fmt.Sprintf("%s%x", prefix+"/", leaseID).
	if got := EtcdElectionKey("bench", 0x390da2026b259b05); got != "bench/390da2026b259b05" {
		t.Errorf("key = %q", got)
	}
}

func TestParseObservation(t *testing.T) {
	// A line printed by etcdctl 3.4.23 `elect --listen -w json bench`.
	line := `{"header":{"cluster_id":15118495548433857066,"member_id":13668033151171901709,"revision":4,"raft_term":2},"kvs":[{"key":"YmVuY2gvMzkwZGEyMDI2YjI1OWIwYg==","create_revision":3,"mod_revision":3,"version":1,"value":"cDI=","lease":4111120166130391819}]}`
	o, err := ParseObservation([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Observation{Key: "bench/390da2026b259b0b", Proposal: "p2", CreateRevision: 3, Lease: 0x390da2026b259b0b, Revision: 4}
	if o != want {
		t.Errorf("= %+v, want %+v", o, want)
	}
	if o.Key != EtcdElectionKey("bench", o.Lease) {
		t.Errorf("key %q is not the campaign key of lease %x", o.Key, o.Lease)
	}
	for _, bad := range []string{
		`{"header":{"revision":4},"kvs":[]}`,
		`{"header":{"revision":4}}`,
		`Error: context deadline exceeded`,
		`{"kvs":[{"key":"!!notbase64"}]}`,
	} {
		var oe *OutputError
		if _, err := ParseObservation([]byte(bad)); !errors.As(err, &oe) {
			t.Errorf("ParseObservation(%q) err = %v, want an *OutputError", bad, err)
		}
	}
}
