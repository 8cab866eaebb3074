package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/internal/testutil"
)

// TestAgentUsage: mistakes are usage errors, named, before anything
// listens.
func TestAgentUsage(t *testing.T) {
	peers := filepath.Join(t.TempDir(), "peers")
	if err := os.WriteFile(peers, []byte("127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "--probe", "tcp-lat"}, "--peers FILE, dns:NAME[:PORT], srv:NAME or mesh:HOST[:PORT] is required"},
		{[]string{"agent", "--peers", "mesh:", "--probe", "tcp-lat"}, "--peers mesh: no host (want mesh:HOST or mesh:HOST:PORT"},
		{[]string{"agent", "--peers", "mesh:r:0", "--probe", "tcp-lat"}, "--peers mesh:r:0: "},
		{[]string{"agent", "--peers", "mesh:bad host", "--probe", "tcp-lat"}, "--peers mesh:bad host: "},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--registry=maybe"}, `invalid argument "maybe" for "--registry"`},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--registry-expiry", "1m"}, "--registry-expiry applies to --registry, which is off"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--registry", "--registry-expiry", "soon"}, "want a duration such as 500ms or 2s"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--registry", "--registry-expiry", "0s"}, "must be positive"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--registry", "--registry-expiry", "8s"}, "--registry-expiry 8s: want at least twice --reload (5s)"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--advertise", "10.0.0.1"}, "--advertise applies to --peers mesh:HOST"},
		{[]string{"agent", "--peers", "mesh:r", "--probe", "tcp-lat", "--advertise", "10.0.0.1:99999"}, `--advertise "10.0.0.1:99999": port "99999": want 1..65535`},
		{[]string{"agent", "--peers", "dns:", "--probe", "tcp-lat"}, "dns: no name"},
		{[]string{"agent", "--peers", "dns:agents:0", "--probe", "tcp-lat"}, "--peers dns:agents:0: "},
		{[]string{"agent", "--peers", "srv:", "--probe", "tcp-lat"}, "agent: --peers srv: no name (want srv:NAME"},
		{[]string{"agent", "--peers", "srv:_tests._tcp.agents:19515", "--probe", "tcp-lat"}, "agent: --peers srv:_tests._tcp.agents:19515: a port: the SRV records give each peer's"},
		{[]string{"agent", "--peers", "srv:a b", "--probe", "tcp-lat"}, "agent: --peers srv:a b: not a DNS name"},
		{[]string{"agent", "--peers", "srv:_tests._tcp.agents", "--probe", "tcp-lat", "-p", "19600"}, "agent: --port applies to peers given without a port; the SRV records of --peers srv:_tests._tcp.agents give each peer's"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-bw"}, "want a latency test"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--rate", "0"}, "--rate 0: want"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--blame-multiplier", "0"}, "--blame-multiplier 0: want a number above 0"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--blame-probes", "2"}, "--blame-probes 2: want 3 to 16"},
		{[]string{"agent", "--peers", peers, "--probe", "nope"}, "want a latency test"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "-x", "3"}, "--gid-index does not apply to tcp-lat"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "-s", "2,64"}, "one message size"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "-n", "0"}, "must be at least 1"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--rate-limit", "1Gbps"}, "--rate-limit does not apply to agent"},
		{[]string{"agent", "--peers", peers, "--probe", "tcp-lat", "-d", "a,b"}, "one device"},
		{[]string{"agent", "--peers", peers, "--probe", "ud-lat", "-e"}, "--events does not apply to --probe ud-lat"},
		{[]string{"agent", "--peers", peers, "--probe", "ud-lat", "--warmup", "5"}, "--warmup does not apply to --probe ud-lat"},
		{[]string{"agent", "--peers", peers, "--probe", "ud-lat", "--keep=false"}, "--keep does not apply to --probe ud-lat"},
		{[]string{"agent", "--peers", peers, "--probe", "ud-lat", "-c", "RC"}, "--probe ud-lat runs over UD, not -c RC"},
		{[]string{"agent", "--peers", peers, "--probe", "ud-lat", "-s", "8"}, "-s 8: a UD probe's message holds a 32-byte header"},
	} {
		_, stderr, code := cli(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, %s; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestAgentProbesServe: an agent probes a `rdmabench serve` over tcp-lat
// and its /metrics says so.
func TestAgentProbesServe(t *testing.T) {
	port, _ := startServer(t)
	maddr, log := startAgent(t, "# the server\n127.0.0.1:"+port+"\n", "--rate", "20")
	want := `rdmabench_agent_probes_total{device="",host="node-a",peer="127.0.0.1:` + port + `",result="ok",test="tcp-lat"}`
	body := scrapeUntilGood(t, maddr, want, log)
	if !strings.Contains(body, `rdmabench_agent_probe_latency_seconds_count{basis="rtt_half",device="",host="node-a"`) {
		t.Errorf("no latency histogram:\n%s", body)
	}
	if !strings.Contains(log.String(), "rdmabench agent: serving tests on 127.0.0.1:") {
		t.Errorf("log: %s", log.String())
	}
}

// startAgent runs an agent through the command line (tcp-lat probes of
// 5 iterations, host node-a) with the peers file text and args, until the
// test ends; it returns its metrics address and its log.
func startAgent(t *testing.T, peersText string, args ...string) (string, *testutil.SyncBuffer) {
	t.Helper()
	peers := filepath.Join(t.TempDir(), "peers")
	if err := os.WriteFile(peers, []byte(peersText), 0o644); err != nil {
		t.Fatal(err)
	}
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	maddr := ml.Addr().String()
	ml.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := &testutil.SyncBuffer{}
	go func() {
		done <- run(ctx, append([]string{"agent", "--peers", peers, "--probe", "tcp-lat", "--listen", "127.0.0.1:0",
			"--metrics-listen", maddr, "--host", "node-a", "-n", "5"}, args...), &bytes.Buffer{}, log)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the agent did not stop")
		}
	})
	return maddr, log
}

