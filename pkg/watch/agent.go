package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/rdmabench/rdmabench/pkg/blame"
	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// Defaults of Config.
const (
	DefaultRate = 10 // probes/s in all, as R-Pingmesh's per RNIC
	// The bandwidth probe's defaults (Config.BW): 1 s of 64 KiB messages,
	// 1% of the agent's time.
	DefaultBWDuration   = time.Second
	DefaultBWSize       = 64 << 10
	DefaultBWShare      = 0.01
	DefaultIters        = 10
	DefaultProbeTimeout = 5 * time.Second
	DefaultReload       = 5 * time.Second
	DefaultBlameEvery   = 10 * time.Second
	DefaultMaxPeers     = 1024
	DefaultMaxInflight  = 4
	// KeepConnsUpTo: with at most this many peers, each peer's control
	// connection stays open between its probes; with more, each probe
	// dials its own (a peer's next probe is then len/Rate seconds away).
	KeepConnsUpTo = 64
	// busyRetries is how many times a probe refused "busy" (the peer's
	// server runs another agent's probe) is tried again, after a short
	// random wait.
	busyRetries = 4
)

// Config is an agent's configuration.
type Config struct {
	// Host is the host label of every sample (default: the host name).
	Host string
	// Serve is the control listener the agent serves tests on (nil: it
	// serves none), with Server and ServerOptions as `rdmabench serve`'s.
	Serve         net.Listener
	Server        workloads.Server
	ServerOptions control.ServerOptions
	// Metrics is the listener of the HTTP endpoint serving /metrics (nil:
	// none).
	Metrics net.Listener
	// Token is the shared token probes prove they know.
	Token string
	// PeersFile lists the peers (ParsePeers), re-read every Reload; a peer
	// without a port gets DefaultPort. Or PeersDNS, NAME[:PORT]
	// (ParsePeersDNS), is a name whose addresses are the peers (a
	// Kubernetes headless Service's), looked up with Resolver every
	// Reload. Or PeersSRV (ParsePeersSRV) is a name whose SRV records are
	// the peers: every address of each target, with the record's port,
	// looked up with Resolver every Reload. Or PeersMesh, HOST[:PORT]
	// (ParsePeersMesh), is a registry (an agent with Registry) this agent
	// registers with every Reload, whose registrations are the peers. One
	// of them. Self are the addresses (host:port) of this agent, left out
	// of the set.
	PeersFile   string
	PeersDNS    string
	PeersSRV    string
	PeersMesh   string
	Resolver    Resolver
	DefaultPort int
	Reload      time.Duration
	Self        []string
	// Advertise is the address (HOST:PORT) registered with PeersMesh's
	// registry; by default Serve's (an unspecified host is the address
	// the registry sees this agent from).
	Advertise string
	// Registry makes Serve keep a registry of the agents that register
	// there (--peers mesh:), at most MaxPeers, each RegistryExpiry
	// (control.DefaultRegistryExpiry when 0; at least twice Reload) after
	// its last renewal.
	Registry       bool
	RegistryExpiry time.Duration
	// Probe is the probe: one latency test at one size (its Spec.Iterations
	// the probe's iterations).
	Probe workloads.Request
	// BW, when its Test is set, is the bandwidth probe.
	BW BWProbe
	// UD makes the probe the UD probe (--probe ud-lat): Probe is a send-lat
	// over UD, and Run opens this host's UD probe on its device (one QP
	// answering every peer, MaxInflight probing them: see udprobe.go).
	UD bool
	// Keep runs a latency probe on kept sessions (tcp-lat, and the RDMA
	// tests over RC without events): per peer, the control connection
	// and the test's connection (a socket, or an RC QP) set up once and
	// reused, a probe a burst of the test's iterations on them (see
	// kept.go). Other probes run a whole test each.
	Keep bool
	// Rate is the probes per second, over all peers, each at a random
	// time within its period (slots.go).
	Rate         float64
	ProbeTimeout time.Duration
	MaxPeers     int
	MaxInflight  int
	BlameEvery   time.Duration
	// BlameProbes is how many of a peer's last good probes its judged p50
	// is the median of: 3 to 16 (16 when 0). Fewer react sooner, more are
	// steadier.
	BlameProbes int
	Blame       blame.Options
	// Log gets one line per event worth a person's attention: the peers
	// set changing, a peers file or lookup error (a lookup failing the
	// same way again is counted, not told again), a peer's first failure,
	// a change of the kind of its failures, and its recovery, a blame
	// verdict changing.
	Log io.Writer
}

// BWProbe is the low-duty bandwidth probe: one bandwidth test at one size
// for Duration, on the latency probe's device and path, against one peer
// at a time, round-robin, one every Duration/Share: the probes take Share
// of this agent's time, so that its device sends at about Share of the
// link on average. While a peer runs one its server is busy, so others'
// latency probes of it wait or count busy.
type BWProbe struct {
	Test     string
	Size     int
	Duration time.Duration
	Share    float64
}

// interval is how often a bandwidth probe starts.
func (b BWProbe) interval() time.Duration { return time.Duration(float64(b.Duration) / b.Share) }

