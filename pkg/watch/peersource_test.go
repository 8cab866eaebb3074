package watch

import (
	"net"
	"testing"
)

// TestParsePeerSource: --peers is a file, dns:, srv: or mesh:, each
// mistake refused with what is wrong.
func TestParsePeerSource(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    PeerSource
		wantErr string
	}{
		{in: "/etc/rdmabench/peers", want: PeerSource{File: "/etc/rdmabench/peers"}},
		{in: "peers.txt", want: PeerSource{File: "peers.txt"}},
		{in: "dns:agents.monitoring.svc", want: PeerSource{DNS: "agents.monitoring.svc"}},
		{in: "dns:agents:19600", want: PeerSource{DNS: "agents:19600"}},
		{in: "srv:_tests._tcp.agents", want: PeerSource{SRV: "_tests._tcp.agents"}},
		{in: "srv:_tests._tcp.agents.", want: PeerSource{SRV: "_tests._tcp.agents."}},
		{in: "mesh:node1", want: PeerSource{Mesh: "node1"}},
		{in: "mesh:node1:19600", want: PeerSource{Mesh: "node1:19600"}},
		{in: "mesh:[fd00::1]:19600", want: PeerSource{Mesh: "[fd00::1]:19600"}},

		{in: "", wantErr: "--peers FILE, dns:NAME[:PORT], srv:NAME or mesh:HOST[:PORT] is required"},
		{in: "dns:", wantErr: "--peers dns: no name (want dns:NAME or dns:NAME:PORT)"},
		{in: "dns:agents:0", wantErr: `--peers dns:agents:0: "agents:0": port "0": want 1..65535`},
		{in: "dns:a b", wantErr: `--peers dns:a b: "a b": want one host[:port] a line`},
		{in: "srv:", wantErr: "--peers srv: no name (want srv:NAME, e.g. srv:_tests._tcp.rdmabench-agent)"},
		{in: "srv:_tests._tcp.agents:19515", wantErr: "--peers srv:_tests._tcp.agents:19515: a port: the SRV records give each peer's (want srv:NAME)"},
		{in: "srv:a b", wantErr: "--peers srv:a b: not a DNS name"},
		{in: "mesh:", wantErr: "--peers mesh: no host (want mesh:HOST or mesh:HOST:PORT, an agent started with --registry)"},
		{in: "mesh:r:0", wantErr: `--peers mesh:r:0: "r:0": port "0": want 1..65535`},
		{in: "mesh:bad host", wantErr: `--peers mesh:bad host: "bad host": want one host[:port] a line`},
		{in: "mesh:-r", wantErr: `--peers mesh:-r: "-r": "-r" is not a host name or address`},
	} {
		got, err := ParsePeerSource(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%q: %v (%+v), want the error %q", tc.in, err, got, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("%q: said %q", tc.in, got.String())
		}
		var cfg Config
		cfg.SetPeers(got)
		if cfg.peers() != got {
			t.Errorf("%q: Config's %+v", tc.in, cfg.peers())
		}
	}
}

// TestListenAdvertise: an agent made without listeners is given them, and
// the address it registers takes its listener's port when none is said.
func TestListenAdvertise(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tc := range []struct{ advertise, want string }{
		{"", ""},
		{"10.0.0.1", "10.0.0.1:" + port},
		{"10.0.0.1:7", "10.0.0.1:7"},
		{"fd00::1", "[fd00::1]:" + port},
	} {
		a, err := New(Config{Host: "h", PeersMesh: "r", Probe: probeRequest()})
		if err != nil {
			t.Fatal(err)
		}
		a.Listen(ln, nil, tc.advertise)
		if a.cfg.Serve != ln || a.cfg.Advertise != tc.want {
			t.Errorf("%q: serve %v, advertise %q; want %q", tc.advertise, a.cfg.Serve, a.cfg.Advertise, tc.want)
		}
	}
}
