package signing

import (
	"crypto/sha256"
	"hash"
	"strconv"
	"sync"
)

// An HMAC-SHA256 (RFC 2104) on pooled hash states. crypto/hmac.New
// allocates two digests and both padded keys for every signature, six
// allocations; a delivery signs three times (its signature, the legacy
// signature and its async token), which made signing a visible share of
// building a delivery in a burst
// (docs/benchmarks.md, "The delivery's HTTP/1.1 exchange"). The states
// here are reused, and the sum goes into the caller's buffer.
// TestMACIsCryptoHMAC checks it against crypto/hmac for keys shorter than,
// as long as and longer than a block.
type mac struct {
	inner, outer hash.Hash
	pad          [sha256.BlockSize]byte
	sum          [sha256.Size]byte
	// scratch holds what is written next to the message (a timestamp),
	// so that no caller's buffer escapes through hash.Hash's Write.
	scratch [64]byte
}

var macs = sync.Pool{New: func() any {
	return &mac{inner: sha256.New(), outer: sha256.New()}
}}

// newMAC takes a state from the pool keyed with key; done returns it.
func newMAC[K string | []byte](key K) *mac {
	m := macs.Get().(*mac)
	for i := range m.pad {
		m.pad[i] = 0x36
	}
	if len(key) > sha256.BlockSize {
		// RFC 2104: a key longer than a block is replaced by its hash.
		m.sum = sha256.Sum256([]byte(key))
		for i, b := range m.sum {
			m.pad[i] ^= b
		}
	} else {
		for i := 0; i < len(key); i++ {
			m.pad[i] ^= key[i]
		}
	}
	m.inner.Reset()
	m.inner.Write(m.pad[:])
	return m
}

func (m *mac) write(p []byte) { m.inner.Write(p) }

// finish returns the HMAC. The state must not be used after done.
func (m *mac) finish() []byte {
	inner := m.inner.Sum(m.sum[:0])
	for i := range m.pad {
		m.pad[i] ^= 0x36 ^ 0x5c // the key's inner pad becomes its outer pad
	}
	m.outer.Reset()
	m.outer.Write(m.pad[:])
	m.outer.Write(inner)
	return m.outer.Sum(m.sum[:0])
}

// done wipes the key from the state and returns it to the pool.
func (m *mac) done() {
	clear(m.pad[:])
	m.inner.Reset()
	m.outer.Reset()
	macs.Put(m)
}

// writeTimestamp writes timestamp in decimal, then sep.
func (m *mac) writeTimestamp(timestamp int64, sep byte) {
	b := append(strconv.AppendInt(m.scratch[:0], timestamp, 10), sep)
	m.inner.Write(b)
}

// AppendHMAC appends HMAC-SHA256(key, the parts one after another) to dst.
// The parts are copied into the state's own buffer, so the caller's (a
// stack array, say) do not escape to the heap.
func AppendHMAC(dst, key []byte, parts ...[]byte) []byte {
	m := newMAC(key)
	for _, p := range parts {
		writeCopied(m, p)
	}
	dst = append(dst, m.finish()...)
	m.done()
	return dst
}

// writeCopied writes p through the state's own buffer: p itself is never
// handed to hash.Hash's Write, through which it would escape.
func writeCopied[T string | []byte](m *mac, p T) {
	for len(p) > 0 {
		n := copy(m.scratch[:], p)
		m.inner.Write(m.scratch[:n])
		p = p[n:]
	}
}