// Agent probes its peers and serves its metrics.
type Agent struct {
	cfg  Config
	run  *workloads.Plan
	info workloads.TestInfo
	// bw is the bandwidth probe's plan, nil without one.
	bw     *workloads.Plan
	bwInfo workloads.TestInfo

	mu       sync.Mutex
	st       state
	byAddr   map[string]*peer
	cursor   int // the next peer of the latency probes
	bwCursor int // of the bandwidth probes
	inflight int
	// bwDue: a bandwidth probe found every peer busy, and starts at the
	// first latency probe's slot that finds one free.
	bwDue    bool
	lastFile []byte // the last peers file read, or addresses looked up (nil before, or after a read or lookup error)
	failKind string // the kind of the read or lookup error told last, until one succeeds
	dnsName  string // of PeersDNS
	dnsPort  int
	meshAddr string // of PeersMesh, host:port
	// expiryTold: the log said that the registry's expiry is short for
	// Reload.
	expiryTold bool
	registry   *control.Registry // with Config.Registry
	// readPort reads the port counters of the probe's device
	// (workloads.PortCounters; a fake sysfs's in tests).
	readPort    func(dev string, port int) (map[string]uint64, error)
	portFailing bool // the last read of the port counters failed (for the log)
	// slowFewTold, bwFewTold: the log said that too few peers had a p50,
	// a bandwidth, for blame (MinBlamePeers), until enough have.
	slowFewTold, bwFewTold bool
	// process gathers rdmabench_build_info, process_* and go_*
	// (processRegistry), served with the agent's own families.
	process *prometheus.Registry
	kept    keptState
	// ud is this host's UD probe, from Run's start to its end (Config.UD);
	// udStopTold: the log said its responder stopped.
	ud         *workloads.UDProbe
	udStopTold bool
	logMu      sync.Mutex
}

// peer is one peer's live state: its stats (in st.peers) and its kept
// connection.
type peer struct {
	stats    *peerStats
	busy     bool           // a probe is in flight
	client   *remote.Client // kept between probes; owned by the probe in flight
	failKind string         // the kind of its last probe's failure, "" when it went well (for the log)
	// bwFailKind is failKind's for the bandwidth probes.
	bwFailKind string
	gone       bool // removed from the set while a probe was in flight
	// kept is its kept probe session (on client), samples the buffer of
	// its bursts; owned by the probe in flight.
	kept    *workloads.Kept
	samples []uint64
	// keptOut: its kept session is out with the probe in flight (counted
	// open all the same: countOpen).
	keptOut bool
	// noKept: its server keeps no probe sessions (an older rdmabench, or
	// one that runs one test at a time: `rdmabench serve`); its probes
	// are whole tests.
	noKept bool
	// ud is its UD probe responder, learnt from its server, and an address
	// handle toward it (Config.UD), net the buffer of its probes' network
	// times (a stamped UD probe's); owned by the probe in flight.
	ud  *workloads.UDPeer
	net []uint64
}

