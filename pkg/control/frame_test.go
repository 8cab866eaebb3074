package control

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// sampleMessages has one message of every type, with every field its type
// uses.
func sampleMessages() []*Message {
	return []*Message{
		{Type: TypeHello, Protocol: 1, Version: "v1.3.0", Hostname: "node2", Nonce: strings.Repeat("ab", NonceSize), TokenRequired: true},
		{Type: TypeHello, Protocol: 1, Version: "dev"},
		{Type: TypeAuth, MAC: mac("secret", []byte("nonce"))},
		{Type: TypeAuth},
		{Type: TypeRun, Test: "write-bw", Spec: json.RawMessage(`{"test":"write-bw","sizes":[2,4096]}`)},
		{Type: TypeAccepted},
		{Type: TypeError, Code: CodeBusy, Msg: "busy: running write-bw for 10.0.0.3 since 12:00:01"},
		{Type: TypeExchange, Body: []byte(`{"phase":"setup","body":{"qpn":17}}`)},
		{Type: TypeExchange, Body: []byte{0, 1, 2, 0xff, '"', '\\', '<', '\n'}},
		{Type: TypePing},
		{Type: TypeDone},
		{Type: TypeDone, Err: "size 4096: IBV_WC_RETRY_EXC_ERR"},
		{Type: TypeBye},
		{Type: TypeRegister, Data: json.RawMessage(`{"rank":3,"size":4,"addr":"10.0.0.3:40123"}`)},
		{Type: TypeJob, ID: 7, Data: json.RawMessage(`{"peer":2}`)},
		{Type: TypeJobDone, ID: 7, Data: json.RawMessage(`{"document":{}}`)},
		{Type: TypeJobDone, ID: 8, Err: "lost the server mid-test"},
		{Type: TypePeers, Data: json.RawMessage(`{"self":"10.0.0.2:19515","expiry_ms":30000,"peers":[{"host":"node2","addr":"10.0.0.2:19515"}]}`)},
	}
}

