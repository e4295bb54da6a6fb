package wire

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// NTP symmetric-key authentication (RFC 5905 section 7.3, RFC 8573), as
// chrony and ntpd implement it.
//
// An authenticated packet carries a MAC after the 48-byte header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 NTP header (NTPHeaderLen bytes)               |  0
//	~                                                               ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                            Key ID                             | 48
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|       Digest = H(secret || header), 16..20 bytes (NTPv4)      | 52
//	~                    16..64 bytes (NTPv3 and older)             ~
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The digest is the classic NTP keyed hash, the hash of the secret followed
// by the packet: NOT an HMAC. A MAC of only a zero key ID (4 bytes, no
// digest) is a crypto-NAK: a server's "I could not authenticate you".
//
// Digest length, as chrony 4.x does it (read in chrony's ntp_core.c,
// ntp_auth.c and keys.c): an NTPv4 packet cannot carry a MAC longer than 24
// bytes (NTP_MAX_V4_MAC_LENGTH), or it would be parsed as an extension
// field (RFC 7822), so digests longer than 20 bytes (SHA-256 and up) are
// truncated to 20 in NTPv4 packets; the receiver compares against its digest
// truncated the same way (check_auth: MIN(hash_len, trunc_len) == auth_len).
// NTPv3 packets have no extension fields and carry the whole digest (up to
// 64 bytes, NTP_MAX_MAC_LENGTH - 4): that is why a chrony client with a key
// whose digest is longer than 20 bytes speaks NTPv3 by default ("If the MAC
// in NTPv4 packets would be truncated, use version 3 by default for
// compatibility with older chronyd servers"). This package follows the
// packet's version field on both sides, so it interoperates either way.
// chrony requires at least 16 digest bytes (NTP_MIN_MAC_LENGTH - 4), and so
// does this package.
//
// ntpsec differs in one place: its ntpd truncates to 20 bytes as chrony
// does (MAX_BARE_MAC_LENGTH), but its ntpdig (Python) sends NTPv4 requests
// with the whole digest (32 bytes for SHA-256) and accepts only a reply
// whose digest is whole too. So an NTPv4 trailer longer than 24 bytes is
// read by this rule (SplitNTPMAC):
//
//   - 36, 52 or 68 bytes (a key ID and a whole SHA-256, SHA-384 or SHA-512
//     digest): a MAC with a whole digest, which VerifyNTPMAC checks against
//     the key's whole digest and AppendNTPMACWhole answers in kind. (A
//     trailer of that length that is really extension fields is told apart
//     by its key ID naming no key of ours: see NTPExtensionFields.)
//   - otherwise, RFC 7822 extension fields (each a 4-byte type and length
//     header, 16 bytes or more, a multiple of 4), possibly followed by a
//     MAC of 20 or 24 bytes: reported as DecodeUnsupported;
//   - anything else: malformed (DecodeBadLength), to be dropped and counted.

// NTPKey is a symmetric NTP key, as in a chrony keys file.
type NTPKey struct {
	ID     uint32 // 1..2^32-1; 0 is the crypto-NAK
	Type   string // "MD5", "SHA1", "SHA256", "SHA384" or "SHA512"
	Secret []byte
}

// ntpHash describes one supported digest.
type ntpHash struct {
	name string
	size int
	new  func() hash.Hash
}

var ntpHashes = [...]ntpHash{
	{"MD5", md5.Size, md5.New},
	{"SHA1", sha1.Size, sha1.New},
	{"SHA256", sha256.Size, sha256.New},
	{"SHA384", sha512.Size384, sha512.New384},
	{"SHA512", sha512.Size, sha512.New},
}

// chronyOtherTypes are key types chrony knows and this package does not
// implement, to tell "unsupported" from "misspelt" in errors.
var chronyOtherTypes = [...]string{
	"SHA3-224", "SHA3-256", "SHA3-384", "SHA3-512", "RMD128", "RMD160",
	"RMD256", "RMD320", "TIGER", "WHIRLPOOL", "AES128", "AES256",
}

func lookupNTPHash(typ string) *ntpHash {
	if typ == "" {
		typ = "MD5" // chrony's default when a key line has no type
	}
	for i := range ntpHashes {
		if strings.EqualFold(ntpHashes[i].name, typ) {
			return &ntpHashes[i]
		}
	}
	return nil
}

