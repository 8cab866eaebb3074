package control

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// FuzzDecodeFrame feeds arbitrary bytes to the frame decoders, as a peer
// could. They must never panic, must refuse with ErrBadFrame or
// ErrFrameTooLarge, and what they accept must encode and decode again to
// the same message.
func FuzzDecodeFrame(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := EncodeFrame(m, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{"type":"run","spec":null}`, `{"type":"exchange","body":""}`, `[]`, `{"type":"hello","protocol":-1}`,
		`{"TYPE":"ping"}`, `{"type":"ping","type":"bye"}`, "{\"type\":\"error\",\"code\":\"x\",\"message\":\"\\ud800\"}"} {
		f.Add(frame(s))
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 1 << 16
		m, err := DecodeFrame(b, max)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("DecodeFrame: unexpected error %v", err)
			}
		} else {
			again, err := EncodeFrame(m, 0)
			if err != nil {
				t.Fatalf("re-encode %+v: %v", m, err)
			}
			m2, err := DecodeFrame(again, 0)
			if err != nil {
				t.Fatalf("decode re-encoded %s: %v", again, err)
			}
			if !sameMessage(m, m2) {
				t.Fatalf("not stable:\n%+v\n%+v", m, m2)
			}
		}
		// The stream reader over the same bytes: frame after frame until an
		// error, never a panic nor an unexpected error.
		r := bytes.NewReader(b)
		for range 100 {
			if _, err := ReadFrame(r, max); err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, ErrBadFrame) && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("ReadFrame: unexpected error %v", err)
				}
				break
			}
		}
	})
}

// FuzzDecodeMessage feeds arbitrary bodies to the message decoder.
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		b, _ := EncodeFrame(m, 0)
		f.Add(b[4:])
	}
	f.Add([]byte(`{"type":"hello","protocol":1e400}`))
	f.Add([]byte(`{"type":"run","spec":{"a":[1,2,{"b":null}]}}`))
	f.Add([]byte(`{"type":"exchange","body":"AAEC"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := decodeBody(body)
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		m2, err := DecodeFrame(append(b, body...), len(body))
		if err != nil || !sameMessage(m, m2) {
			t.Fatalf("body decodes alone but not as a frame: %v", err)
		}
	})
}

// sameMessage compares messages up to what encoding does not keep: an
// empty body is a missing one, and the spec's insignificant whitespace.
func sameMessage(a, b *Message) bool {
	norm := func(m *Message) Message {
		c := *m
		if len(c.Body) == 0 {
			c.Body = nil
		}
		if len(c.Spec) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, c.Spec) == nil {
				c.Spec = buf.Bytes()
			}
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
