package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// startServer runs `rdmabench serve` on a free loopback port until the test
// ends, and returns the port and the server's log.
func startServer(t *testing.T, args ...string) (string, *testutil.SyncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	log := &testutil.SyncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:" + port}, args...), &bytes.Buffer{}, log)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop")
		}
	})
	for i := 0; i < 200; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return port, log
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("serve did not listen: %s", log.String())
	return "", nil
}

func TestServeTCPTests(t *testing.T) {
	port, log := startServer(t)
	for _, test := range []string{"tcp-lat", "tcp-bw"} {
		out, stderr, code := cli(t, test, "127.0.0.1", "-p", port, "-s", "2,4K", "-n", "20", "-o", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", test, code, stderr)
		}
		doc, err := report.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Results) != 2 || doc.Hosts.Remote == nil || doc.Params.Server != "127.0.0.1" || doc.Params.Loopback {
			t.Fatalf("%s: document %+v", test, doc)
		}
	}
	// The server logs a test once it has torn it down, which may be just
	// after the client printed its results.
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(log.String(), " ok ") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := log.String(); strings.Count(got, " ok ") != 2 || !strings.Contains(got, "tcp-lat ok") {
		t.Fatalf("server log should have one line per test:\n%s", got)
	}
}

func TestServeToken(t *testing.T) {
	port, log := startServer(t, "--token", "s3cret")
	_, stderr, code := cli(t, "tcp-lat", "127.0.0.1", "-p", port, "-n", "5")
	if code != exitError || !strings.Contains(stderr, "server 127.0.0.1:"+port) || !strings.Contains(stderr, "authentication failed") {
		t.Fatalf("no token: exit %d, %q", code, stderr)
	}
	_, stderr, code = cli(t, "tcp-lat", "127.0.0.1", "-p", port, "-n", "5", "--token", "wrong")
	if code != exitError || !strings.Contains(stderr, "authentication failed") {
		t.Fatalf("wrong token: exit %d, %q", code, stderr)
	}
	t.Setenv(EnvToken, "s3cret")
	_, stderr, code = cli(t, "tcp-lat", "127.0.0.1", "-p", port, "-n", "5")
	if code != 0 {
		t.Fatalf("right token from the environment: exit %d, %q", code, stderr)
	}
	if strings.Contains(log.String(), "s3cret") {
		t.Fatal("the server logged the token")
	}
}

func TestServeMaxMem(t *testing.T) {
	port, _ := startServer(t, "--max-mem", "1M")
	_, stderr, code := cli(t, "write-bw", "127.0.0.1", "-p", port, "-s", "1M", "-n", "5")
	if code != exitUsage || !strings.Contains(stderr, "the limit is 1.0 MiB (1048576 B) (--max-mem)") || !strings.Contains(stderr, "server 127.0.0.1:"+port) {
		t.Fatalf("over --max-mem: exit %d, %q", code, stderr)
	}
}

// TestServeMaxMemAnySize: --max-mem takes any byte size, well above the
// largest message.
func TestServeMaxMemAnySize(t *testing.T) {
	port, log := startServer(t, "--max-mem", "64G")
	// The server logs its settings once it listens: maybe just after a
	// client could first connect.
	for i := 0; i < 500 && !strings.Contains(log.String(), "max-mem 68719476736 bytes"); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "max-mem 68719476736 bytes") {
		t.Fatalf("serve --max-mem 64G logged %q", log.String())
	}
	if _, stderr, code := cli(t, "tcp-lat", "127.0.0.1", "-p", port, "-n", "5"); code != 0 {
		t.Fatalf("a test under the cap: exit %d, %q", code, stderr)
	}
}

func TestServeNobodyListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	_, stderr, code := cli(t, "tcp-lat", "127.0.0.1", "-p", port, "-n", "5")
	if code != exitError || !strings.Contains(stderr, "127.0.0.1:"+port) {
		t.Fatalf("no server: exit %d, %q", code, stderr)
	}
}

// TestServeRDMA runs RDMA tests against a server in this process (both on
// the same device): the same path two hosts take, over loopback TCP.
func TestServeRDMA(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	port, log := startServer(t, "-d", dev)
	out, stderr, code := cli(t, "suite", "127.0.0.1", "-p", port, "-d", dev, "-n", "20", "-o", "json")
	if code != 0 {
		t.Fatalf("suite against the server: exit %d: %s", code, stderr)
	}
	doc, err := report.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != len(suiteOrder) || doc.Hosts.Remote == nil || doc.Hosts.Remote.Device == nil {
		t.Fatalf("document: %d results, remote %+v", len(doc.Results), doc.Hosts.Remote)
	}
	_, stderr, code = cli(t, "send-bw", "127.0.0.1", "-p", port, "-b", "-s", "4K", "-n", "20")
	if code != 0 {
		t.Fatalf("bidirectional against the server: exit %d: %s", code, stderr)
	}
	// --validate: the server checks what reached it and says so.
	out, stderr, code = cli(t, "write-bw", "127.0.0.1", "-p", port, "-q", "2", "-s", "4K", "-n", "20", "--validate", "-o", "json")
	if code != 0 {
		t.Fatalf("--validate against the server: exit %d: %s", code, stderr)
	}
	if doc, err = report.ReadJSON(strings.NewReader(out)); err != nil {
		t.Fatal(err)
	}
	if v := doc.Results[0].Validation; !doc.Params.CheckData || v == nil || !v.OK || v.Messages != 6 || v.Bytes != 6*4096 {
		t.Fatalf("validation %+v (params validate %v)", v, doc.Params.CheckData)
	}
	// A device the server does not have: the client prints the server's
	// error with its address.
	_, stderr, code = cli(t, "write-lat", "127.0.0.1", "-p", port, "-n", "5", "--server-dev", "mlx5_9")
	if code != exitError || !strings.Contains(stderr, "server 127.0.0.1:"+port) || !strings.Contains(stderr, "mlx5_9") {
		t.Fatalf("missing server device: exit %d, %q", code, stderr)
	}
	if !strings.Contains(log.String(), "write-lat failed") {
		t.Fatalf("server log:\n%s", log.String())
	}
}