// New checks cfg and plans the probe: a mistake is an error here, before
// anything runs.
func New(cfg Config) (*Agent, error) {
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.Reload <= 0 {
		cfg.Reload = DefaultReload
	}
	if cfg.BlameEvery <= 0 {
		cfg.BlameEvery = DefaultBlameEvery
	}
	if cfg.BlameProbes == 0 {
		cfg.BlameProbes = recentProbes
	}
	if cfg.BlameProbes < 3 || cfg.BlameProbes > recentProbes {
		return nil, fmt.Errorf("--blame-probes %d: want 3 to %d", cfg.BlameProbes, recentProbes)
	}
	if cfg.MaxPeers <= 0 {
		cfg.MaxPeers = DefaultMaxPeers
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.DefaultPort == 0 {
		cfg.DefaultPort = control.DefaultPort
	}
	if cfg.ServerOptions.Keepalive == 0 {
		cfg.ServerOptions.Keepalive = Keepalive
	}
	var dnsName string
	var dnsPort int
	meshAddr, err := checkMesh(&cfg)
	if err != nil {
		return nil, err
	}
	switch n := nonEmpty(cfg.PeersFile, cfg.PeersDNS, cfg.PeersSRV, cfg.PeersMesh); {
	case n == 0:
		return nil, errors.New("no peers file or name (--peers FILE, dns:NAME[:PORT], srv:NAME or mesh:HOST[:PORT])")
	case n > 1:
		return nil, errors.New("peers from one source (a file, a DNS name, an SRV name or a registry), not several")
	case cfg.PeersSRV != "":
		if _, err := ParsePeersSRV(cfg.PeersSRV); err != nil {
			return nil, fmt.Errorf("--peers %w", err)
		}
		if cfg.Resolver == nil {
			cfg.Resolver = net.DefaultResolver
		}
	case cfg.PeersDNS != "":
		var err error
		if dnsName, dnsPort, err = ParsePeersDNS(cfg.PeersDNS, cfg.DefaultPort); err != nil {
			return nil, fmt.Errorf("--peers %w", err)
		}
		if cfg.Resolver == nil {
			cfg.Resolver = net.DefaultResolver
		}
	}
	if len(cfg.Probe.Tests) != 1 {
		return nil, errors.New("the probe is one test")
	}
	info, ok := workloads.LookupTest(cfg.Probe.Tests[0])
	if cfg.UD && (info.Name != "send-lat" || cfg.Probe.Spec.Connection != "UD") {
		return nil, errors.New("the UD probe is a send-lat over UD")
	}
	if !ok || info.Metric != workloads.Latency {
		return nil, fmt.Errorf("--probe %q: want a latency test (write-lat, send-lat, read-lat, atomic-lat or tcp-lat) or ud-lat", cfg.Probe.Tests[0])
	}
	if strings.Contains(cfg.Probe.Spec.Device, ",") || cfg.Probe.Spec.Device == "all" {
		return nil, errors.New("-d: an agent probes from one device (run one agent per NIC)")
	}
	if len(cfg.Probe.Spec.Sizes) > 1 {
		return nil, errors.New("-s: a probe is one message size")
	}
	if cfg.Probe.Spec.Iterations == 0 {
		cfg.Probe.Spec.Iterations = DefaultIters
	}
	if cfg.Probe.Spec.Duration > 0 || cfg.Probe.Spec.Precision > 0 || cfg.Probe.Repeat > 1 {
		return nil, errors.New("a probe runs a fixed number of iterations (-n)")
	}
	run, err := workloads.NewPlan(cfg.Probe)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	a := &Agent{cfg: cfg, run: run, info: info, byAddr: map[string]*peer{}, dnsName: dnsName, dnsPort: dnsPort,
		meshAddr: meshAddr, readPort: workloads.PortCounters}
	if cfg.Registry {
		a.registry = control.NewRegistry(cfg.MaxPeers, cfg.RegistryExpiry)
	}
	if cfg.BW.Test != "" {
		if err := a.planBW(); err != nil {
			return nil, err
		}
	}
	a.st.labels = labels{host: cfg.Host, device: cfg.Probe.Spec.Device, test: a.probeName(), basis: info.Basis}
	a.process = processRegistry(cfg.Host, cfg.Probe.Spec.Device)
	a.st.port = max(cfg.Probe.Spec.Port, 1)
	a.st.rate = cfg.Rate
	a.st.registry = a.registry != nil
	if a.keeps() {
		a.initKept()
		a.st.keptOn = true
	}
	return a, nil
}

// planBW checks the bandwidth probe and plans it: the latency probe's
// request, its device, path and token, with the bandwidth test, size and
// duration.
func (a *Agent) planBW() error {
	b := &a.cfg.BW
	info, ok := workloads.LookupTest(b.Test)
	if !ok || info.Metric != workloads.Bandwidth {
		return fmt.Errorf("--bw-probe %q: want a bandwidth test (write-bw, send-bw, read-bw, atomic-bw or tcp-bw)", b.Test)
	}
	if info.IsRDMA() != a.info.IsRDMA() {
		return fmt.Errorf("--bw-probe %s and --probe %s: both RDMA tests or both TCP ones (one device, one path)", b.Test, a.info.Name)
	}
	if b.Duration == 0 {
		b.Duration = DefaultBWDuration
	}
	if b.Size == 0 {
		b.Size = DefaultBWSize
	}
	if b.Share == 0 {
		b.Share = DefaultBWShare
	}
	if !(b.Share > 0 && b.Share <= 0.5) {
		return fmt.Errorf("--bw-share %g%%: want a share above 0%%, at most 50%%", 100*b.Share)
	}
	if b.Duration < 100*time.Millisecond {
		return fmt.Errorf("--bw-duration %v: want at least 100ms (a bandwidth figure needs time to be one)", b.Duration)
	}
	req := a.cfg.Probe
	req.Tests = []string{b.Test}
	req.Spec.Sizes = []int{b.Size}
	if a.cfg.UD {
		req.Spec.Connection = "" // the UD probe's is UD; a bandwidth test's RC, its default
	}
	req.Spec.Iterations, req.Spec.Duration, req.Spec.Interval, req.Spec.Warmup = 0, b.Duration, b.Duration, nil
	run, err := workloads.NewPlan(req)
	if err != nil {
		return fmt.Errorf("bandwidth probe: %w", err)
	}
	a.bw, a.bwInfo = run, info
	a.st.bwTest = info.Name
	a.st.bwPeriod = b.interval()
	return nil
}

// probeName is the probe's name: its test's, or the UD probe's.
func (a *Agent) probeName() string {
	if a.cfg.UD {
		return workloads.UDProbeTest
	}
	return a.info.Name
}

// BW is the bandwidth probe, its defaults filled in.
func (a *Agent) BW() BWProbe { return a.cfg.BW }

// Listen gives an agent that New made without listeners those it serves
// on, before Run: serve for tests (and its registry), metrics for /metrics
// (nil: none). advertise, when not "", is the HOST[:PORT] this agent
// registers with PeersMesh's registry (Config.Advertise), serve's port
// when it has none. So a mistake New refuses costs no listener.
func (a *Agent) Listen(serve, metrics net.Listener, advertise string) {
	if advertise != "" && serve != nil {
		if _, _, err := net.SplitHostPort(advertise); err != nil {
			_, port, _ := net.SplitHostPort(serve.Addr().String())
			advertise = net.JoinHostPort(advertise, port)
		}
	}
	if advertise != "" {
		a.cfg.Advertise = advertise
	}
	a.cfg.Serve, a.cfg.Metrics = serve, metrics
}

// logf writes one line of the agent's log.
func (a *Agent) logf(format string, args ...any) {
	if a.cfg.Log == nil {
		return
	}
	line := time.Now().Format(time.RFC3339) + " " + fmt.Sprintf(format, args...) + "\n"
	a.logMu.Lock()
	defer a.logMu.Unlock()
	_, _ = io.WriteString(a.cfg.Log, line)
}

// Run serves tests, probes the peers and serves the metrics until ctx
// ends; it returns nil then, or the error of a listener that failed for
// good.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.cfg.Serve == nil && (a.registry != nil || (a.cfg.PeersMesh != "" && a.cfg.Advertise == "")) {
		return errors.New("a registry, and an agent registering with one, serve tests: no listener")
	}
	if a.cfg.UD {
		if err := a.openUD(); err != nil {
			return err
		}
		defer a.closeUD()
	}
	var wg sync.WaitGroup
	errc := make(chan error, 2)
	if ln := a.cfg.Serve; ln != nil {
		srv := a.cfg.Server
		srv.UDProbe = a.ud
		opt := a.cfg.ServerOptions
		opt.Registry = a.registry
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := remote.Serve(ctx, ln, &srv, opt); err != nil {
				errc <- fmt.Errorf("serve: %w", err)
				cancel()
			}
		}()
	}
	if ln := a.cfg.Metrics; ln != nil {
		hs := a.httpServer()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics: %w", err)
				cancel()
			}
		}()
		context.AfterFunc(ctx, func() { _ = hs.Close() })
	}
	a.reloadCtx(ctx)
	// Reloads go on beside the probes: a lookup may take seconds.
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(a.cfg.Reload)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a.reloadCtx(ctx)
			}
		}
	}()
	blameTick := time.NewTicker(a.cfg.BlameEvery)
	defer blameTick.Stop()
	period := time.Duration(float64(time.Second) / a.cfg.Rate)
	var bwTick <-chan time.Time // nil: none
	if a.bw != nil {
		t := time.NewTicker(a.cfg.BW.interval())
		defer t.Stop()
		bwTick = t.C
	}
	var probes sync.WaitGroup
	startBW := func(p *peer) {
		if p == nil {
			return
		}
		probes.Add(1)
		go func() {
			defer probes.Done()
			a.probe(ctx, p, true, nil)
		}()
	}
	// The probers (slots.go): MaxInflight of them share the slots, the
	// one holding the lead waiting for the next and running its latency
	// probe itself, handing the lead on when the probe turns slow.
	slots := newSlotClock(ctx, period)
	defer slots.stop()
	lead := make(chan struct{}, 1)
	lead <- struct{}{}
	for range a.cfg.MaxInflight {
		probes.Add(1)
		go func() {
			defer probes.Done()
			if err := a.runProber(ctx, newProber(lead), slots, startBW); err != nil {
				select {
				case errc <- err:
				default:
				}
				cancel()
			}
		}()
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-blameTick.C:
			a.judge()
		case <-bwTick:
			startBW(a.takeBWSlot())
		}
	}
	probes.Wait()
	a.mu.Lock()
	for _, p := range a.byAddr {
		a.closeKept(p.kept, p.client)
		p.kept, p.client = nil, nil
	}
	a.mu.Unlock()
	a.kept.closer.Wait()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// reload reads the peers file, or looks the peers' name up, and applies