// ntpMaxDigestFor is the longest digest a packet of this version carries.
func ntpMaxDigestFor(pkt []byte) int {
	if len(pkt) > 0 && pkt[offNTPFlags]>>ntpVersionShift&ntpVersionMask >= ntpVersionV4 {
		return ntpMaxV4Digest
	}
	return ntpMaxDigest
}

// AppendNTPMAC appends a MAC computed with k to pkt, an encoded NTP packet
// (the header, and any extension fields, as they will be sent), and returns
// the extended slice (append semantics). The digest is truncated to 20
// bytes if pkt is NTPv4 (see above). It panics if k.Type is not supported:
// keys come from ParseChronyKeys, which refuses those.
func AppendNTPMAC(pkt []byte, k NTPKey) []byte { return appendNTPMAC(pkt, k, ntpMaxDigestFor(pkt)) }

// NTPSigner signs NTP packets with one key, the digest truncated as
// AppendNTPMAC does or whole (Whole, AppendNTPMACWhole): a server answers a
// signed request in kind, after it wrote the reply's transmit time.
type NTPSigner struct {
	Key   NTPKey
	Whole bool
}

// Append appends the MAC of pkt to it (append semantics).
func (s *NTPSigner) Append(pkt []byte) []byte {
	if s.Whole {
		return AppendNTPMACWhole(pkt, s.Key)
	}
	return AppendNTPMAC(pkt, s.Key)
}

// AppendNTPMACWhole is AppendNTPMAC with the whole digest whatever the
// version: the answer to a request that carried one (ntpsec's ntpdig,
// which refuses a truncated one). For MD5 and SHA1 it is AppendNTPMAC.
func AppendNTPMACWhole(pkt []byte, k NTPKey) []byte { return appendNTPMAC(pkt, k, ntpMaxDigest) }

// appendNTPMAC appends k's key ID and digest of pkt, cut to at most limit
// bytes.
func appendNTPMAC(pkt []byte, k NTPKey, limit int) []byte {
	h := lookupNTPHash(k.Type)
	if h == nil {
		panic("wire: signing an NTP packet with unsupported key type " + strconv.Quote(k.Type))
	}
	// Hash before appending: appending may reallocate, and must not
	// change what is hashed either way.
	var buf [ntpMaxDigest]byte
	digest := ntpWholeDigest(buf[:0], h, k.Secret, pkt)
	pkt = binary.BigEndian.AppendUint32(pkt, k.ID)
	return append(pkt, digest[:min(len(digest), limit)]...)
}

// ntpWholeDigest computes H(secret || pkt) into dst (appending), untruncated.
func ntpWholeDigest(dst []byte, h *ntpHash, secret, pkt []byte) []byte {
	d := h.new()
	d.Write(secret)
	d.Write(pkt)
	return d.Sum(dst)
}

// ntpWholeMACLen reports whether a trailer of n bytes after an NTPv4 header
// is a key ID and a whole digest longer than 20 bytes (SHA-256, -384, -512).
func ntpWholeMACLen(n int) bool {
	for i := range ntpHashes {
		if d := ntpHashes[i].size; d > ntpMaxV4Digest && n == ntpKeyIDLen+d {
			return true
		}
	}
	return false
}

// ntpExtensionMinLen is the shortest RFC 7822 extension field: a 4-byte
// header and 12 bytes of value.
const ntpExtensionMinLen = 16

// NTPExtensionFields reports whether the bytes after an NTPv4 header (b is
// the whole packet) are RFC 7822 extension fields, possibly followed by a
// MAC of 20 or 24 bytes: each field a 2-byte type and a 2-byte length that
// covers the field, at least 16 bytes and a multiple of 4. It does not
// allocate.
func NTPExtensionFields(b []byte) bool {
	if len(b) <= NTPHeaderLen+ntpKeyIDLen+ntpMaxV4Digest || len(b)%4 != 0 {
		return false
	}
	for rest := b[NTPHeaderLen:]; len(rest) > 0; {
		if n := len(rest); n == ntpKeyIDLen+ntpMinDigest || n == ntpKeyIDLen+ntpMaxV4Digest {
			return true // a MAC after the fields
		}
		if len(rest) < ntpExtensionMinLen {
			return false
		}
		l := int(binary.BigEndian.Uint16(rest[2:]))
		if l < ntpExtensionMinLen || l%4 != 0 || l > len(rest) {
			return false
		}
		rest = rest[l:]
	}
	return true
}

