package verbs

import (
	"bytes"
	"testing"
)

func TestCMPrivate(t *testing.T) {
	g, _ := ParseGID("::ffff:10.0.0.2")
	p := cmPrivate{Index: 3, QPN: 0x123456, GID: g}
	b := p.marshal()
	if len(b) != cmPrivateLen || len(b) > 56 {
		t.Fatalf("%d bytes", len(b))
	}
	// The transport pads private data with zeros.
	got, err := parseCMPrivate(append(b, make([]byte, 20)...))
	if err != nil || got != p {
		t.Fatalf("parse = %+v, %v; want %+v", got, err, p)
	}
	for _, bad := range [][]byte{nil, b[:10], append([]byte("xxxx"), b[4:]...)} {
		if _, err := parseCMPrivate(bad); err == nil {
			t.Errorf("parse(%x) succeeded", bad)
		}
	}
	huge := cmPrivate{QPN: 1 << 24}.marshal()
	if _, err := parseCMPrivate(huge); err == nil {
		t.Error("a QP number beyond 24 bits was taken")
	}
}

// FuzzCMPrivate: the private data of a connection request comes from the
// peer: any bytes decode or are refused, and what decodes encodes back.
func FuzzCMPrivate(f *testing.F) {
	g, _ := ParseGID("::ffff:10.0.0.2")
	f.Add(cmPrivate{Index: 1, QPN: 0x11, GID: g}.marshal())
	f.Add([]byte("rbcm"))
	f.Add(make([]byte, 56))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseCMPrivate(b)
		if err != nil {
			return
		}
		if !bytes.Equal(p.marshal(), b[:cmPrivateLen]) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, p, p.marshal())
		}
	})
}