// the set when it changed.
func (a *Agent) reload() { a.reloadCtx(context.Background()) }

func (a *Agent) reloadCtx(ctx context.Context) {
	if a.cfg.PeersDNS != "" || a.cfg.PeersSRV != "" {
		a.reloadDNS(ctx)
		return
	}
	if a.cfg.PeersMesh != "" {
		a.reloadMesh(ctx)
		return
	}
	data, err := os.ReadFile(a.cfg.PeersFile)
	if err != nil {
		a.peersError(&PeersError{Kind: PeersRead, File: a.cfg.PeersFile, Err: err})
		return
	}
	a.mu.Lock()
	same := a.lastFile != nil && bytes.Equal(data, a.lastFile)
	a.mu.Unlock()
	if same {
		return
	}
	addrs, err := ParsePeers(data, a.cfg.DefaultPort)
	if err != nil {
		var pe *PeersError
		if errors.As(err, &pe) {
			pe.File = a.cfg.PeersFile
		}
		a.peersError(err)
		a.mu.Lock()
		a.lastFile = data // told once until it changes
		a.mu.Unlock()
		return
	}
	a.apply(addrs, data)
}

// reloadDNS looks the peers' name (or SRV name) up and, when its
// addresses changed, applies them.
func (a *Agent) reloadDNS(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, dnsTimeout)
	var addrs []string
	var err error
	if a.cfg.PeersSRV != "" {
		addrs, err = resolveSRVPeers(ctx, a.cfg.Resolver, a.cfg.PeersSRV)
	} else {
		addrs, err = resolvePeers(ctx, a.cfg.Resolver, a.dnsName, a.dnsPort)
	}
	cancel()
	if err != nil {
		var pe *PeersError
		if errors.As(err, &pe) {
			pe.DNS, pe.SRV = a.cfg.PeersDNS, a.cfg.PeersSRV
		}
		a.peersError(err)
		return
	}
	key := []byte(strings.Join(addrs, "\n"))
	a.mu.Lock()
	same := a.lastFile != nil && bytes.Equal(key, a.lastFile)
	a.mu.Unlock()
	if !same {
		a.apply(addrs, key)
	}
}