// SplitNTPMAC splits a received NTP packet into the part the MAC covers and
// the MAC. Extension fields are not supported: b must be the 48-byte header
// followed by nothing, by a crypto-NAK (a zero key ID alone), or by a key ID
// and a digest of 16..20 bytes (NTPv4; or a whole digest of 32, 48 or 64
// bytes, see above) or 16..64 bytes (older versions), with a total length
// that is a multiple of 4. It returns:
//
//   - no MAC: pkt = b, keyID 0, digest nil;
//   - crypto-NAK: pkt = b[:48], keyID 0, a non-nil empty digest (IsCryptoNAK);
//   - MAC: pkt = b[:48], its key ID and digest (aliasing b).
//
// Anything else is a *DecodeError: DecodeTruncated below 48 bytes,
// DecodeUnsupported for NTPv4 extension fields (NTPExtensionFields),
// DecodeBadLength otherwise. It does not allocate.
func SplitNTPMAC(b []byte) (pkt []byte, keyID uint32, digest []byte, err error) {
	if len(b) < NTPHeaderLen {
		return nil, 0, nil, decodeErr(ntpMACWhat, DecodeTruncated, "", len(b), NTPHeaderLen)
	}
	if len(b)%4 != 0 {
		return nil, 0, nil, decodeErr(ntpMACWhat, DecodeBadLength, "not a multiple of 4", len(b), -1)
	}
	if len(b) == NTPHeaderLen {
		return b, 0, nil, nil
	}
	pkt = b[:NTPHeaderLen]
	keyID = binary.BigEndian.Uint32(b[NTPHeaderLen:])
	digest = b[NTPHeaderLen+ntpKeyIDLen:]
	n := len(digest)
	switch {
	case n == 0 && keyID == 0:
		return pkt, 0, digest, nil // crypto-NAK
	case n < ntpMinDigest:
		return nil, 0, nil, decodeErr(ntpMACWhat, DecodeBadLength, "digest", n, ntpMinDigest)
	case n > ntpMaxDigestFor(b):
		if ntpMaxDigestFor(b) != ntpMaxV4Digest {
			return nil, 0, nil, decodeErr(ntpMACWhat, DecodeBadLength, "digest", n, ntpMaxDigest)
		}
		switch {
		case ntpWholeMACLen(len(b) - NTPHeaderLen):
			return pkt, keyID, digest, nil // a whole digest (ntpsec's ntpdig)
		case NTPExtensionFields(b):
			return nil, 0, nil, decodeErr(ntpMACWhat, DecodeUnsupported, "extension fields", len(b)-NTPHeaderLen, -1)
		}
		return nil, 0, nil, decodeErr(ntpMACWhat, DecodeBadLength, "neither a MAC nor extension fields", len(b)-NTPHeaderLen, -1)
	}
	return pkt, keyID, digest, nil
}

// IsCryptoNAK reports whether b is an NTP packet whose MAC is a crypto-NAK
// (RFC 5905 section 7.3: the key ID 0 alone).
func IsCryptoNAK(b []byte) bool {
	return len(b) == ntpCryptoNAKLen && binary.BigEndian.Uint32(b[NTPHeaderLen:]) == 0
}

// VerifyNTPMAC checks the MAC of a received packet (the parts SplitNTPMAC
// returned) against keys, in constant time with respect to the digest. It
// returns ErrNTPUnknownKey if no key has keyID (or keyID is 0), and
// ErrNTPBadMAC if the digest differs, or its length is neither the key's
// digest length truncated as pkt's version requires nor its whole length.
func VerifyNTPMAC(pkt []byte, keyID uint32, digest []byte, keys []NTPKey) error {
	var k *NTPKey
	for i := range keys {
		if keyID != 0 && keys[i].ID == keyID {
			k = &keys[i]
			break
		}
	}
	if k == nil {
		return fmt.Errorf("%w: %d", ErrNTPUnknownKey, keyID)
	}
	h := lookupNTPHash(k.Type)
	if h == nil {
		return fmt.Errorf("%w: key %d has unsupported type %q", ErrNTPUnknownKey, keyID, k.Type)
	}
	var buf [ntpMaxDigest]byte
	want := ntpWholeDigest(buf[:0], h, k.Secret, pkt)
	if len(digest) != len(want) {
		// Truncated as the version requires (the lengths are public).
		want = want[:min(len(want), ntpMaxDigestFor(pkt))]
	}
	if len(digest) != len(want) || subtle.ConstantTimeCompare(digest, want) != 1 {
		return fmt.Errorf("%w: key %d", ErrNTPBadMAC, keyID)
	}
	return nil
}

