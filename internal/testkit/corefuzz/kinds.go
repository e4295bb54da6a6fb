package corefuzz

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"sync"

	"github.com/synclab/synclab/pkg/core"
	"github.com/synclab/synclab/pkg/wire"
)

// The generic generators: a payload of any registered kind (wire.Info),
// built from the program without a line of code per kind. The payload
// type is walked by reflection: its smallest plausible value (every
// number 1, every name "a", every list empty) is the start, then the
// program changes fields one at a time (extreme numbers, names at and past
// their limits, lists of up to four elements), keeping each change only
// while the payload's own encoder accepts the whole. So what comes out
// always decodes (the encoders refuse what the decoders would), and holds
// whatever values the codec lets through: what an attacker holding the
// key can send. A core's own generator (MajorityFrame, TokenFrame...)
// knows what its core expects and aims near it; these reach every kind,
// the ones a core does not expect included.

// maxChanges bounds the changes made to one payload.
const maxChanges = 8

// Payload returns the encoding of a payload of kind k: see above. For a
// kind wire does not know it returns a few bytes of input.
func (p *Program) Payload(k wire.Kind) []byte {
	info, ok := wire.Info(k)
	if !ok {
		return []byte{p.Byte(), p.Byte(), p.Byte()}
	}
	cur := baseOf(info)
	v := info.New()
	if v.UnmarshalBinary(cur) != nil {
		// No start: TestEveryKindGenerates fails on it.
		return nil
	}
	for range p.Intn(maxChanges + 1) {
		leaves := leavesOf(reflect.ValueOf(v).Elem(), nil)
		if len(leaves) == 0 {
			break
		}
		p.change(leaves[p.Intn(len(leaves))])
		b, err := v.AppendBinary(nil)
		if err != nil {
			// Refused: back to the last payload that encoded (decoding
			// its bytes rebuilds it exactly).
			v = info.New()
			if v.UnmarshalBinary(cur) != nil {
				return cur
			}
			continue
		}
		cur = b
	}
	return cur
}

// Base sets v (a pointer to a payload) to its smallest plausible value,
// the generic generators' start, and returns its encoding. Where the
// encoder refuses that (an enum with no value 1, a field that must exceed
// another), a deterministic search tries small values in a few fields at
// a time, up to baseTries times, and keeps the first the encoder accepts.
func Base(v wire.Payload) ([]byte, error) {
	root := reflect.ValueOf(v).Elem()
	base(root)
	b, err := v.AppendBinary(nil)
	if err == nil {
		return b, nil
	}
	r := rand.New(rand.NewPCG(uint64(len(root.Type().Name())), 1))
	for range baseTries {
		base(root)
		for _, leaf := range leavesOf(root, nil) {
			if c := candidates(leaf); len(c) > 0 && r.IntN(2) == 0 {
				leaf.Set(c[r.IntN(len(c))])
			}
		}
		if b, err2 := v.AppendBinary(nil); err2 == nil {
			return b, nil
		}
	}
	base(root)
	return nil, err
}

// bases caches Base's encoding of each kind's payload.
var bases struct {
	sync.Mutex
	of map[wire.Kind][]byte
}

func baseOf(info wire.KindInfo) []byte {
	bases.Lock()
	defer bases.Unlock()
	if b, ok := bases.of[info.Kind]; ok {
		return b
	}
	if bases.of == nil {
		bases.of = map[wire.Kind][]byte{}
	}
	b, _ := Base(info.New())
	bases.of[info.Kind] = b
	return b
}

// baseTries bounds Base's search.
const baseTries = 10000

// candidates are the values Base tries for a field: small numbers,
// names.
func candidates(v reflect.Value) []reflect.Value {
	var out []reflect.Value
	switch {
	case v.CanUint():
		for _, n := range []uint64{0, 2, 3, 4, 5, 6, 7, 8, 16, 255} {
			c := reflect.New(v.Type()).Elem()
			c.SetUint(n)
			out = append(out, c)
		}
	case v.CanInt():
		for _, n := range []int64{0, 2, 3, -1} {
			c := reflect.New(v.Type()).Elem()
			c.SetInt(n)
			out = append(out, c)
		}
	case v.Kind() == reflect.String:
		for _, n := range []string{"x", "lock-1"} {
			out = append(out, reflect.ValueOf(n).Convert(v.Type()))
		}
	}
	return out
}

