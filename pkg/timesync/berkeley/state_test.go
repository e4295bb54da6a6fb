package berkeley

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"slices"
	"testing"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/elect/bully"
)

// encodeV1 is the first state format, as builds before the pluggable
// election wrote it.
func encodeV1(term uint64, freq, errPPM float64) []byte {
	b := []byte{stateVersion1}
	b = binary.BigEndian.AppendUint64(b, term)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(freq))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(errPPM))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func TestStateRoundTrip(t *testing.T) {
	for _, s := range []Saved{{}, {FrequencyPPM: -12.5, ErrorPPM: 0.25}, {Election: bully.EncodeState(bully.MakeTerm(3, 2)), FrequencyPPM: 7}} {
		got, err := Restore(encodeState(s))
		if err != nil || !slices.Equal(got.Election, s.Election) || got.FrequencyPPM != s.FrequencyPPM || got.ErrorPPM != s.ErrorPPM {
			t.Errorf("Restore(encodeState(%+v)) = %+v, %v", s, got, err)
		}
	}
}

// TestStateV1StillRead: a member upgraded from a build that stored bully's
// term in Berkeley's own format keeps its term and frequency.
func TestStateV1StillRead(t *testing.T) {
	term := bully.MakeTerm(9, 3)
	got, err := Restore(encodeV1(term, 4.5, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	if back, err := bully.Restore(got.Election); err != nil || back != term || got.FrequencyPPM != 4.5 || got.ErrorPPM != 0.5 {
		t.Fatalf("v1 restored as %+v (term %#x, %v)", got, back, err)
	}
	if got, err := Restore(encodeV1(0, 1, 0)); err != nil || got.Election != nil {
		t.Errorf("v1 without a term: %+v, %v", got, err)
	}
	// A v1 term no member could have reached is refused, as before.
	if _, err := Restore(encodeV1(0xffffffff00000003, 0, 0)); !errors.Is(err, core.ErrState) {
		t.Errorf("absurd v1 term: %v", err)
	}
	// And a restarted core really follows on from that term.
	c, err := New(core.Env{ID: 3, Members: []uint32{3}, State: encodeV1(term, 4.5, 0)}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _ := c.Election().Leader(); got != term {
		t.Errorf("election restarted in %#x, want %#x", got, term)
	}
}

func TestStateRefused(t *testing.T) {
	good := encodeState(Saved{Election: []byte{1, 2, 3}, FrequencyPPM: 1})
	flip := func(i int) []byte { b := slices.Clone(good); b[i] ^= 1; return b }
	long := encodeState(Saved{})
	long = append(long[:offStateElectLen], 0xff, 0xff) // claims 65535 bytes of election state
	for name, b := range map[string][]byte{
		"version":         flip(0),
		"frequency bit":   flip(offStateFreq + 3),
		"length":          flip(offStateElectLen + 1),
		"election bit":    flip(offStateElect),
		"truncated":       good[:len(good)-1],
		"section too big": long,
		"too short":       {stateVersion, 0},
	} {
		if _, err := Restore(b); !errors.Is(err, core.ErrState) {
			t.Errorf("%s: Restore = %v, want ErrState", name, err)
		}
	}
	bad := encodeState(Saved{FrequencyPPM: 600})
	if _, err := New(core.Env{ID: 1, Members: []uint32{1}, State: bad}, Config{}); !errors.Is(err, core.ErrState) {
		t.Errorf("600 ppm restored: %v", err)
	}
	// A corrupt election section is the election's to refuse.
	if _, err := New(core.Env{ID: 1, Members: []uint32{1}, State: good}, Config{}); !errors.Is(err, core.ErrState) {
		t.Errorf("garbage election state: %v", err)
	}
}

// TestStateElectionSectionBounded: a state file whose election section is
// longer than any election keeps is refused, even well-formed (checksum
// right): so the section handed back to the election, and saved again
// unchanged until the election hands over a new one, can never reach
// encodeState's bound (a panic there is our own election's bug, not input).
func TestStateElectionSectionBounded(t *testing.T) {
	b := []byte{stateVersion}
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(1))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(0))
	b = binary.BigEndian.AppendUint16(b, maxElectionState+1)
	b = append(b, make([]byte, maxElectionState+1)...)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if _, err := Restore(b); !errors.Is(err, core.ErrState) {
		t.Fatalf("%d-byte election section: Restore = %v, want ErrState", maxElectionState+1, err)
	}
}
