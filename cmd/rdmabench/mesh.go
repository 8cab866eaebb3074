package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/pkg/mesh"
	"github.com/rdmabench/rdmabench/pkg/remote"
	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/render"
	"github.com/rdmabench/rdmabench/pkg/topology"
	"github.com/rdmabench/rdmabench/pkg/workloads"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// meshNotFlags are the test commands' flags that mean nothing in a mesh.
var meshNotFlags = map[string]string{
	"port":        "each rank's test server listens on a free port (--listen), and the ranks meet at --coordinator",
	"loopback":    "a mesh measures between ranks",
	"server-dev":  "each rank's server uses its own -d",
	"json-stream": "with --out, rank 0 writes every link's results as it ends to FILE's link stream (FILE.links.ndjson)",
}

func newMeshCmd(args []string) *cobra.Command {
	f := &benchFlags{}
	m := &meshFlags{}
	cmd := &cobra.Command{
		Use:   "mesh [TEST...] [flags]",
		Short: "Measure every pair of many hosts or NICs, under Slurm, MPI or k8s",
		Long: `Measure every pair of ranks (hosts, or NICs) and write one document with
the N x N matrix of each figure. Start it once per rank with the cluster's
launcher:
rank and size come from its environment (Slurm: SLURM_PROCID, SLURM_NTASKS,
SLURM_LOCALID; OpenMPI: OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK; PMI:
PMI_RANK, PMI_SIZE; PMIx: PMIX_RANK with --ranks; a Kubernetes Indexed Job:
JOB_COMPLETION_INDEX with --ranks), or from --rank and --ranks.

Every rank runs a test server and registers its address, devices and GIDs
with rank 0, the coordinator (--coordinator HOST:PORT,
$` + mesh.EnvCoordinator + `, or under Slurm the first node of the step, port
19514), with the token if one is given (--token or $` + EnvToken + `). Rank
0 runs the pairs in rounds of disjoint pairs, each link exactly as
'rdmabench TEST HOST' runs, and prints the matrices.
The schedule:
  (default)   every pair, both directions, as a round-robin: N-1 rounds
              (N when N is odd)
  --rails     ranks are NICs (the local rank picks the NIC): NIC i of each
              host only against NIC i of the others, every rail of a host
              pair in the same round, at once: H-1 rounds for H hosts
  --sample K  a quick check: K rounds of random perfect matchings, so that
              every rank meets K distinct peers whatever the size (with
              --rails: every host, on each rail); when their number is odd
              one rests in each round. --seed repeats a sample; the
              document records K and the seed
  --pairs F   the links in the file
  --duplex    with any of those: each pair runs once, both directions at
              once (a latency test's ping-pong crosses both ways, a
              bandwidth test runs bidirectional, each direction's figure
              in its own cell): half the links, half the tests
  --host-level
              ranks are hosts (one per host), -d lists every NIC of a
              host: each link runs on all of them at once, paired one by
              one with the peer's, and records their sum (the host's
              aggregate) with each NIC's own figures
  --pattern P
              a load pattern in place of the pairs (below)

A load pattern (--pattern) runs steps in which the flows of one bandwidth
test (default write-bw; --qp N QPs each) run at once for -D (default 2s),
a ping-pong beside them (write-lat; tcp-lat for tcp-bw), the port counters
read around each step. --limit-share, --limit-fairness and --limit-load-p99
gate each receiver's aggregate over its nominal rate, its flows' Jain
index, and the p99 under the load. The patterns:
  incast:K    K senders into one rank, each rank in turn (--sample N: N
              receivers; --seed)
  all-to-all  every ordered pair of ranks at once; all-to-all:G in steps
              of G ranks
  bisection   two halves, every pair across them at once, both ways:
              across the top switch of --topology, else by rank order

TESTs are any of the test commands (default: write-lat write-bw); the test
flags work as in suite. Unless -n, -D or --precision says otherwise, each
test runs until its headline figure is known to 5%, for at most 0.5 s.

Exit status at rank 0: 0 when every link was measured and passed its gates;
1 when a link failed (a rank lost or never registered, a test error: the
document is complete and marks those links failed); 3 when every link was
measured but one failed a gate (--limit-*, --outlier), naming the links,
or blame found a bad switch, rank or link (slow again on retest; see
--blame), or a pattern's step failed a gate. A figure whose fleet blame cannot judge (too noisy, split in two
clusters no verdict explains, more spinning ranks than cores on a host)
gets no verdict, says why on stderr and in the document, and leaves the
exit status to the gates: the links were measured, the fleet just does
not tell a bad one from the rest.
The other ranks exit 0 once rank 0 ends the mesh, 1 when they cannot
register or lose it.`,
		Example: `  srun -N 16 --ntasks-per-node 1 rdmabench mesh --out fabric.json
  srun -N 16 --ntasks-per-node 8 rdmabench mesh \
    -d mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7
  srun -N 1024 --ntasks-per-node 8 rdmabench mesh \
    -d mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7 --rails --sample 15
  mpirun -np 4 --host a,b,c,d rdmabench mesh --coordinator a:19514 \
    write-lat --limit-p99 20us
  rdmabench mesh --rank 0 --ranks 2 --coordinator node1  # --rank 1 on the other`,
		RunE: func(cmd *cobra.Command, tests []string) error {
			cfg, err := m.config(cmd.Flags(), f, tests, args)
			if err != nil {
				return usageError{err}
			}
			stderr := cmd.ErrOrStderr()
			if m.verbose {
				cfg.Log = stderr
			} else if cfg.Launch.Rank == 0 {
				cfg.Log = &meshLog{w: stderr}
			}
			if cfg.Launch.Rank != 0 {
				_, err := mesh.Run(cmd.Context(), cfg)
				if errors.Is(err, mesh.ErrUsage) {
					return usageError{err}
				}
				return err
			}
			return runMeshRank0(cmd, f, cfg)
		},
	}
	// The test flags, as suite has them, but those that mean nothing here.
	all := pflag.NewFlagSet("mesh", pflag.ContinueOnError)
	f.register(all, workloads.Tests)
	all.VisitAll(func(fl *pflag.Flag) {
		switch fl.Name {
		case "ib-dev":
			fl.Usage = "RDMA device; a list (mlx5_0,mlx5_1,...) gives each rank of a host the one at its local rank, or with --host-level every one at once (default: the first device)"
		case "output":
			fl.Usage = "rank 0's output format: " + strings.Join(render.MeshFormats, ", ")
		case "out":
			fl.Usage = "rank 0 also writes the summary to FILE at the end (.txt table, .md, .csv, else JSON), and every link's full results as it ends to the link stream beside it, FILE.links.ndjson (never rewritten: a rank 0 killed leaves every finished link there; 'rdmabench report' reads it)"
		}
		cmd.Flags().AddFlag(fl)
		if meshNotFlags[fl.Name] != "" {
			_ = cmd.Flags().MarkHidden(fl.Name)
		}
	})
	m.add(cmd.Flags())
	return cmd
}