// apply makes addrs, read from data, the set: without this agent, and at
// most MaxPeers.
func (a *Agent) apply(addrs []string, data []byte) {
	addrs = a.withoutSelf(addrs)
	var tooMany error
	if len(addrs) > a.cfg.MaxPeers {
		pe := errTooMany(a.cfg.PeersFile, a.cfg.PeersDNS, len(addrs), a.cfg.MaxPeers)
		pe.SRV, pe.Mesh = a.cfg.PeersSRV, a.cfg.PeersMesh
		tooMany = pe
		addrs = addrs[:a.cfg.MaxPeers]
	}
	a.mu.Lock()
	was := a.failKind
	a.failKind = ""
	a.mu.Unlock()
	if was != "" {
		a.logf("peers: %s usable again", a.source())
	}
	a.setPeers(addrs, data)
	if tooMany != nil {
		a.peersError(tooMany)
	}
}

// peersError counts and logs an error of the peers' source. A read or
// lookup error of the kind told last is counted, not told again.
func (a *Agent) peersError(err error) {
	kind := peersKind(err)
	a.mu.Lock()
	for i, k := range peersKinds {
		if k == kind {
			a.st.peersErrors[i]++
		}
	}
	a.st.peersOK = false
	again := false
	if isLookupKind(kind) || isRegistryKind(kind) {
		a.lastFile = nil
		again = a.failKind == kind
		a.failKind = kind
	}
	n := len(a.st.peers)
	a.mu.Unlock()
	switch {
	case again:
	case kind == PeersTooMany:
		a.logf("peers: %v", err)
	default:
		a.logf("peers: %v (kind %s); still probing the last good set, %d peers", err, kind, n)
	}
}

// withoutSelf leaves out the addresses of this agent: those of Self, and
// those naming this host (its host name or an address of one of its
// interfaces) with the port it serves on.
func (a *Agent) withoutSelf(addrs []string) []string {
	self := map[string]bool{}
	for _, s := range a.cfg.Self {
		self[s] = true
	}
	if ln := a.cfg.Serve; ln != nil {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		names := []string{a.cfg.Host}
		if h, err := os.Hostname(); err == nil {
			names = append(names, h)
		}
		if ifaddrs, err := net.InterfaceAddrs(); err == nil {
			for _, ia := range ifaddrs {
				if ipn, ok := ia.(*net.IPNet); ok {
					names = append(names, ipn.IP.String())
				}
			}
		}
		for _, n := range names {
			self[net.JoinHostPort(n, port)] = true
		}
	}
	out := addrs[:0:0]
	for _, s := range addrs {
		if !self[s] {
			out = append(out, s)
		}
	}
	return out
}

// setPeers makes addrs the set: new peers start empty, peers no longer in
// it are forgotten (their series vanish), the others keep their state.
func (a *Agent) setPeers(addrs []string, data []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastFile = data
	a.st.peersOK = true
	keep := map[string]bool{}
	var added, removed []string
	list := make([]*peerStats, 0, len(addrs))
	for _, s := range addrs {
		keep[s] = true
		p, ok := a.byAddr[s]
		if !ok {
			p = &peer{stats: &peerStats{addr: s, window: a.cfg.BlameProbes}}
			a.byAddr[s] = p
			added = append(added, s)
		}
		list = append(list, p.stats)
	}
	for s, p := range a.byAddr {
		if keep[s] {
			continue
		}
		removed = append(removed, s)
		delete(a.byAddr, s)
		p.gone = true
		if !p.busy {
			a.release(p)
		}
	}
	a.st.peers = list
	if len(added)+len(removed) > 0 {
		a.logf("peers: %d (added %s; removed %s); every peer probed every %.3gs", len(list),
			orNone(added), orNone(removed), float64(len(list))/a.cfg.Rate)
	}
}

// release frees what a peer removed from the set holds (a.mu held, no
// probe of it in flight): its kept session and control connection, its
// UD probe's address handle.
func (a *Agent) release(p *peer) {
	a.closeKept(p.kept, p.client)
	p.kept, p.client = nil, nil
	_ = p.ud.Close()
	p.ud = nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	if len(s) > 8 {
		return strings.Join(s[:8], ", ") + fmt.Sprintf(" and %d more", len(s)-8)
	}
	return strings.Join(s, ", ")
}

// takeSlot takes a latency probe's slot, after dropped slots that came
// while every prober was busy (counted as skipped). It returns the peer
// this slot probes (nil: skipped, by nextPeer) and, when a bandwidth probe
// was due (its own slot found every peer busy), the peer it probes now
// (nil: none).
func (a *Agent) takeSlot(dropped int) (p, bw *peer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.st.skipped += uint64(max(dropped, 0))
	if a.bwDue {
		if bw = a.nextPeerLocked(&a.bwCursor, nil); bw != nil {
			a.bwDue = false
		}
	}
	return a.nextPeerLocked(&a.cursor, &a.st.skipped), bw
}

// takeBWSlot takes a bandwidth probe's slot: the peer it probes, or nil
// when every peer is busy (the probe is then due, and starts at the first
// latency probe's slot that finds one free: takeSlot).
func (a *Agent) takeBWSlot() *peer {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.nextPeerLocked(&a.bwCursor, nil)
	a.bwDue = p == nil
	return p
}

