package watch

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// TestKeptRDMA: an agent's write-lat (a ping-pong) and read-lat (the
// client's alone) probes of a peer run on one kept session (both ends' RC
// QPs set up once), every probe good and its samples in the peer's
// histogram; a peer whose server restarts gets its session set up again
// at the next probe; every verbs object is freed.
func TestKeptRDMA(t *testing.T) {
	dev := testutil.Device(t)
	for _, test := range []string{"write-lat", "read-lat"} {
		t.Run(test, func(t *testing.T) { testKeptRDMA(t, dev, test) })
	}
}

func testKeptRDMA(t *testing.T, dev, test string) {
	testutil.NoLeaks(t)
	addr, stop := serveOn(t, "127.0.0.1:0")
	file := filepath.Join(t.TempDir(), "peers")
	spec := workloads.Spec{Iterations: 5}
	spec.Device = dev
	a, err := New(Config{Host: "a", PeersFile: file, Keep: true, ProbeTimeout: 5 * time.Second,
		Probe: workloads.Request{Tests: []string{test}, Spec: spec}})
	if err != nil {
		t.Fatal(err)
	}
	if !a.keeps() {
		t.Fatalf("%s over RC is not probed on kept sessions", test)
	}
	log := &testutil.SyncBuffer{}
	a.cfg.Log = log
	write(t, file, addr+"\n")
	a.reload()
	defer func() {
		a.mu.Lock()
		for _, p := range a.byAddr {
			a.release(p)
		}
		a.mu.Unlock()
		a.kept.closer.Wait()
	}()
	const n = 4
	for range n {
		probeNext(t, a)
	}
	opened, failed, open, probes, samples := a.keptCounts()
	if opened != 1 || open != 1 || probes[resultIndex(ResultOK)] != n || failed != [10]uint64{} || samples != n*5 {
		t.Fatalf("sessions opened %d, open %d, failed %v, probes %v, samples %d; want 1, 1, none, %d good, %d\n%s",
			opened, open, failed, probes, samples, n, n*5, log.String())
	}
	stop()
	serveOn(t, addr)
	probeNext(t, a)
	probeNext(t, a)
	opened, _, open, probes, _ = a.keptCounts()
	if opened != 2 || open != 1 || probes[resultIndex(ResultOK)] != n+2 {
		t.Fatalf("after the server's restart: sessions opened %d, open %d, probes %v; want 2, 1, %d good\n%s", opened, open, probes, n+2, log.String())
	}
}