// meshFlags are mesh's own flags; the test flags are benchFlags'.
type meshFlags struct {
	rank, size                   int
	coordinator, listen, adv     string
	registerTimeout, linkTimeout time.Duration
	pairsFile                    string
	topologyFile, host           string
	rails, duplex, hostLevel     bool
	sample                       int
	seed                         uint64
	outlier                      ratioFlag
	verbose, blame               bool
	blameFlags                   blameFlags
	pattern                      string
	limitShare, limitFairness    ratioFlag
	limitLoadP99                 time.Duration
}

// add declares the flags.
func (m *meshFlags) add(fs *pflag.FlagSet) {
	fs.IntVar(&m.rank, "rank", -1, "this rank, when no launcher says it (with --ranks)")
	fs.IntVar(&m.size, "ranks", 0, "the number of ranks, when the launcher does not say it (PMIx, a Kubernetes Indexed Job); --size is the message size, as in every test")
	fs.StringVar(&m.coordinator, "coordinator", "", "rank 0's HOST[:PORT], where the ranks meet (default $"+mesh.EnvCoordinator+"; under Slurm the first node of the step; port 19514)")
	fs.StringVar(&m.listen, "listen", ":0", "this rank's test server address: HOST:PORT")
	fs.StringVar(&m.adv, "advertise", "", "the host the other ranks dial this rank's server at (default: the address it reaches rank 0 from)")
	fs.Var(positiveDuration(&m.registerTimeout), "register-timeout", "how long rank 0 waits for every rank to register, and the others try to reach it (default 60s)")
	fs.Var(positiveDuration(&m.linkTimeout), "link-timeout", "give up a link after this long (default: a minute, plus half a minute per test and size, plus any -D or --precision-cap)")
	fs.StringVar(&m.topologyFile, "topology", "", "the fabric, in Slurm's topology.conf syntax (SwitchName=leaf1 Nodes=node[01-16], SwitchName=spine Switches=leaf[1-2]): every rank's host must be in it; each link records the switches it crosses, and blame names a switch whose uplinks' links are slow while its inner links are not (rank 0 reads it)")
	fs.StringVar(&m.host, "host", "", "the host this rank stands for, in place of its hostname, for ranks started by hand (--rank): ranks on one machine can stand for the hosts of a --topology")
	fs.StringVar(&m.pairsFile, "pairs", "", "measure only the links in FILE: one per line, FROM TO (ranks), or A <-> B for both directions")
	fs.BoolVar(&m.rails, "rails", false, "ranks are NICs: NIC i of each host (its local rank) only against NIC i of the other hosts, every rail of a host pair in the same round, at once")
	fs.IntVar(&m.sample, "sample", 0, "a quick check: K rounds of random perfect matchings, every rank (with --rails, every host, on each rail) meeting K distinct peers")
	fs.Uint64Var(&m.seed, "seed", 0, "the seed of --sample's matchings, to repeat a sample (default: drawn, and recorded in the document)")
	fs.BoolVar(&m.duplex, "duplex", false, "each pair of ranks runs once, both directions at once: a latency test's ping-pong (its figure in both cells of the pair), a bandwidth test bidirectional as with -b (each direction's figure in its own cell); half the links of the schedule. read-lat and atomic-lat are refused (no ping-pong)")
	fs.BoolVar(&m.hostLevel, "host-level", false, "ranks are hosts, one per host: every link runs on all the devices of -d at once (paired one by one with the peer's, as it registered them) and records their sum, the host's aggregate, with each device's own figures; every rank lists as many devices")
	fs.BoolVar(&m.blame, "blame", true, "once the schedule is done, judge every link's p50 and bandwidth against the fleet's own medians and spread: a rank slow with most of its peers is blamed, not its links; a link slow while neither end is, the link; a round slow as a whole, no one. Suspects are retested in rounds of their own: those that recover are flaky (reported), the others bad (exit 3). --blame=false: no verdicts, no retests")
	m.blameFlags.add(fs, "a link")
	fs.Var(&m.outlier, "outlier", "exit 3 naming each link whose bandwidth is below this fraction of the median of all links (or p50 latency above the median divided by it), e.g. 0.8")
	fs.StringVar(&m.pattern, "pattern", "", "run a load pattern in place of the pairs: "+strings.Join(mesh.PatternNames, ", ")+" (see above); its one bandwidth test's flows run at once in each step for -D (default "+mesh.DefaultPatternDuration.String()+"), a ping-pong beside them")
	fs.Var(&m.limitShare, "limit-share", "with --pattern: exit 3 naming the step and receiver whose aggregate is below this share of its link's nominal rate (e.g. 0.9 or 90%; TCP has none)")
	fs.Var(&m.limitFairness, "limit-fairness", "with --pattern: exit 3 naming the step and receiver whose flows' Jain index is below this (e.g. 0.9)")
	fs.Var(latencyLimit(&m.limitLoadP99), "limit-load-p99", "with --pattern: exit 3 naming the step whose ping-pong p99 under the load is above this (e.g. 50us)")
	fs.BoolVarP(&m.verbose, "verbose", "v", false, "log, on every rank, its registration and each test it serves")
}