func TestFrameRoundTrip(t *testing.T) {
	var stream bytes.Buffer
	for _, m := range sampleMessages() {
		b, err := EncodeFrame(m, 0)
		if err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
		if n := binary.BigEndian.Uint32(b); int(n) != len(b)-4 {
			t.Fatalf("%s: header says %d, body is %d bytes", m.Type, n, len(b)-4)
		}
		if !json.Valid(b[4:]) || b[4] != '{' {
			t.Fatalf("%s: body is not a JSON object: %s", m.Type, b[4:])
		}
		got, err := DecodeFrame(b, 0)
		if err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", b[4:], got, m)
		}
		if err := WriteFrame(&stream, m, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range sampleMessages() {
		got, err := ReadFrame(&stream, 0)
		if err != nil {
			t.Fatalf("read %s: %v", m.Type, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("stream round trip:\n got %+v\nwant %+v", got, m)
		}
	}
	if _, err := ReadFrame(&stream, 0); err != io.EOF {
		t.Errorf("read past the last frame: %v, want io.EOF", err)
	}
}

// An exchange body is any bytes, JSON or not, and comes back byte for byte
// (whitespace and HTML characters included).
func TestExchangeBodyExact(t *testing.T) {
	bodies := [][]byte{
		[]byte(`{ "phase" : "results",  "body": {"a":"<b>&amp;</b>"} }` + "\n"),
		[]byte("not json at all \x00\xff"),
		bytes.Repeat([]byte{0xfe}, 70000),
	}
	for _, body := range bodies {
		b, err := EncodeFrame(&Message{Type: TypeExchange, Body: body}, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := DecodeFrame(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.Body, body) {
			t.Errorf("body %q came back as %q", body, m.Body)
		}
	}
}

func frame(body string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

func TestFrameTooLarge(t *testing.T) {
	// A declared 4 GiB is refused after reading the header alone, without
	// allocating anything near it.
	hdr := []byte{0xff, 0xff, 0xff, 0xff}
	r := bytes.NewReader(append(hdr, "more bytes that must stay unread"...))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(r, 0)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("4 GiB frame: %v, want ErrFrameTooLarge", err)
	}
	if consumed := r.Size() - int64(r.Len()); consumed != 4 {
		t.Errorf("read %d bytes, want only the 4-byte header", consumed)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 64<<10 {
		t.Errorf("allocated %d bytes refusing a 4 GiB frame", a)
	}
	if _, err := DecodeFrame(hdr, 0); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("DecodeFrame of a 4 GiB header: %v", err)
	}
	if !strings.Contains(err.Error(), "4294967295 bytes declared, the limit is 1048576") {
		t.Errorf("message %q does not give the sizes", err)
	}

	// The limit is configurable, for reading and writing.
	big := &Message{Type: TypeExchange, Body: bytes.Repeat([]byte("x"), 300)}
	b, err := EncodeFrame(big, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFrame(bytes.NewReader(b), 100); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("read with limit 100: %v", err)
	}
	if _, err := EncodeFrame(big, 100); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("encode with limit 100: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(b), len(b)-4); err != nil {
		t.Errorf("a frame exactly at the limit: %v", err)
	}
}

func TestBadFrames(t *testing.T) {
	cases := map[string][]byte{
		"zero length":        {0, 0, 0, 0},
		"array":              frame(`[1,2]`),
		"null":               frame(`null`),
		"string":             frame(`"hello"`),
		"number":             frame(`42`),
		"blank":              frame(`   `),
		"invalid json":       frame(`{"type":"ping"`),
		"trailing garbage":   frame(`{"type":"ping"} x`),
		"no type":            frame(`{"protocol":1}`),
		"unknown type":       frame(`{"type":"reboot"}`),
		"type not a string":  frame(`{"type":7}`),
		"hello no protocol":  frame(`{"type":"hello","version":"dev"}`),
		"run no spec":        frame(`{"type":"run","test":"write-bw"}`),
		"error no code":      frame(`{"type":"error","message":"x"}`),
		"body not base64":    frame(`{"type":"exchange","body":"%%%"}`),
		"field of bad type":  frame(`{"type":"hello","protocol":"one"}`),
		"binary":             frame("\x00\x01\x02"),
		"shorter than a hdr": {0, 0},
	}
	for name, b := range cases {
		_, err := DecodeFrame(b, 0)
		if !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: DecodeFrame: %v, want ErrBadFrame", name, err)
		}
		if len(b) >= 4 {
			if _, err := ReadFrame(bytes.NewReader(b), 0); !errors.Is(err, ErrBadFrame) {
				t.Errorf("%s: ReadFrame: %v, want ErrBadFrame", name, err)
			}
		}
	}
	// Declared and present lengths must agree in DecodeFrame.
	b := frame(`{"type":"ping"}`)
	if _, err := DecodeFrame(append(b, 'x'), 0); !errors.Is(err, ErrBadFrame) {
		t.Errorf("extra byte: %v", err)
	}
	// Writing a message of unknown type is refused before anything is written.
	var w bytes.Buffer
	if err := WriteFrame(&w, &Message{Type: "nope"}, 0); !errors.Is(err, ErrBadFrame) || w.Len() != 0 {
		t.Errorf("write unknown type: %v, %d bytes written", err, w.Len())
	}
	// Unknown fields are ignored, for later protocol additions.
	if m, err := DecodeFrame(frame(`{"type":"ping","future":true}`), 0); err != nil || m.Type != TypePing {
		t.Errorf("unknown field: %v", err)
	}
}

func TestTruncatedFrames(t *testing.T) {
	full := frame(`{"type":"done","error":"boom"}`)
	for n := 0; n < len(full); n++ {
		_, err := ReadFrame(bytes.NewReader(full[:n]), 0)
		want := io.ErrUnexpectedEOF
		if n == 0 {
			want = io.EOF
		}
		if err != want {
			t.Errorf("%d of %d bytes: %v, want %v", n, len(full), err, want)
		}
		if n >= 4 {
			if _, err := DecodeFrame(full[:n], 0); !errors.Is(err, ErrBadFrame) {
				t.Errorf("DecodeFrame of %d of %d bytes: %v", n, len(full), err)
			}
		}
	}
}

func TestMAC(t *testing.T) {
	nonce := bytes.Repeat([]byte{7}, NonceSize)
	m := mac("token", nonce)
	if len(m) != 64 || strings.Contains(m, "token") {
		t.Fatalf("mac %q", m)
	}
	if !checkMAC("token", nonce, m) {
		t.Error("the right MAC is refused")
	}
	for _, bad := range []string{"", "zz", mac("other", nonce), mac("token", bytes.Repeat([]byte{8}, NonceSize)), m[:62]} {
		if checkMAC("token", nonce, bad) {
			t.Errorf("MAC %q accepted", bad)
		}
	}
	if checkMAC("token", nonce, "") {
		t.Error("a missing MAC is accepted")
	}
}
