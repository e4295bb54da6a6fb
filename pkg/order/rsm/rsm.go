package rsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the key-value map.
const (
	MaxKeys     = 64 // a snapshot of the map travels in one frame (wire.MaxOrderSnapshot)
	MaxKeyLen   = 64
	MaxValueLen = 256
)

// ErrCommand is wrapped by Apply's error for a command it refuses.
var ErrCommand = errors.New("rsm: refused")

// Machine is the account and the map. The zero value is empty.
type Machine struct {
	Cents   int64             `json:"cents"`
	KV      map[string]string `json:"kv,omitempty"`
	Applied uint64            `json:"applied"`
}

// New returns an empty machine.
func New() *Machine { return &Machine{} }

// PlainPrefix starts a totally ordered message that is no command: text
// sent with `orderd send --order total`, which the machine leaves alone
// (only `orderd apply` commands are its business; the message said
// "refused: unknown command"). One byte, ASCII RS: no command starts with
// it, no text a person types does, and a machine older than this one,
// which knows no such mark, reads it as part of an unknown first word and
// refuses the message without changing its state (only its Applied count
// differs, by one per plain message).
const PlainPrefix = "\x1e"

// Plain marks msg as a plain message (PlainPrefix).
func Plain(msg []byte) []byte { return append([]byte(PlainPrefix), msg...) }

// Text is a message as people read it: without its PlainPrefix, if any;
// plain says whether it had one.
func Text(msg []byte) (text []byte, plain bool) {
	if t, ok := bytes.CutPrefix(msg, []byte(PlainPrefix)); ok {
		return t, true
	}
	return msg, false
}

// Apply applies one command and returns what it did. A plain message
// (PlainPrefix) is no command: Apply returns "" and nil and changes
// nothing, Applied included.
func (m *Machine) Apply(cmd []byte) (string, error) {
	if _, plain := Text(cmd); plain {
		return "", nil
	}
	m.Applied++
	f := strings.Fields(string(cmd))
	if len(f) == 0 {
		return "", fmt.Errorf("%w: empty command", ErrCommand)
	}
	switch f[0] {
	case "deposit", "withdraw", "balance":
		if len(f) != 2 {
			return "", fmt.Errorf("%w: %s takes one amount", ErrCommand, f[0])
		}
		c, err := ParseCents(f[1])
		if err != nil {
			return "", err
		}
		next := m.Cents
		switch f[0] {
		case "deposit":
			if c > math.MaxInt64-m.Cents {
				return "", fmt.Errorf("%w: the balance would overflow", ErrCommand)
			}
			next += c
		case "withdraw":
			if c > m.Cents {
				return "", fmt.Errorf("%w: withdraw %s from %s", ErrCommand, Format(c), Format(m.Cents))
			}
			next -= c
		case "balance":
			next = c
		}
		m.Cents = next
		return "balance " + Format(m.Cents), nil
	case "interest":
		if len(f) != 2 || !strings.HasSuffix(f[1], "%") {
			return "", fmt.Errorf("%w: interest takes a rate like 1%% or 0.25%%", ErrCommand)
		}
		bp, err := ParseCents(strings.TrimSuffix(f[1], "%")) // hundredths of a percent
		if err != nil {
			return "", err
		}
		add := Interest(m.Cents, bp)
		if !add.IsInt64() || add.Int64() > math.MaxInt64-m.Cents {
			return "", fmt.Errorf("%w: the balance would overflow", ErrCommand)
		}
		m.Cents += add.Int64()
		return "balance " + Format(m.Cents), nil
	case "set":
		if len(f) < 3 {
			return "", fmt.Errorf("%w: set KEY VALUE", ErrCommand)
		}
		k := f[1]
		// The value is the rest of the command as written (inner spaces kept).
		rest := strings.TrimLeft(strings.TrimSpace(string(cmd))[len("set"):], " \t")
		v := strings.TrimLeft(rest[len(k):], " \t")
		switch {
		case !printable(k) || !printable(v):
			return "", fmt.Errorf("%w: keys and values are printable UTF-8 text", ErrCommand)
		case len(k) > MaxKeyLen:
			return "", fmt.Errorf("%w: key of %d bytes, at most %d", ErrCommand, len(k), MaxKeyLen)
		case len(v) > MaxValueLen:
			return "", fmt.Errorf("%w: value of %d bytes, at most %d", ErrCommand, len(v), MaxValueLen)
		}
		if _, ok := m.KV[k]; !ok && len(m.KV) >= MaxKeys {
			return "", fmt.Errorf("%w: %d keys already", ErrCommand, MaxKeys)
		}
		if m.KV == nil {
			m.KV = map[string]string{}
		}
		m.KV[k] = v
		return "set " + k, nil
	case "del":
		if len(f) != 2 {
			return "", fmt.Errorf("%w: del KEY", ErrCommand)
		}
		if _, ok := m.KV[f[1]]; !ok {
			return "", fmt.Errorf("%w: no key %q", ErrCommand, f[1])
		}
		delete(m.KV, f[1])
		return "deleted " + f[1], nil
	}
	return "", fmt.Errorf("%w: unknown command %q (deposit, withdraw, interest, balance, set, del)", ErrCommand, f[0])
}