// config checks the flags (fs, with f's test flags), the tests and the
// launcher's environment, and makes the mesh's configuration: every
// mistake is refused here, by name, before anything listens.
func (m *meshFlags) config(fs *pflag.FlagSet, f *benchFlags, tests, args []string) (mesh.Config, error) {
	for name, why := range meshNotFlags {
		if fs.Changed(name) {
			return mesh.Config{}, fmt.Errorf("--%s does not apply to mesh: %s", name, why)
		}
	}
	var pattern *mesh.Pattern
	if fs.Changed("pattern") {
		p, err := mesh.ParsePattern(m.pattern)
		if err != nil {
			return mesh.Config{}, err
		}
		pattern = &p
		for _, name := range []string{"iters", "precision", "precision-cap"} {
			if fs.Changed(name) {
				return mesh.Config{}, fmt.Errorf("--pattern %s and --%s are exclusive: a step's flows run for -D (default %v)", p, name, mesh.DefaultPatternDuration)
			}
		}
		if len(tests) == 0 {
			tests = []string{"write-bw"}
		}
	}
	if err := meshScheduleFlags(fs, m.pairsFile, m.sample, pattern != nil); err != nil {
		return mesh.Config{}, err
	}
	if len(tests) == 0 {
		tests = workloads.TestNames(workloads.MeshTests())
	}
	var infos []workloads.TestInfo
	for _, t := range tests {
		info, ok := workloads.LookupTest(t)
		if !ok {
			return mesh.Config{}, fmt.Errorf("mesh: unknown test %q (want %s)", t, strings.Join(testNames(), ", "))
		}
		infos = append(infos, info)
	}
	if err := meshFlagsApply(fs, infos); err != nil {
		return mesh.Config{}, err
	}
	if f.all && len(f.spec.Sizes) > 0 {
		return mesh.Config{}, errors.New("mesh: -a and -s are exclusive")
	}
	if err := sizeEnds(fs, true); err != nil {
		return mesh.Config{}, err
	}
	if err := linkLimit(f.limits, "mesh", tests); err != nil {
		return mesh.Config{}, err
	}
	if !slices.Contains(render.MeshFormats, f.output) {
		return mesh.Config{}, fmt.Errorf("mesh: -o %s: a mesh document renders as %s", f.output, strings.Join(render.MeshFormats, ", "))
	}
	if f.outFile != "" && !slices.Contains(render.MeshFormats, render.FormatForPath(f.outFile)) {
		return mesh.Config{}, fmt.Errorf("mesh: --out %s: a mesh document is written as .json, .txt, .md or .csv", f.outFile)
	}
	for _, name := range blameFlagNames {
		if fs.Changed(name) && !m.blame {
			return mesh.Config{}, fmt.Errorf("mesh: --%s applies to --blame, which --blame=false turns off", name)
		}
	}
	blame, err := m.blameFlags.options("mesh")
	if err != nil {
		return mesh.Config{}, err
	}
	rank := m.rank
	if !fs.Changed("rank") {
		rank = -1
	}
	if fs.Changed("host") && rank < 0 {
		return mesh.Config{}, errors.New("--host names the host a rank started by hand (--rank) stands for; under a launcher each rank's host is its own")
	}
	if fs.Changed("host") && strings.TrimSpace(m.host) == "" {
		return mesh.Config{}, errors.New("--host: want a host name")
	}
	launch, err := mesh.Detect(os.Getenv, rank, m.size)
	if err != nil {
		return mesh.Config{}, err
	}
	coordinator := m.coordinator
	if coordinator == "" {
		coordinator = os.Getenv(mesh.EnvCoordinator)
	}
	coord, err := mesh.CoordinatorAddr(coordinator, launch)
	if err != nil {
		return mesh.Config{}, err
	}
	if pattern == nil && m.sample > launch.Size-1 {
		return mesh.Config{}, fmt.Errorf("--sample %d: %d ranks have at most %d peers each; without --sample every pair is measured",
			m.sample, launch.Size, launch.Size-1)
	}
	seed := m.seed
	if !fs.Changed("seed") {
		seed = rand.Uint64() >> 11 // below 2^53: a number every JSON reader keeps exact
	}
	req := f.request(tests, true, args)
	if pattern == nil && !fs.Changed("precision") && !fs.Changed("iters") && !fs.Changed("duration") {
		req.Spec.Precision = suitePrecision
		if !fs.Changed("precision-cap") {
			req.Spec.PrecisionCap = suitePrecisionCap
		}
	}
	cfg := mesh.Config{Launch: launch, Coordinator: coord, Token: remote.Token(f.token), Listen: m.listen, Advertise: m.adv,
		Request: req, RegisterTimeout: m.registerTimeout, LinkTimeout: m.linkTimeout, Limits: f.limits, Outlier: m.outlier.v,
		Blame: m.blame, BlameOptions: blame, Schedule: mesh.ScheduleOptions{Rails: m.rails, Sample: m.sample, Seed: seed},
		Duplex: m.duplex, HostLevel: m.hostLevel, Host: strings.TrimSpace(m.host), Pattern: pattern,
		PatternLimits: report.PatternLimits{MinShare: m.limitShare.v, MinJain: m.limitFairness.v, MaxLoadP99Ns: int64(m.limitLoadP99)}}
	if pattern != nil && !fs.Changed("duration") {
		cfg.Request.Spec.Duration = mesh.DefaultPatternDuration
	}
	if d := strings.TrimSpace(f.spec.Device); d != "" {
		cfg.Devices = strings.Split(d, ",")
	}
	if err := cfg.Check(); err != nil {
		return mesh.Config{}, fmt.Errorf("mesh: %w", err)
	}
	if launch.Rank == 0 && m.topologyFile != "" {
		t, err := topology.ParseFile(m.topologyFile)
		if err != nil {
			return mesh.Config{}, fmt.Errorf("--topology: %w", err)
		}
		cfg.Topology = t
	}
	if launch.Rank == 0 && m.pairsFile != "" {
		links, err := readPairs(m.pairsFile, launch.Size)
		if err != nil {
			return mesh.Config{}, err
		}
		cfg.Links = links
	}
	return cfg, nil
}