// TestAgentBandwidthProbe: with --bw-probe tcp-bw an agent measures its
// peer's bandwidth too (a short probe at 50% of the time, here), exports
// it and its results, and says so at the start; its options without
// --bw-probe are refused.
func TestAgentBandwidthProbe(t *testing.T) {
	port, _ := startServer(t)
	_, stderr, code := cli(t, "agent", "--peers", "peers.txt", "--probe", "tcp-lat", "--bw-share", "5%")
	if code != exitUsage || !strings.Contains(stderr, "agent: --bw-share applies to --bw-probe, which is off") {
		t.Errorf("--bw-share alone: exit %d, %q", code, stderr)
	}
	maddr, log := startAgent(t, "127.0.0.1:"+port+"\n", "--rate", "5",
		"--bw-probe", "tcp-bw", "--bw-duration", "200ms", "--bw-share", "50%", "--bw-size", "8K")
	peer := `peer="127.0.0.1:` + port + `"`
	body := scrapeUntilGood(t, maddr, `rdmabench_agent_bandwidth_probes_total{device="",host="node-a",`+peer+`,result="ok",test="tcp-bw"}`, log)
	for _, want := range []string{`rdmabench_agent_peer_bandwidth_bytes_per_second{device="",host="node-a",` + peer + `,test="tcp-bw"} `,
		`rdmabench_agent_blame_judged{device="",host="node-a",test="tcp-bw"} 0`,
		`rdmabench_agent_bandwidth_probe_period_seconds{device="",host="node-a"} 0.4`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in:\n%s", want, body)
		}
	}
	// One peer: blame cannot judge it, so no verdict.
	if strings.Contains(body, "rdmabench_agent_peer_bandwidth_low{") {
		t.Errorf("a verdict on the one peer:\n%s", body)
	}
	if !strings.Contains(log.String(), "bandwidth with tcp-bw (200ms of 8192 B messages, 50% of the time)") {
		t.Errorf("log: %s", log.String())
	}
}