// nextPeer takes the next peer after cursor, round-robin, that is not
// being probed, or nil when every one is or the probes in flight are at
// their cap (counted in skipped, when not nil, as a slot skipped).
func (a *Agent) nextPeer(cursor *int, skipped *uint64) *peer {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nextPeerLocked(cursor, skipped)
}

// nextPeerLocked is nextPeer with a.mu held.
func (a *Agent) nextPeerLocked(cursor *int, skipped *uint64) *peer {
	n := len(a.st.peers)
	if n == 0 {
		return nil
	}
	skip := func() *peer {
		if skipped != nil {
			*skipped++
		}
		return nil
	}
	if a.inflight >= a.cfg.MaxInflight {
		return skip()
	}
	for i := 0; i < n; i++ {
		s := a.st.peers[(*cursor+i)%n]
		p := a.byAddr[s.addr]
		if p.busy {
			continue
		}
		*cursor = (*cursor + i + 1) % n
		p.busy = true
		a.inflight++
		return p
	}
	return skip()
}

// probe runs one probe of p, its bandwidth probe when bw, and records it.
// A latency probe calls slow (when not nil) before it waits longer than a
// kept session's quick ping-pongs: its prober hands the lead on there.
func (a *Agent) probe(ctx context.Context, p *peer, bw bool, slow func()) {
	if !bw && a.keeps() && !p.noKept {
		a.probeKept(ctx, p, slow)
		return
	}
	if slow != nil {
		slow()
	}
	if !bw && a.ud != nil {
		a.probeUD(ctx, p)
		return
	}
	a.mu.Lock()
	c, addr, keep := p.client, p.stats.addr, len(a.st.peers) <= KeepConnsUpTo
	if a.keeps() {
		// p.client carries the kept session: a bandwidth probe dials its
		// own connection.
		c, keep = nil, false
	} else {
		p.client = nil
	}
	a.mu.Unlock()
	run, timeout := a.run, a.cfg.ProbeTimeout
	if bw {
		run, timeout = a.bw, timeout+a.cfg.BW.Duration
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	doc, c, err := a.probeOnce(pctx, run, addr, c)
	cancel()
	if ctx.Err() != nil { // shutting down: not the peer's fault
		if c != nil {
			_ = c.Close()
		}
		a.mu.Lock()
		a.probeDone(p)
		a.mu.Unlock()
		return
	}
	result := ResultOK
	var lat *report.Latency
	var rate *report.Bandwidth
	switch {
	case err != nil:
	case len(doc.Results) == 0:
		err = errors.New("the probe measured nothing")
	case bw:
		if rate = doc.Results[0].Bandwidth; rate == nil || !(rate.Gbps > 0) {
			err = errors.New("the bandwidth probe measured nothing")
		}
	default:
		if lat = doc.Results[0].Latency; lat == nil {
			err = errors.New("the probe measured nothing")
		}
	}
	if err != nil {
		result = classify(err)
	}
	a.mu.Lock()
	a.probeDone(p)
	switch {
	case lat != nil:
		if herr := p.stats.addSamples(lat); herr != nil {
			err, result = fmt.Errorf("the probe's histogram: %w", herr), ResultTest
		} else {
			p.stats.lastOK = time.Now()
		}
	case err == nil && bw:
		p.stats.bwBytes, p.stats.bwAt = rate.Gbps*1e9/8, time.Now()
	}
	wasKind := &p.failKind
	what := "probe"
	if bw {
		p.stats.bwProbes[resultIndex(result)]++
		wasKind, what = &p.bwFailKind, "bandwidth probe"
	} else {
		p.stats.probes[resultIndex(result)]++
	}
	was := *wasKind
	*wasKind = ""
	if result != ResultOK {
		*wasKind = result
	}
	if c != nil && (p.gone || !keep || p.client != nil) {
		_ = c.Close()
		c = nil
	}
	if !p.gone && !a.keeps() {
		p.client = c
	}
	if p.gone {
		a.release(p) // what the latency probes keep, a kept session or a UD peer
	}
	a.mu.Unlock()
	a.logResult(what, addr, err, result, was)
}

// probeDone ends p's probe in flight (a.mu held).
func (a *Agent) probeDone(p *peer) {
	p.busy = false
	a.inflight--
}

// recordBurst records a latency probe of p made of a burst of samples
// (ns; kept sessions', the UD probe's), good when err is nil (a.mu held):
// the samples in p's histogram, the probe counted by its result. It
// returns the result and the kind of p's failure before it (logResult's).
func (a *Agent) recordBurst(p *peer, samples []uint64, err error) (result, was string) {
	result = ResultOK
	if err != nil {
		result = classify(err)
	}
	p.samples = samples
	if err == nil {
		p.stats.addNs(samples)
		p.stats.lastOK = time.Now()
	}
	p.stats.probes[resultIndex(result)]++
	was = p.failKind
	p.failKind = ""
	if result != ResultOK {
		p.failKind = result
	}
	return result, was
}

// logResult logs what (a probe, a bandwidth probe) of addr when its result
// changed from was: its first failure of a kind, its recovery.
func (a *Agent) logResult(what, addr string, err error, result, was string) {
	switch {
	case err != nil && result != was:
		a.logf("%s %s: %s: %v", what, addr, result, err)
	case err == nil && was != "":
		a.logf("%s %s: ok again", what, addr)
	}
}

// Keepalive is the interval between the pings of an agent's control
// connections, both those it serves and those it dials (control's
// default is a second). An agent keeps one to each peer, and their
// pings grow with the peers where its probes do not: among 16 agents
// at 10 probes/s each, 1 s pings took a third of their CPU
// (docs/agent.md). The pings stay within half the other end's timeout
// (each control hello says it).
const Keepalive = 4 * time.Second

// dial connects to the server of addr, a peer's agent.
func (a *Agent) dial(ctx context.Context, addr string) (*remote.Client, error) {
	return remote.DialOptions(ctx, addr, control.ClientOptions{Token: a.cfg.Token, Keepalive: Keepalive})
}

// probeOnce runs the probe against addr over c (dialled when nil), trying
// again a few times while the server is busy. It returns the connection
// when it is still usable, else nil.
func (a *Agent) probeOnce(ctx context.Context, run *workloads.Plan, addr string, c *remote.Client) (*report.Document, *remote.Client, error) {
	for try := 0; ; try++ {
		if c == nil {
			var err error
			if c, err = a.dial(ctx, addr); err != nil {
				return nil, nil, err
			}
		}
		doc, err := run.Execute(ctx, c.Target())
		if err == nil {
			return doc, c, nil
		}
		var se *control.ServerError
		usable := errors.As(err, &se) && (se.Code == control.CodeBusy || se.Code == control.CodeSpec || se.Code == control.CodeLimit)
		if !usable {
			_ = c.Close()
			c = nil
		}
		if !errors.Is(err, control.ErrBusy) || try >= busyRetries {
			return doc, c, err
		}
		t := time.NewTimer(time.Duration(2+rand.IntN(10*(try+1))) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return doc, c, err
		case <-t.C:
		}
	}
}

// classify names the kind of a probe's error.
func classify(err error) string {
	var se *control.ServerError
	var ve *control.VersionError
	var ne net.Error
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, control.ErrBusy):
		return ResultBusy
	case errors.Is(err, control.ErrAuth):
		return ResultAuth
	case errors.As(err, &ve), errors.Is(err, control.ErrVersion):
		return ResultVersion
	case errors.As(err, &se) && (se.Code == control.CodeSpec || se.Code == control.CodeLimit):
		return ResultRefused
	case errors.Is(err, ErrNoUDProbe), errors.Is(err, workloads.ErrNoUDProbe):
		return ResultRefused
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, control.ErrPeerSilent), errors.Is(err, verbs.ErrTimeout):
		return ResultTimeout
	case errors.As(err, &dns):
		return ResultConnect
	case errors.As(err, &op) && op.Op == "dial":
		return ResultConnect
	case errors.As(err, &ne) && ne.Timeout():
		return ResultTimeout
	case isReset(err):
		return ResultProtocol
	case errors.Is(err, control.ErrPeerShutdown):
		return ResultClosed
	case errors.Is(err, control.ErrBadFrame), errors.Is(err, control.ErrFrameTooLarge), errors.Is(err, control.ErrProtocol),
		errors.Is(err, control.ErrPeerClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return ResultProtocol
	}
	return ResultTest
}