// meshScheduleFlags refuses schedule flags that conflict, by name.
func meshScheduleFlags(fs *pflag.FlagSet, pairsFile string, sample int, pattern bool) error {
	if pairsFile != "" {
		for _, name := range []string{"rails", "sample", "seed"} {
			if fs.Changed(name) {
				return fmt.Errorf("--pairs and --%s are exclusive: the file gives the links", name)
			}
		}
	}
	if fs.Changed("sample") && sample < 1 {
		return fmt.Errorf("--sample %d: K is a number of rounds, at least 1", sample)
	}
	if fs.Changed("seed") && !fs.Changed("sample") && !pattern {
		return errors.New("--seed applies to --sample only: the other schedules are not random")
	}
	return nil
}

func testNames() []string { return workloads.TestNames(workloads.Tests) }

// meshFlagsApply refuses a knob or limit set on the command line that
// applies to none of the mesh's tests.
func meshFlagsApply(fs *pflag.FlagSet, tests []workloads.TestInfo) error {
	var err error
	fs.Visit(func(fl *pflag.Flag) {
		if err != nil {
			return
		}
		for _, d := range testFlags {
			probe := pflag.NewFlagSet("probe", pflag.ContinueOnError)
			d.add(probe, &benchFlags{})
			if probe.Lookup(fl.Name) == nil {
				continue
			}
			if !d.appliesToAny(tests) {
				names := make([]string, len(tests))
				for i, t := range tests {
					names[i] = t.Name
				}
				if k, ok := workloads.LookupKnob(d.knob); ok {
					err = fmt.Errorf("--%s does not apply to the mesh's tests (%s): it is for %s", fl.Name,
						strings.Join(names, ", "), strings.Join(k.Tests(), ", "))
				} else {
					err = fmt.Errorf("--%s does not apply to the mesh's tests (%s): it is for %s tests", fl.Name,
						strings.Join(names, ", "), d.metric)
				}
			}
			return
		}
	})
	return err
}