var addrPortType = reflect.TypeFor[netip.AddrPort]()

func base(v reflect.Value) {
	switch {
	case v.Type() == addrPortType:
		v.Set(reflect.ValueOf(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 1)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				base(v.Field(i))
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			base(v.Index(i))
		}
	case reflect.Slice:
		v.SetLen(0)
	case reflect.Bool:
		v.SetBool(false)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.String:
		v.SetString("a")
	}
}

// leavesOf appends the settable fields of v the generator changes: numbers,
// booleans, strings, lists (their length) and addresses, inside structs,
// arrays and lists.
func leavesOf(v reflect.Value, out []reflect.Value) []reflect.Value {
	if v.Type() == addrPortType {
		return append(out, v)
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = leavesOf(v.Field(i), out)
			}
		}
		return out
	case reflect.Array:
		for i := range v.Len() {
			out = leavesOf(v.Index(i), out)
		}
		return out
	case reflect.Slice:
		out = append(out, v)
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				out = leavesOf(v.Index(i), out)
			}
		}
		return out
	}
	return append(out, v)
}

// names a generated string is one of: short, at the usual 64-byte limit
// of a name and past it, empty, with a character names refuse, a path.
var names = []string{"x", "lock-1", string(make64('n')), string(make64('n')) + "n", "", "a b", "/tmp/x", "\xff"}

func make64(c byte) []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return b
}

// change sets leaf v to a value of the program's choosing.
func (p *Program) change(v reflect.Value) {
	if v.Type() == addrPortType {
		v.Set(reflect.ValueOf(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, p.Byte()}), uint16(p.U32()))))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(p.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(p.I64()) // cut to the field's width by SetInt
	case reflect.Uint8:
		// Mostly a small value: most one-byte fields are enums and flags.
		if p.Intn(4) == 0 {
			v.SetUint(uint64(p.Byte()))
		} else {
			v.SetUint(uint64(p.Intn(8)))
		}
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Type().Size() <= 4 {
			v.SetUint(uint64(p.U32()))
		} else {
			v.SetUint(p.U64())
		}
	case reflect.String:
		v.SetString(names[p.Intn(len(names))])
	case reflect.Slice:
		n := p.Intn(5)
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, n*p.Intn(9))
			for i := range b {
				b[i] = p.Byte()
			}
			v.SetBytes(b)
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		reflect.Copy(s, v)
		for i := v.Len(); i < n; i++ {
			base(s.Index(i))
			// A list of IDs or stamps must often be ascending or distinct:
			// the elements count up from the previous one.
			if s.Index(i).CanUint() && i > 0 {
				s.Index(i).SetUint(s.Index(i-1).Uint() + 1)
			}
		}
		v.Set(s)
	}
	// Other kinds (none in today's payloads) are left as they are.
}

// AnyFrame is a frame to member self of one of kinds (all registered kinds
// when kinds is empty), from a member, self or a stranger (From), with a
// term of the program's choosing, a generic payload of its kind (Payload)
// and, one time in ten, a few bytes of garbage instead.
func AnyFrame(p *Program, kinds []wire.Kind, ids []uint32, self uint32) core.Message {
	if len(kinds) == 0 {
		kinds = wire.Kinds()
	}
	m := core.Message{Kind: kinds[p.Intn(len(kinds))], To: self, From: p.From(self, 9, ids), Term: p.U64(), Stream: p.Bool()}
	m.Payload = p.Payload(m.Kind)
	if p.Intn(10) == 0 {
		m.Payload = []byte{p.Byte(), p.Byte(), p.Byte()}
	}
	return m
}
