package control

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
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
// The spec is compared as the JSON value it holds: a re-encoding may write
// the same string differently ("&" or "\u0026").
func sameMessage(a, b *Message) bool {
	type normal struct {
		m    Message
		spec any
		data any
	}
	norm := func(m *Message) normal {
		c := normal{m: *m}
		if len(c.m.Body) == 0 {
			c.m.Body = nil
		}
		if len(c.m.Spec) > 0 && json.Unmarshal(c.m.Spec, &c.spec) == nil {
			c.m.Spec = nil
		}
		if len(c.m.Data) > 0 && json.Unmarshal(c.m.Data, &c.data) == nil {
			c.m.Data = nil
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// serverStream is what a good server sends a client that runs two tests:
// the handshake, then for each test accepted, an exchange and done.
func serverStream(extra ...*Message) []byte {
	var b []byte
	ms := []*Message{
		{Type: TypeHello, Protocol: buildinfo.ProtocolVersion, Version: buildinfo.Version, Hostname: "fake", Nonce: strings.Repeat("ab", NonceSize)},
		{Type: TypeAccepted},
		{Type: TypeAccepted}, {Type: TypePing}, {Type: TypeExchange, Body: []byte("x")}, {Type: TypeDone},
		{Type: TypeAccepted}, {Type: TypeDone, Err: "size 4096: IBV_WC_RETRY_EXC_ERR"},
	}
	for _, m := range append(ms, extra...) {
		f, err := EncodeFrame(m, 0)
		if err != nil {
			panic(err)
		}
		b = append(b, f...)
	}
	return b
}

// FuzzClient plays arbitrary bytes as the server's side of a connection to
// a real client that runs two tests (Run, Send, Recv, Finish, then Run and
// Finish again) and closes. Whatever the bytes, every call returns (no
// hang), nothing panics, and each error is a named one.
func FuzzClient(f *testing.F) {
	good := serverStream()
	f.Add(good)
	f.Add(serverStream(&Message{Type: TypeDone}))                                     // done twice
	f.Add(serverStream(&Message{Type: TypeBye}))                                      // bye after the tests
	f.Add(append(serverStream()[:len(good)/2], 0xff, 0xff, 0xff, 0xff))               // an oversize length mid-way
	f.Add(append(slices.Clone(good[:60]), []byte("\x00\x00\x00\x05hello")...))        // junk after hello
	f.Add(append(frame(`{"type":"accepted"}`), good...))                              // accepted before hello
	f.Add(frame(`{"type":"hello","protocol":1,"nonce":"00"}`))                        // a short nonce
	f.Add(frame(`{"type":"error","code":"busy","message":"busy: running write-bw"}`)) // refused at once
	f.Fuzz(func(t *testing.T, stream []byte) {
		cli, srv := net.Pipe()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // the server's side: the bytes, then close
			defer wg.Done()
			_, _ = srv.Write(stream)
			_ = srv.Close()
		}()
		go func() { // and whatever the client sends is read
			defer wg.Done()
			_, _ = io.Copy(io.Discard, srv)
		}()
		defer wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		named := func(what string, err error) {
			var se *ServerError
			for _, s := range []error{ErrBadFrame, ErrFrameTooLarge, ErrProtocol, ErrPeerClosed, ErrPeerSilent, ErrClosed, ErrTestEnded, ErrVersion} {
				if errors.Is(err, s) {
					return
				}
			}
			if err == nil || errors.As(err, &se) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: still waiting after %v (a hang): %v", what, patience, err)
			}
			t.Fatalf("%s: an error without a name: %v (%T)", what, err, err)
		}
		c, err := newClient(ctx, cli, "fuzz:1", ClientOptions{Timeout: time.Second, Keepalive: 100 * time.Millisecond})
		if err != nil {
			named("dial", err)
			return
		}
		defer c.Close()
		for i := range 2 {
			s, err := c.Run(ctx, "echo", testSpec)
			if err != nil {
				named("run", err)
				continue
			}
			if i == 0 {
				named("send", s.Send(ctx, []byte("x")))
				_, err := s.Recv(ctx)
				named("recv", err)
			}
			named("finish", s.Finish(ctx))
		}
	})
}