// linksPath is where the link stream of the summary at out goes: beside
// it, fabric.json's as fabric.links.ndjson.
func linksPath(out string) string {
	return strings.TrimSuffix(out, filepath.Ext(out)) + ".links.ndjson"
}

func readPairs(path string, n int) ([]mesh.Link, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--pairs: %w", err)
	}
	defer file.Close()
	return mesh.ParsePairs(file, path, n)
}

// runMeshRank0 runs the coordinator's rank, prints the document, and maps
// its outcome to the exit status.
func runMeshRank0(cmd *cobra.Command, f *benchFlags, cfg mesh.Config) error {
	stderr := cmd.ErrOrStderr()
	bar := newMeshProgress(stderr, f)
	cfg.Progress = bar.update
	var links *os.File
	if f.outFile != "" {
		var err error
		if links, err = os.Create(linksPath(f.outFile)); err != nil {
			return fmt.Errorf("mesh: the link stream: %w", err)
		}
		defer links.Close()
		cfg.Stream = func(e report.Event) error { return report.WriteEvent(links, e) }
	}
	doc, err := mesh.Run(cmd.Context(), cfg)
	bar.finish()
	if errors.Is(err, mesh.ErrUsage) {
		return usageError{err}
	}
	if doc == nil {
		return err
	}
	if links != nil {
		if cerr := links.Close(); cerr != nil {
			fmt.Fprintf(stderr, "rdmabench mesh: the link stream %s: %v\n", links.Name(), cerr)
		}
		doc.Mesh.LinksFile = filepath.Base(links.Name())
	}
	if err := render.WriteWith(cmd.OutOrStdout(), f.output, doc, tableOptions(cmd)); err != nil {
		return err
	}
	if f.outFile != "" {
		if err := f.writeFile(doc); err != nil {
			return err
		}
	}
	m := doc.Mesh
	failed := m.FailedLinks()
	for _, l := range failed {
		fmt.Fprintf(stderr, "link failed: %d -> %d: %s\n", l.From, l.To, l.Error)
	}
	for _, lf := range m.Failures {
		fmt.Fprintf(stderr, "%s failed: %s\n", lf.Kind, lf.Message)
	}
	if m.Blame != nil {
		for _, f := range m.Blame.Figures {
			if f.Unjudged != "" {
				k := report.Key{Test: f.Test, Connection: f.Connection, Size: f.Size}
				fmt.Fprintf(stderr, "blame: %s %s: the fleet cannot be judged, no verdict (and no exit 3 for it): %s\n", k, f.Figure.Name(), f.Unjudged)
			}
		}
	}
	stepsFailed := 0
	for _, st := range m.Steps {
		if st.Error != "" {
			stepsFailed++
			fmt.Fprintf(stderr, "step %d failed: %s\n", st.Step, st.Error)
		}
		for _, w := range st.Warnings {
			fmt.Fprintf(stderr, "step %d: %s\n", st.Step, w)
		}
	}
	for _, sf := range m.StepFailures {
		fmt.Fprintf(stderr, "%s gate failed: %s\n", sf.Gate, sf.Message)
	}
	bad := 0
	for _, v := range m.Verdicts {
		fmt.Fprintf(stderr, "%s %s: %s\n", v.Kind, v.Subject, v.Message)
		if v.Kind == report.VerdictBad {
			bad++
		}
	}
	switch {
	case cmd.Context().Err() != nil:
		return reported{cmd.Context().Err()}
	case len(failed) > 0:
		return reported{fmt.Errorf("%d of %d links failed", len(failed), m.LinkTotal())}
	case stepsFailed > 0:
		return reported{fmt.Errorf("%d of %d steps had flows fail", stepsFailed, len(m.Steps))}
	case len(m.StepFailures) > 0:
		return reported{gateError{fmt.Errorf("%d step gate(s) failed", len(m.StepFailures))}}
	case len(m.Failures) > 0:
		return reported{gateError{fmt.Errorf("%d link check(s) failed", len(m.Failures))}}
	case bad > 0:
		return reported{gateError{fmt.Errorf("%d bad rank(s) or link(s) blamed", bad)}}
	}
	return err
}

