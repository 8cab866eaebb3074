package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMeshTopologyFlags: --topology's mistakes are named, the line of
// the file included, and --host applies to ranks started by hand only;
// both before anything listens (exit 2).
func TestMeshTopologyFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "topology.conf")
	if err := os.WriteFile(bad, []byte("# leaves\nSwitchName=leaf1 Nodes=n[1-4]\nSwitchName=spine Switches=leaf[1-2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"--rank", "0", "--ranks", "2", "--coordinator", "127.0.0.1", "--topology", bad},
			nil, bad + ":3: switch spine lists switch leaf2, which no line defines"},
		{[]string{"--rank", "0", "--ranks", "2", "--coordinator", "127.0.0.1", "--topology", filepath.Join(dir, "none.conf")},
			nil, "--topology: open "},
		{[]string{"--coordinator", "127.0.0.1", "--host", "n1"}, []string{"SLURM_PROCID=0", "SLURM_NTASKS=2"},
			"--host names the host a rank started by hand (--rank) stands for"},
		{[]string{"--rank", "0", "--ranks", "2", "--coordinator", "127.0.0.1", "--host", " "}, nil, "--host: want a host name"},
	} {
		t.Run(c.want, func(t *testing.T) {
			for _, e := range c.env {
				k, v, _ := strings.Cut(e, "=")
				t.Setenv(k, v)
			}
			_, stderr, code := cli(t, append([]string{"mesh", "tcp-lat"}, c.args...)...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("%q: exit %d, %q; want exit %d naming %q", c.args, code, stderr, exitUsage, c.want)
			}
		})
	}
}
