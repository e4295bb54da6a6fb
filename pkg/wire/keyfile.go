package wire

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MinKeyLen is the shortest secret ParseKeyFile accepts: 128 bits, the
// strength of the truncated MAC. 32 bytes is the recommended length.
const MinKeyLen = 16

// maxKeyLen bounds a secret so that a corrupt file cannot make the daemon
// hold megabytes of "key"; HMAC-SHA256 hashes anything longer than its
// 64-byte block down to 32 bytes anyway.
const maxKeyLen = 1024

// ParseKeyFile parses a synclab key file: the shared secrets that
// authenticate frames (the --key-file of every daemon).
//
// The format is line-oriented text. '#' starts a comment, anywhere on a
// line; blank lines are ignored. A key line is two fields separated by
// spaces or tabs: the key ID, a decimal number in 1..4294967295 unique in
// the file, and the secret, hexadecimal (either case), optionally prefixed
// with "hex:", at least MinKeyLen bytes (32 hex digits), at most 1024:
//
//	# synclab keys: ID SECRET, one per line. The first key signs;
//	# every key listed is accepted. Generate a secret with
//	#   head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'
//	1 hex:5f0c2a...e9   # 32 bytes (64 hex digits), recommended
//	2 00112233445566778899aabbccddeeff
//
// Keys are returned in file order: the daemon signs with the first and
// accepts all, which is how keys are rotated without a flag day (add the new
// key second everywhere, then move it first everywhere, then remove the
// old). An error is a *KeyFileError naming the line; it never quotes the
// secret. A file with no key line yields no keys and no error.
func ParseKeyFile(data []byte) ([]Key, error) {
	var keys []Key
	seen := make(map[uint32]bool)
	for lineNo := 1; len(data) > 0; lineNo++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(string(line))
		if len(fields) == 0 {
			continue
		}
		fail := func(err error) ([]Key, error) {
			return nil, &KeyFileError{Format: "synclab", Line: lineNo, Err: err}
		}
		if len(fields) != 2 {
			return fail(fmt.Errorf("%w: want \"ID SECRET\", got %d fields", ErrKeySyntax, len(fields)))
		}
		id, err := parseKeyID(fields[0])
		if err != nil {
			return fail(err)
		}
		if seen[id] {
			return fail(fmt.Errorf("%w: %d", ErrKeyDuplicate, id))
		}
		seen[id] = true
		s := fields[1]
		if len(s) >= 4 && strings.EqualFold(s[:4], "hex:") {
			s = s[4:]
		}
		if len(s) > 2*maxKeyLen {
			return fail(fmt.Errorf("%w: more than %d bytes", ErrKeyEncoding, maxKeyLen))
		}
		secret, err := hex.DecodeString(s)
		if err != nil || len(secret) == 0 {
			// err would quote the offending byte: a piece of the secret.
			return fail(fmt.Errorf("%w: key %d: want hexadecimal digits in pairs", ErrKeyEncoding, id))
		}
		if len(secret) < MinKeyLen {
			return fail(fmt.Errorf("%w: key %d has %d bytes, want at least %d", ErrKeyShort, id, len(secret), MinKeyLen))
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	return keys, nil
}

// FormatKeyFile writes keys in the format ParseKeyFile reads (one
// "ID hex:SECRET" line each, in order), for tools that generate key files.
func FormatKeyFile(keys []Key) []byte {
	var b []byte
	b = append(b, "# synclab key file: ID hex:SECRET; the first key signs\n"...)
	for _, k := range keys {
		b = strconv.AppendUint(b, uint64(k.ID), 10)
		b = append(b, " hex:"...)
		b = hex.AppendEncode(b, k.Secret)
		b = append(b, '\n')
	}
	return b
}

// parseKeyID parses a decimal key ID in 1..2^32-1 (0 is reserved: NTP uses
// it for the crypto-NAK, and a zero value must never look like a key).
func parseKeyID(s string) (uint32, error) {
	// The value is not quoted in errors: a line with its fields swapped
	// would put the secret there.
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: want a decimal number in 1..4294967295", ErrKeyID)
		}
	}
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%w: want a decimal number in 1..4294967295", ErrKeyID)
	}
	return uint32(id), nil
}
