package testutil

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// FixedPort is a TCP port free on 127.0.0.1 now, for a listener that a
// test starts later (a mesh's coordinator, which the ranks dial before it
// may listen). It lies below Linux's ephemeral range (32768 and up), so
// that no listener or connection on port 0 started meanwhile, a rank's test
// server say, is given it.
func FixedPort(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := 20000 + rand.IntN(12000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		// The coordinator listens on every address: the port must be free
		// there too.
		if ln, err = net.Listen("tcp", ":"+strconv.Itoa(p)); err != nil {
			continue
		}
		ln.Close()
		return p
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}
