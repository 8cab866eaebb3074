package watch

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// FuzzParsePeers: any file parses to peers or to a *PeersError naming a
// line, never a panic; every peer is host:port, and the peers, written one
// a line, parse to themselves.
func FuzzParsePeers(f *testing.F) {
	for _, s := range []string{"node-a\nnode-b:19600 # b\n", "[::1]:1\n::1\n", "# only\n\n", "a b\n", "x:0\n", "\xff\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		peers, err := ParsePeers(data, 19515)
		if err != nil {
			var pe *PeersError
			if !errors.As(err, &pe) || pe.Kind != PeersParse || pe.Line < 1 {
				t.Fatalf("error %v is not a parse error naming a line", err)
			}
			return
		}
		for _, p := range peers {
			if _, _, err := net.SplitHostPort(p); err != nil {
				t.Fatalf("peer %q: %v", p, err)
			}
		}
		again, err := ParsePeers([]byte(strings.Join(peers, "\n")), 1)
		if err != nil || strings.Join(again, "\n") != strings.Join(peers, "\n") {
			t.Fatalf("%q parse again to %q, %v", peers, again, err)
		}
	})
}
