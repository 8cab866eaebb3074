package watch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

// A kept probe session (Config.Keep, the latency probes of tcp-lat and,
// over RC, of write-lat, read-lat, send-lat and atomic-lat):
// per peer, the control connection and a kept session on it
// (workloads.Kept: the server's socket and a connection to it, or both
// ends' RC QPs and buffers, set up and warmed up once),
// reused probe after probe. A probe is then a burst of the probe's
// iterations (ping-pongs, or a READ's or an atomic's) on the kept
// connection, its samples added to
// the peer's histogram. A session that fails is torn down (counted by
// kind, rdmabench_agent_probe_sessions_failed_total) and set up again at
// the peer's next probe; one found lost before its burst, or whose burst
// failed at once (a peer restarted), is set up again within the same
// probe. A peer that leaves the set frees its session; one that stops
// answering fails its burst at --probe-timeout (a timeout) and its
// session is freed then.

// ErrNoKept is the error of a peer whose server keeps no probe sessions
// (an older rdmabench of the same protocol version, or `rdmabench serve`,
// which runs one test at a time): its probes are then whole tests.
var ErrNoKept = errors.New("keeps no probe sessions")

// keptState is what the kept sessions share; their counters are in
// state (keptOpened, keptFailed, keptOpen).
type keptState struct {
	closer sync.WaitGroup // sessions being closed
	spec   workloads.Spec // the kept session's spec: the probe's
	iters  int            // a burst's ping-pongs
}

// keeps tells whether the latency probes run on kept sessions: tcp-lat's,
// and the RDMA latency tests' over RC, polling (with -e, a whole test
// each, which waits on events as asked).
func (a *Agent) keeps() bool {
	if !a.cfg.Keep || a.cfg.UD || workloads.KeptFeatureOf(a.info.Name) == "" {
		return false
	}
	s := a.cfg.Probe.Spec
	return a.info.Name == "tcp-lat" || (!s.Events && (s.Connection == "" || s.Connection == "RC"))
}

// initKept prepares the kept sessions' spec from the probe's plan: a
// kept RDMA session's loop gives up on a silent peer at the probe's
// timeout, not later.
func (a *Agent) initKept() {
	specs := a.run.Specs()
	a.kept.spec = specs[0]
	if a.kept.spec.IdleTimeout > a.cfg.ProbeTimeout {
		a.kept.spec.IdleTimeout = a.cfg.ProbeTimeout
	}
	a.kept.iters = max(a.kept.spec.Iterations, 1)
}

// probeKept runs one latency probe of p on its kept session (set up when
// it has none) and records it; slow is probe's.
func (a *Agent) probeKept(ctx context.Context, p *peer, slow func()) {
	a.mu.Lock()
	k, c, addr, samples := p.kept, p.client, p.stats.addr, p.samples
	p.kept, p.client = nil, nil
	p.keptOut = k != nil
	a.mu.Unlock()
	if samples == nil {
		samples = make([]uint64, a.kept.iters)
	}
	deadline := time.Now().Add(a.cfg.ProbeTimeout)
	var torn []string // the kinds of the sessions torn down
	// tear tears the session and its control connection down.
	tear := func(err error) {
		torn = append(torn, classify(err))
		a.closeKept(k, c)
		k, c = nil, nil
	}
	if k != nil {
		select {
		case <-k.Lost():
			tear(k.LostErr())
		default:
		}
	}
	opened := 0
	var err error
	for try := 0; ; try++ {
		fresh := k == nil
		if fresh {
			if slow != nil {
				slow()
			}
			if k, c, err = a.openKept(ctx, deadline, addr, c); err != nil {
				break
			}
			opened++
		}
		k.OnSlow(slow)
		if err = k.Burst(deadline, samples); err == nil {
			break
		}
		kind := classify(err)
		tear(err)
		// A kept session that failed at once (its peer restarted) is set
		// up again now; a timeout is the peer's answer.
		if fresh || try > 0 || kind == ResultTimeout || ctx.Err() != nil {
			break
		}
	}
	if errors.Is(err, ErrNoKept) {
		// Its probes are whole tests, from this one on.
		a.mu.Lock()
		p.noKept, p.keptOut = true, false
		p.samples = samples
		a.mu.Unlock()
		a.logf("probe %s: %v; its probes are whole tests", addr, err)
		a.probe(ctx, p, false, slow)
		return
	}
	if ctx.Err() != nil { // shutting down: not the peer's fault
		a.closeKept(k, c)
		a.mu.Lock()
		a.probeDone(p)
		p.keptOut = false
		a.st.keptOpened += uint64(opened)
		a.mu.Unlock()
		return
	}
	a.mu.Lock()
	a.probeDone(p)
	a.st.keptOpened += uint64(opened)
	for _, kind := range torn {
		a.st.keptFailed[resultIndex(kind)]++
	}
	result, was := a.recordBurst(p, samples, err)
	if p.gone {
		a.closeKept(k, c)
	} else {
		p.kept, p.client = k, c
	}
	p.keptOut = false
	a.mu.Unlock()
	a.logResult("probe", addr, err, result, was)
}

