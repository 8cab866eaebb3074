package mesh

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/topology"
)

// DefaultPort is the coordinator's default TCP port (the test servers'
// is control.DefaultPort, 19515).
const DefaultPort = 19514

// EnvCoordinator holds the coordinator's address when --coordinator is not
// given (mpirun -x passes it to every rank).
const EnvCoordinator = "RDMABENCH_COORDINATOR"

// Launchers, as a document records where rank and size came from.
const (
	LauncherSlurm      = "slurm"
	LauncherOpenMPI    = "openmpi"
	LauncherPMI        = "pmi"
	LauncherPMIx       = "pmix"
	LauncherKubernetes = "kubernetes"
	LauncherFlags      = "flags"
)

// Launch is what a rank knows of itself from its launcher: its rank, the
// number of ranks, its index among the ranks of its host, and where rank 0
// waits, when the launcher makes that known.
type Launch struct {
	Rank      int
	Size      int
	LocalRank int
	Launcher  string
	// Coordinator is rank 0's address derived from the launcher's
	// environment (Slurm's node list), or "".
	Coordinator string
}

// ErrUsage marks a mistake in the flags or the launcher's environment
// (errors.Is): found before anything starts.
var ErrUsage = errors.New("usage")

// usageErr is an error that is a usage mistake.
type usageErr struct{ err error }

func (u usageErr) Error() string        { return u.err.Error() }
func (u usageErr) Unwrap() error        { return u.err }
func (u usageErr) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return usageErr{fmt.Errorf(format, args...)} }

// Detect finds the rank and the size: from --rank and --ranks (rank >= 0,
// size > 0: given), else from the launcher's environment, read through
// getenv, in this order:
//
//   - Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; rank 0 runs on the
//     first node of SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST), where
//     srun places task 0;
//   - OpenMPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
//     OMPI_COMM_WORLD_LOCAL_RANK;
//   - PMI (MPICH's Hydra, Intel MPI): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID;
//   - PMIx: PMIX_RANK, with --ranks;
//   - a Kubernetes Indexed Job: JOB_COMPLETION_INDEX, with --ranks.
//
// --ranks given beside a launcher that says the size must agree with it.
func Detect(getenv func(string) string, rank, size int) (Launch, error) {
	num := func(name string) (int, bool, error) {
		s := strings.TrimSpace(getenv(name))
		if s == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, true, usagef("%s=%q is not a rank or a count", name, s)
		}
		return n, true, nil
	}
	if rank >= 0 {
		if size <= 0 {
			return Launch{}, usagef("--rank needs --ranks")
		}
		return check(Launch{Rank: rank, Size: size, Launcher: LauncherFlags})
	}
	type source struct {
		launcher, rank, size, local string
	}
	for _, s := range []source{
		{LauncherSlurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
		{LauncherOpenMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
		{LauncherPMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
		{LauncherPMIx, "PMIX_RANK", "", ""},
		{LauncherKubernetes, "JOB_COMPLETION_INDEX", "", ""},
	} {
		r, ok, err := num(s.rank)
		if err != nil {
			return Launch{}, err
		}
		if !ok {
			continue
		}
		l := Launch{Rank: r, Launcher: s.launcher}
		if s.size != "" {
			n, ok, err := num(s.size)
			if err != nil {
				return Launch{}, err
			}
			if !ok {
				return Launch{}, usagef("%s is set but %s is not", s.rank, s.size)
			}
			if size > 0 && size != n {
				return Launch{}, usagef("--ranks %d, but %s=%d", size, s.size, n)
			}
			l.Size = n
		} else {
			if size <= 0 {
				return Launch{}, usagef("%s=%d gives the rank; give the number of ranks with --ranks", s.rank, r)
			}
			l.Size = size
		}
		if s.local != "" {
			if n, ok, err := num(s.local); err != nil {
				return Launch{}, err
			} else if ok {
				l.LocalRank = n
			}
		}
		if s.launcher == LauncherSlurm {
			list := getenv("SLURM_STEP_NODELIST")
			if list == "" {
				list = getenv("SLURM_JOB_NODELIST")
			}
			if hosts, err := ExpandHostlist(list); err == nil && len(hosts) > 0 {
				l.Coordinator = net.JoinHostPort(hosts[0], strconv.Itoa(DefaultPort))
			}
		}
		return check(l)
	}
	return Launch{}, usagef("no rank: run under Slurm (srun), OpenMPI (mpirun), a PMI or PMIx launcher or a Kubernetes Indexed Job, or give --rank and --ranks")
}

func check(l Launch) (Launch, error) {
	switch {
	case l.Size < 2:
		return l, usagef("a mesh needs at least 2 ranks, not %d", l.Size)
	case l.Rank >= l.Size:
		return l, usagef("rank %d of %d: ranks go from 0 to %d", l.Rank, l.Size, l.Size-1)
	}
	return l, nil
}

// CoordinatorAddr returns the coordinator's host:port: given (HOST,
// HOST:PORT or :PORT), else derived from the launcher. The port defaults
// to DefaultPort.
func CoordinatorAddr(given string, l Launch) (string, error) {
	if given == "" {
		given = l.Coordinator
	}
	if given == "" {
		return "", usagef("--coordinator HOST:PORT is needed (or $%s): %s does not say where rank 0 runs", EnvCoordinator, l.Launcher)
	}
	if host, port, err := net.SplitHostPort(given); err == nil {
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return "", usagef("--coordinator %s: %q is not a port", given, port)
		}
		if host == "" && l.Rank != 0 {
			return "", usagef("--coordinator %s: the other ranks need rank 0's host", given)
		}
		return given, nil
	}
	if strings.Contains(given, ":") && !strings.HasPrefix(given, "[") && strings.Count(given, ":") == 1 {
		return "", usagef("--coordinator %s: want HOST or HOST:PORT", given)
	}
	return net.JoinHostPort(strings.Trim(given, "[]"), strconv.Itoa(DefaultPort)), nil
}

// ExpandHostlist expands a Slurm host list, "node[1-3,07],gpu-a": the
// names in order (topology.ExpandHostlist).
func ExpandHostlist(s string) ([]string, error) { return topology.ExpandHostlist(s) }