// TestAgentRegistry: an agent started with --registry and another with
// --peers mesh: of it find each other through its registrations (each
// registered, the first with itself) and probe each other with the
// token; the first says it keeps a registry.
func TestAgentRegistry(t *testing.T) {
	raddr, baddr := freeAddr(t), freeAddr(t)
	mesh := "mesh:" + raddr
	t.Setenv(EnvToken, "s3cret")
	rm, rlog := startAgent(t, "", "--peers", mesh, "--listen", raddr, "--registry", "--registry-expiry", "2s", "--reload", "200ms", "--rate", "20")
	bm, blog := startAgent(t, "", "--peers", mesh, "--listen", baddr, "--host", "node-b", "--reload", "200ms", "--rate", "20")
	scrapeUntilGood(t, bm, `rdmabench_agent_probes_total{device="",host="node-b",peer="`+raddr+`",result="ok",test="tcp-lat"}`, blog)
	body := scrapeUntilGood(t, rm, `rdmabench_agent_probes_total{device="",host="node-a",peer="`+baddr+`",result="ok",test="tcp-lat"}`, rlog)
	if strings.Contains(body, `peer="`+raddr+`"`) {
		t.Errorf("the registry's agent probes itself:\n%s", body)
	}
	if !strings.Contains(body, `rdmabench_agent_registrations{device="",host="node-a"} 2`+"\n") {
		t.Errorf("no 2 registrations in the registry's metrics:\n%s", body)
	}
	if !strings.Contains(rlog.String(), "token required) and keeping a registry (at most 1024 agents, each forgotten 2s after its last renewal)") {
		t.Errorf("log: %s", rlog.String())
	}
}

// scrapeUntilGood scrapes http://maddr/metrics until the counter named
// want (its name and labels) is above 0, and returns the text; it fails
// t after 60 s.
func scrapeUntilGood(t *testing.T, maddr, want string, log *testutil.SyncBuffer) string {
	t.Helper()
	var body string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + maddr + "/metrics")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, want) && !strings.Contains(body, want+" 0\n") {
			return body
		}
	}
	t.Fatalf("no good probe in /metrics:\n%s\nlog:\n%s", body, log.String())
	return ""
}

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ml.Close()
	return ml.Addr().String()
}

// TestAgentOnDevice: an agent probes a `rdmabench serve` with write-lat on
// the RDMA device, and its /metrics has good probes and the error and
// retransmission counters of the device's port (rxe's hw_counters in the
// Soft-RoCE VM), with host, device and port labels. (pkg/watch's
// TestPortCounterMetrics runs promtool on them, from a fake sysfs: in the
// emulated VM promtool alone takes seconds.)
func TestAgentOnDevice(t *testing.T) {
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	port, _ := startServer(t, "-d", dev)
	peers := filepath.Join(t.TempDir(), "peers")
	if err := os.WriteFile(peers, []byte("127.0.0.1:"+port+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	maddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var log testutil.SyncBuffer
	go func() {
		done <- run(ctx, []string{"agent", "--peers", peers, "--probe", "write-lat", "-d", dev, "--listen", "127.0.0.1:0",
			"--metrics-listen", maddr, "--host", "node-a", "-n", "5", "--rate", "4", "--probe-timeout", "30s"}, &bytes.Buffer{}, &log)
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Error("the agent did not stop")
		}
	}()
	start := time.Now()
	body := scrapeUntilGood(t, maddr, `rdmabench_agent_probes_total{device="`+dev+`",host="node-a",peer="127.0.0.1:`+port+`",result="ok",test="write-lat"}`, &log)
	t.Logf("a good probe after %.1fs", time.Since(start).Seconds())
	l := `device="` + dev + `",host="node-a",port="1"`
	if !strings.Contains(body, "rdmabench_agent_port_counters_ok{"+l+"} 1\n") || !strings.Contains(body, "rdmabench_agent_port_errors_total{counter=") ||
		!strings.Contains(body, ","+l+"} ") {
		t.Errorf("no port counters of %s:\n%s\nlog:\n%s", dev, body, log.String())
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "rdmabench_agent_port_") {
			t.Log(line)
		}
	}
}