// countOpen counts the sessions kept now, those out with a probe too
// (a.mu held): at each scrape, not at each probe, whose cost would grow
// with the peers.
func (a *Agent) countOpen() {
	n := 0
	for _, p := range a.byAddr {
		if p.kept != nil || p.keptOut {
			n++
		}
	}
	a.st.keptOpen = n
}

// openKept sets up a kept session with addr's server over c (dialled
// when nil), by deadline, trying again a few times while the server is
// busy. The deadline's context (a timer) is made here: a burst on a kept
// session takes the deadline itself.
func (a *Agent) openKept(ctx context.Context, deadline time.Time, addr string, c *remote.Client) (*workloads.Kept, *remote.Client, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for try := 0; ; try++ {
		if c == nil {
			var err error
			if c, err = a.dial(ctx, addr); err != nil {
				return nil, nil, err
			}
		}
		if !c.Has(workloads.KeptFeatureOf(a.kept.spec.Test)) {
			err := fmt.Errorf("peer %s (rdmabench %s) %w: an older rdmabench, or a server of one test at a time",
				addr, c.Version(), ErrNoKept)
			_ = c.Close()
			return nil, nil, err
		}
		k, err := workloads.OpenKept(ctx, c.Target(), a.kept.spec)
		if err == nil {
			return k, c, nil
		}
		var se *control.ServerError
		if !(errors.As(err, &se) && (se.Code == control.CodeBusy || se.Code == control.CodeSpec || se.Code == control.CodeLimit)) {
			_ = c.Close()
			c = nil
		}
		if !errors.Is(err, control.ErrBusy) || try >= busyRetries {
			return nil, c, err
		}
		t := time.NewTimer(time.Duration(2+rand.IntN(10*(try+1))) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, c, err
		case <-t.C:
		}
	}
}

// closeKept ends a kept session and closes its control connection (either
// nil: none), in the background: the server's end is waited for a moment.
func (a *Agent) closeKept(k *workloads.Kept, c *remote.Client) {
	if k == nil && c == nil {
		return
	}
	a.kept.closer.Add(1)
	go func() {
		defer a.kept.closer.Done()
		if k != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = k.Close(ctx)
			cancel()
		}
		if c != nil {
			_ = c.Close()
		}
	}()
}

// isReset tells an error of a connection its peer reset or closed under
// a write: a peer killed or restarted.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// addNs adds a good burst's samples (ns), in the buckets of
// render.OpenMetricsLatencyBoundsNs: sorted here, in place, for its p50.
func (p *peerStats) addNs(samples []uint64) {
	bounds := render.OpenMetricsLatencyBoundsNs
	slices.Sort(samples)
	var sum uint64
	for _, s := range samples {
		i, _ := slices.BinarySearch(bounds, int64(s))
		p.buckets[i]++
		sum += s
	}
	n := len(samples)
	p.count += uint64(n)
	p.sumNs += float64(sum)
	var p50 float64
	if n%2 == 1 {
		p50 = float64(samples[n/2])
	} else {
		p50 = (float64(samples[n/2-1]) + float64(samples[n/2])) / 2
	}
	w := p.window
	if w <= 0 || w > recentProbes {
		w = recentProbes
	}
	p.recent[p.next] = p50
	p.next = (p.next + 1) % w
	p.nRecent = min(p.nRecent+1, w)
}

// addNetNs adds a good UD probe's network times (ns; 0: none, a stamp
// or the peer's delay missing).
func (p *peerStats) addNetNs(net []uint64) {
	for _, s := range net {
		if s == 0 {
			continue
		}
		i, _ := slices.BinarySearch(render.OpenMetricsLatencyBoundsNs, int64(s))
		p.netBuckets[i]++
		p.netCount++
		p.netSumNs += float64(s)
	}
}

// ServerLimits are the connections and tests an agent's server takes at
// once (control.ServerOptions' MaxConns and MaxTests) for a fleet of at
// most maxPeers agents: each peer's kept session (one connection, one
// test), each peer's probe or bandwidth probe beside it (a connection and
// a test, DefaultMaxInflight of them from one peer), and room for a few
// tests run by hand.
func ServerLimits(maxPeers int) (conns, tests int) {
	return 2*maxPeers + 64, maxPeers + DefaultMaxInflight + 4
}
