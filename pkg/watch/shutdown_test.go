package watch

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPeerShutdownClean: an agent whose peer (another agent) stops
// cleanly between two probes counts the probe that finds it gone over
// the kept connection as result closed (the peer's server said bye), not
// protocol, and the probes after it, finding no server, as connect.
func TestPeerShutdownClean(t *testing.T) {
	bln := listen(t)
	file := filepath.Join(t.TempDir(), "peers")
	write(t, file, "")
	b, err := New(Config{Host: "b", Serve: bln, PeersFile: file, Probe: probeRequest(), Log: &testLog{t: t, name: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	stopB := runAgent(t, "b", b)
	aFile := filepath.Join(t.TempDir(), "peers")
	write(t, aFile, bln.Addr().String()+"\n")
	// One probe a second: b stops right after one, long before the next.
	a, err := New(Config{Host: "a", Serve: listen(t), PeersFile: aFile, Probe: probeRequest(), Rate: 1,
		BlameEvery: time.Hour, Log: &testLog{t: t, name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, "a", a)
	count := func(r string) uint64 {
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.st.peers) == 0 {
			return 0
		}
		return a.st.peers[0].probes[resultIndex(r)]
	}
	waitFor(t, func() bool { return count(ResultOK) >= 1 }, func() string { return "a has not probed b well" })
	ok := count(ResultOK)
	waitFor(t, func() bool { return count(ResultOK) > ok }, func() string { return "a has not probed b well twice" })
	stopB()
	waitFor(t, func() bool { return count(ResultConnect) >= 1 }, func() string { return "a has not found b gone" })
	if c, p := count(ResultClosed), count(ResultProtocol); c != 1 || p != 0 {
		t.Errorf("b stopped cleanly: closed %d, protocol %d; want 1 and 0", c, p)
	}
	text := metricsText(t, a)
	for _, want := range []string{`result="closed",test="tcp-lat"} 1` + "\n", `result="protocol",test="tcp-lat"} 0` + "\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the metrics lack %s:\n%s", want, text)
		}
	}
}
