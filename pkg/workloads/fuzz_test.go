package workloads

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeEnvelope feeds arbitrary exchange messages, as the peer (a
// server, or a client) could send them, to the envelope decoder. It must
// never panic; its error is the peer's own (*PeerError), a phase mismatch,
// or a decoding error naming the phase; and what encodeEnvelope writes
// decodes back.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []struct{ phase, msg string }{
		{"setup", `{"phase":"setup","body":{"host":{"hostname":"node2"},"body":{"qpn":17,"psn":1,"gid":"fe80::1"}}}`},
		{"connected", `{"phase":"connected"}`},
		{"finished/0", `{"phase":"finished/0","body":{"sent":1000}}`},
		{"result/3", `{"phase":"result/3","body":{"error":"IBV_WC_RETRY_EXC_ERR"}}`},
		{"ready/0", `{"phase":"ready/0","error":"create cq: the CQ depth exceeds the device maximum"}`},
		{"setup", `{"phase":"ready/0"}`},
		{"setup", `{"phase":"setup","body":[1,2,3]}`},
		{"setup", `{"phase":"setup","body":{"host":{"cpus":1e400}}}`},
		{"setup", `[{"phase":"setup"}]`},
		{"setup", `{"phase":"setup","body":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`},
		{"setup", "\x00\xff"},
		{"setup", ``},
	} {
		f.Add(s.phase, []byte(s.msg))
	}
	f.Fuzz(func(t *testing.T, phase string, msg []byte) {
		for _, in := range []any{nil, new(map[string]any), new(json.RawMessage), new(struct {
			Sent   uint64 `json:"sent"`
			Failed bool   `json:"failed"`
			Err    string `json:"error"`
		})} {
			err := decodeEnvelope(phase, msg, in)
			var pe *PeerError
			switch {
			case err == nil, errors.As(err, &pe), errors.Is(err, ErrPhaseMismatch):
			case strings.HasPrefix(err.Error(), "decode "+phase+": "):
			default:
				t.Fatalf("decodeEnvelope(%q, %q): unexpected error %v", phase, msg, err)
			}
		}
		// Round trips: a message and a failure this end would send (phases
		// are the program's own names: valid UTF-8).
		if !utf8.ValidString(phase) {
			return
		}
		var body any
		if json.Unmarshal(msg, &body) == nil {
			enc, err := encodeEnvelope(phase, body)
			if err != nil {
				t.Fatalf("encode %q: %v", msg, err)
			}
			var back any
			if err := decodeEnvelope(phase, enc, &back); err != nil {
				t.Fatalf("decode what was encoded (%s): %v", enc, err)
			}
		}
		enc, err := encodeEnvelope(phase, Fail(errors.New(string(msg))))
		if err != nil {
			t.Fatal(err)
		}
		var pe *PeerError
		if err := decodeEnvelope(phase, enc, nil); !errors.As(err, &pe) || pe.Phase != phase {
			t.Fatalf("a failure decodes as %v", err)
		}
	})
}

// FuzzParseSizes feeds arbitrary -s values to the size list parser: it
// never panics, and a list it accepts is sorted, without duplicates, each
// size between 1 B and MaxSize.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"2,64,4K", "2..8M", "3..16", "1KiB,1MB", "1G", "1..1G", "0", "-4", "4..2", "1.5K", ",", "2,,4",
		"1e3", "1E9", "8M..8M", "1T", "99999999999999999999", "0x10", "NaN", "Inf", " 4 , 8 ", "2..", "..4", "1..2..3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := ParseSizes(s)
		if err != nil {
			if sizes != nil {
				t.Fatalf("%q: error %v with sizes %v", s, err, sizes)
			}
			return
		}
		if len(sizes) == 0 {
			t.Fatalf("%q: no sizes and no error", s)
		}
		if !slices.IsSorted(sizes) || len(slices.Compact(slices.Clone(sizes))) != len(sizes) {
			t.Fatalf("%q: %v not sorted or with duplicates", s, sizes)
		}
		if sizes[0] < 1 || sizes[len(sizes)-1] > MaxSize {
			t.Fatalf("%q: %v out of [1, %d]", s, sizes, MaxSize)
		}
	})
}
