package bully

import "testing"

func TestRoleTextRoundTrip(t *testing.T) {
	for _, r := range []Role{RoleFollower, RoleCandidate, RoleLeader} {
		b, _ := r.MarshalText()
		var got Role
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Errorf("%v: got %v, %v", r, got, err)
		}
	}
	var r Role
	if err := r.UnmarshalText([]byte("emperor")); err == nil {
		t.Error("unknown role accepted")
	}
}