// judge runs blame over the peers' recent p50s and, with a bandwidth
// probe, over their last bandwidths.
func (a *Agent) judge() {
	a.mu.Lock()
	for _, s := range a.st.peers {
		s.p50 = s.recentP50()
	}
	a.mu.Unlock()
	lines := a.judgeFigure(verdictOf{figure: a.probeName() + " p50", higherIsWorse: true,
		value: func(s *peerStats) float64 { return s.p50 }, flag: func(s *peerStats) *bool { return &s.slow },
		judged: &a.st.slowJudged, fewTold: &a.slowFewTold,
		bad: func(s *peerStats, b blame.Verdicts) string {
			return fmt.Sprintf("blame: peer %s slow: p50 %.3gus, %.3gx this agent's median over its peers (limit %.3gx)",
				s.addr, s.p50/1e3, s.p50/b.FleetMedian, b.Limit)
		}, good: "no longer slow"})
	if a.bw != nil {
		lines = append(lines, a.judgeFigure(verdictOf{figure: a.bwInfo.Name + " bandwidth",
			value: func(s *peerStats) float64 { return s.bwBytes }, flag: func(s *peerStats) *bool { return &s.bwLow },
			judged: &a.st.bwJudged, fewTold: &a.bwFewTold,
			bad: func(s *peerStats, b blame.Verdicts) string {
				return fmt.Sprintf("blame: peer %s bandwidth low: %.4g Gbit/s, %.3gx this agent's median over its peers (limit %.3gx)",
					s.addr, s.bwBytes*8/1e9, s.bwBytes/b.FleetMedian, b.Limit)
			}, good: "bandwidth no longer low"})...)
	}
	for _, l := range lines {
		a.logf("%s", l)
	}
}