// Interest is cents x bp / 10000 (bp: hundredths of a percent), rounded
// to the nearest cent, halves away from zero.
func Interest(cents, bp int64) *big.Int {
	num := new(big.Int).Mul(big.NewInt(cents), big.NewInt(bp))
	q, r := new(big.Int).QuoRem(num, big.NewInt(10000), new(big.Int))
	if r.Sign() != 0 {
		if twice := new(big.Int).Abs(new(big.Int).Mul(r, big.NewInt(2))); twice.Cmp(big.NewInt(10000)) >= 0 {
			q.Add(q, big.NewInt(int64(num.Sign())))
		}
	}
	return q
}

// ParseCents reads a non-negative amount with up to 2 decimals ("100",
// "12.5", "0.25") as hundredths.
func ParseCents(s string) (int64, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" || dot && (len(frac) == 0 || len(frac) > 2) || strings.HasPrefix(whole, "+") {
		return 0, fmt.Errorf("%w: amount %q: want digits with up to 2 decimals", ErrCommand, s)
	}
	w, err := strconv.ParseUint(whole, 10, 63)
	if err != nil || w > math.MaxInt64/100-1 {
		return 0, fmt.Errorf("%w: amount %q: want digits with up to 2 decimals, at most %d", ErrCommand, s, int64(math.MaxInt64/100-1))
	}
	var f uint64
	if dot {
		if f, err = strconv.ParseUint(frac, 10, 8); err != nil {
			return 0, fmt.Errorf("%w: amount %q: want digits with up to 2 decimals", ErrCommand, s)
		}
		if len(frac) == 1 {
			f *= 10
		}
	}
	return int64(w*100 + f), nil
}

// Format writes cents as dollars: "1111.00".
func Format(c int64) string {
	sign := ""
	u := uint64(c)
	if c < 0 {
		sign, u = "-", uint64(-c)
	}
	return fmt.Sprintf("%s%d.%02d", sign, u/100, u%100)
}

// Get returns a key's value.
func (m *Machine) Get(k string) (string, bool) {
	v, ok := m.KV[k]
	return v, ok
}

// Keys returns the keys, sorted.
func (m *Machine) Keys() []string { return slices.Sorted(maps.Keys(m.KV)) }

// Snapshot encodes the state (JSON, HTML characters unescaped: at most
// about 45 kB with MaxKeys keys of the longest).
func (m *Machine) Snapshot() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m)
	return bytes.TrimSpace(b.Bytes())
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

// Restore replaces the state with a snapshot, refusing an absurd one.
func (m *Machine) Restore(b []byte) error {
	var n Machine
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("rsm: snapshot: %w", err)
	}
	if len(n.KV) > MaxKeys {
		return fmt.Errorf("rsm: snapshot with %d keys, at most %d", len(n.KV), MaxKeys)
	}
	*m = n
	return nil
}

// Describe is the state in one line, for status.
func (m *Machine) Describe() string {
	return fmt.Sprintf("balance %s, %d keys, %d commands applied", Format(m.Cents), len(m.KV), m.Applied)
}