// meshLog passes rank 0's lines about ranks lost or never registered (and
// a failed write of the link stream) to stderr, not the others: one line per rank and
// per test served is too much at scale (--verbose shows them).
type meshLog struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *meshLog) Write(p []byte) (int, error) {
	line := string(p)
	if !strings.HasPrefix(line, "rdmabench mesh: ") ||
		!(strings.Contains(line, " lost: ") || strings.Contains(line, "did not register") || strings.Contains(line, "link stream")) {
		return len(p), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// meshProgress is rank 0's bar over the links, on a terminal only.
type meshProgress struct {
	mu  sync.Mutex
	w   io.Writer
	bar *progressbar.ProgressBar
}

func newMeshProgress(stderr io.Writer, f *benchFlags) *meshProgress {
	file, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(file.Fd())) {
		return &meshProgress{}
	}
	if f.output != render.FormatTable && f.output != render.FormatMarkdown && f.outFile == "" {
		return &meshProgress{}
	}
	return &meshProgress{w: stderr}
}

func (p *meshProgress) update(ev mesh.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return
	}
	if ev.Started {
		if p.bar == nil {
			p.bar = progressbar.NewOptions(ev.Links, progressbar.OptionSetWriter(p.w), progressbar.OptionShowCount(),
				progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(30), progressbar.OptionSetPredictTime(true))
		}
		p.bar.Describe(fmt.Sprintf("%d ranks, round %d/%d, %d failed", ev.Ranks, max(ev.Round, 1), ev.Rounds, ev.Failed))
	}
	if ev.Link != nil && p.bar != nil {
		_ = p.bar.Add(1)
	}
}

func (p *meshProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
	}
}