// MinBlamePeers is the fewest peers with a figure that blame judges
// against each other. The mesh's rules over an agent's links (a star:
// every link has the agent at one end) put the median at the peers'
// median and the spread at least at 1.48 times their median deviation
// from it: of one or two peers, each is as far from their median as
// that deviation, never 5 spreads past it, so a verdict of slow is
// impossible, and "not slow" is no verdict either (a --blame-max-spread
// under that deviation would call the slower of two slow against their
// midpoint, which does not say which of them is off). With fewer, the agent
// exports no verdict (rdmabench_agent_peer_slow, …_bandwidth_low) and
// rdmabench_agent_blame_judged is 0.
const MinBlamePeers = 3

// verdictOf is how judgeFigure judges one figure of the peers.
type verdictOf struct {
	figure        string
	higherIsWorse bool
	value         func(*peerStats) float64 // 0: none yet
	flag          func(*peerStats) *bool   // the peer's verdict
	judged        *bool                    // whether the last pass could judge the figure (MinBlamePeers)
	fewTold       *bool                    // the log said that too few peers had the figure
	bad           func(*peerStats, blame.Verdicts) string
	good          string // the log's words for a bad peer good again
}

// judgeFigure runs blame over one figure of the peers, each link its own
// round (no round is judged as a whole), sets each peer's verdict and
// returns the log lines of those that changed. A peer's links are its one
// link with this agent: it is never a rank at fault. This agent is when
// its links are bad with half of its peers: then those are not the
// peers' fault (and not named).
func (a *Agent) judgeFigure(v verdictOf) []string {
	a.mu.Lock()
	in := blame.Input{Figure: v.figure, HigherIsWorse: v.higherIsWorse, Names: []blame.RankName{{Host: a.cfg.Host}}}
	idx := map[int]*peerStats{}
	for i, s := range a.st.peers {
		in.Names = append(in.Names, blame.RankName{Host: s.addr})
		if x := v.value(s); x > 0 {
			in.Links = append(in.Links, blame.LinkFigure{From: 0, To: i + 1, Round: i + 1, Value: x})
			idx[i+1] = s
		}
	}
	a.mu.Unlock()
	n := len(in.Links)
	can := n >= MinBlamePeers
	bad := map[*peerStats]bool{}
	var b blame.Verdicts
	if can {
		b = blame.Judge(in, a.cfg.Blame)
		for _, l := range b.Links {
			bad[idx[l.Link.To]] = true
		}
	}
	var lines []string
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case !can && n > 0 && !*v.fewTold:
		*v.fewTold = true
		lines = append(lines, fmt.Sprintf("blame: %d of %d peers with a %s, not judged: it takes %d peers, of fewer none can stand out",
			n, len(a.st.peers), v.figure, MinBlamePeers))
	case can && *v.fewTold:
		*v.fewTold = false
		lines = append(lines, fmt.Sprintf("blame: %d peers with a %s: judged again", n, v.figure))
	}
	*v.judged = can
	for _, s := range a.st.peers {
		if !can {
			*v.flag(s) = false // no verdict: the line above says why
			continue
		}
		f := v.flag(s)
		if now := bad[s]; now != *f {
			if now {
				lines = append(lines, v.bad(s, b))
			} else {
				lines = append(lines, fmt.Sprintf("blame: peer %s %s", s.addr, v.good))
			}
			*f = now
		}
	}
	return lines
}

// WriteMetrics writes the agent's metrics in format (FormatOpenMetrics or
// FormatText), as /metrics serves them: its own families, and its
// build's and process's (rdmabench_build_info, process_*, go_*). The
// port counters and the process's figures are read now.
func (a *Agent) WriteMetrics(w io.Writer, format expfmt.Format) error {
	pc := a.portCounters()
	n := 0
	if a.registry != nil {
		n = a.registry.Len()
	}
	a.mu.Lock()
	a.st.registrations = n
	a.readUD()
	a.countOpen()
	own := metricFamilies(&a.st, pc)
	a.mu.Unlock()
	return writeFamilies(w, own, a.process, format)
}

// portCounters reads the error and retransmission counters of the probe
// device's port (nil without a device), telling the first failure and
// the recovery.
func (a *Agent) portCounters() *portReading {
	dev := a.st.device
	if dev == "" {
		return nil
	}
	counters, err := a.readPort(dev, a.st.port)
	a.mu.Lock()
	was := a.portFailing
	a.portFailing = err != nil
	a.mu.Unlock()
	switch {
	case err != nil && !was:
		a.logf("port counters of %s port %d: %v", dev, a.st.port, err)
	case err == nil && was:
		a.logf("port counters of %s port %d: read again", dev, a.st.port)
	}
	return &portReading{counters: counters, err: err}
}

// maxScrapes bounds the scrapes served at once; others get 503.
const maxScrapes = 4

// httpServer serves /metrics, and nothing else.
func (a *Agent) httpServer() *http.Server {
	sem := make(chan struct{}, maxScrapes)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "only GET /metrics", http.StatusMethodNotAllowed)
			return
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		default:
			http.Error(w, "too many scrapes at once", http.StatusServiceUnavailable)
			return
		}
		format := FormatText
		if expfmt.NegotiateAccept(r.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...).FormatType() == expfmt.TypeOpenMetrics {
			format = FormatOpenMetrics
		}
		var buf bytes.Buffer
		if err := a.WriteMetrics(&buf, format); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(format))
		_, _ = w.Write(buf.Bytes())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "this endpoint serves only /metrics", http.StatusNotFound)
	})
	return &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 8 << 10}
}