// ParseChronyKeys parses a chrony keys file (chrony.conf(5), "keyfile"),
// so that timed can share keys with chronyd. Each line is
//
//	ID [TYPE] KEY
//
// where ID is a decimal key ID in 1..4294967295, TYPE a digest name (MD5 if
// omitted; MD5, SHA1, SHA256, SHA384 and SHA512 are supported, in any case)
// and KEY the secret: "HEX:" followed by hexadecimal digits, or ASCII
// (optionally prefixed "ASCII:") without white space. As in chrony, a line
// whose first non-blank character is '#', ';', '!' or '%' is a comment (a
// '#' later on a line is part of the key). Unlike chrony, which warns and
// skips bad lines, any bad line is an error (a *KeyFileError: a skipped key
// shows up much later as unexplained authentication failures), and so are
// duplicate IDs and key types chrony has that this package lacks (SHA3-*,
// AES128/AES256 CMAC, ...). Keys shorter than 10 bytes are accepted, as
// chrony does (it warns: below 80 bits they are insecure); callers may warn
// too. Types are normalised to upper case.
func ParseChronyKeys(data []byte) ([]NTPKey, error) {
	var keys []NTPKey
	seen := make(map[uint32]bool)
	for lineNo := 1; len(data) > 0; lineNo++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		fields := strings.Fields(string(line))
		if len(fields) == 0 || strings.ContainsRune("#;!%", rune(fields[0][0])) {
			continue
		}
		fail := func(err error) ([]NTPKey, error) {
			return nil, &KeyFileError{Format: "chrony", Line: lineNo, Err: err}
		}
		if len(fields) != 2 && len(fields) != 3 {
			return fail(fmt.Errorf("%w: want \"ID [TYPE] KEY\", got %d fields", ErrKeySyntax, len(fields)))
		}
		id, err := parseKeyID(fields[0])
		if err != nil {
			return fail(err)
		}
		if seen[id] {
			return fail(fmt.Errorf("%w: %d", ErrKeyDuplicate, id))
		}
		seen[id] = true
		typ, key := "MD5", fields[1]
		if len(fields) == 3 {
			typ, key = strings.ToUpper(fields[1]), fields[2]
		}
		h := lookupNTPHash(typ)
		if h == nil {
			what := "unknown"
			for _, o := range chronyOtherTypes {
				if typ == o {
					what = "not implemented here"
				}
			}
			return fail(fmt.Errorf("%w: key %d: %q (%s; use MD5, SHA1, SHA256, SHA384 or SHA512)", ErrKeyType, id, typ, what))
		}
		var secret []byte
		switch {
		case strings.HasPrefix(key, "HEX:"):
			secret, err = hex.DecodeString(key[4:])
			if err != nil {
				return fail(fmt.Errorf("%w: key %d: want hexadecimal digits in pairs after HEX:", ErrKeyEncoding, id))
			}
		case strings.HasPrefix(key, "ASCII:"):
			secret = []byte(key[6:])
		default:
			secret = []byte(key)
		}
		if len(secret) == 0 {
			return fail(fmt.Errorf("%w: key %d is empty", ErrKeyEncoding, id))
		}
		if len(secret) > maxKeyLen {
			return fail(fmt.Errorf("%w: key %d is longer than %d bytes", ErrKeyEncoding, id, maxKeyLen))
		}
		keys = append(keys, NTPKey{ID: id, Type: h.name, Secret: secret})
	}
	return keys, nil
}

// FormatChronyKeys writes keys as a chrony keys file ("ID TYPE HEX:..."
// lines), which both chronyd and ParseChronyKeys read: the lab harness
// uses it to give chronyd the keys timed uses.
func FormatChronyKeys(keys []NTPKey) []byte {
	var b []byte
	for _, k := range keys {
		typ := k.Type
		if typ == "" {
			typ = "MD5"
		}
		b = strconv.AppendUint(b, uint64(k.ID), 10)
		b = append(b, ' ')
		b = append(b, typ...)
		b = append(b, " HEX:"...)
		b = hex.AppendEncode(b, k.Secret)
		b = append(b, '\n')
	}
	return b
}
