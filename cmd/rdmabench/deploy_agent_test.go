package main

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/watch"
	"gopkg.in/yaml.v3"
)

// TestAgentDaemonSet: the DaemonSet of deploy/kubernetes runs `rdmabench
// agent` with flags it takes, its --peers is where the ConfigMap is
// mounted, and the ConfigMap's peers parse.
func TestAgentDaemonSet(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/rdmabench-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var peers, mount, cmName, volCM string
	var args []string
	var command []string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
			Data map[string]string `yaml:"data"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Command      []string `yaml:"command"`
							Args         []string `yaml:"args"`
							VolumeMounts []struct {
								Name      string `yaml:"name"`
								MountPath string `yaml:"mountPath"`
							} `yaml:"volumeMounts"`
						} `yaml:"containers"`
						Volumes []struct {
							Name      string `yaml:"name"`
							ConfigMap *struct {
								Name string `yaml:"name"`
							} `yaml:"configMap"`
						} `yaml:"volumes"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&o); err != nil {
			break
		}
		switch o.Kind {
		case "ConfigMap":
			cmName, peers = o.Metadata.Name, o.Data["peers"]
		case "DaemonSet":
			ps := o.Spec.Template.Spec
			if len(ps.Containers) != 1 {
				t.Fatalf("%d containers", len(ps.Containers))
			}
			command, args = ps.Containers[0].Command, ps.Containers[0].Args
			for _, v := range ps.Volumes {
				if v.ConfigMap != nil {
					volCM = v.ConfigMap.Name
					for _, m := range ps.Containers[0].VolumeMounts {
						if m.Name == v.Name {
							mount = m.MountPath
						}
					}
				}
			}
		}
	}
	if strings.Join(command, " ") != "rdmabench agent" {
		t.Fatalf("command %q", command)
	}
	if volCM != cmName || cmName == "" {
		t.Errorf("the DaemonSet mounts ConfigMap %q, the manifest has %q", volCM, cmName)
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$(NODE_NAME)", "node-1")
	}
	checkAgentArgs(t, args, path.Join(mount, "peers"))
	if got, err := watch.ParsePeers([]byte(peers), 19515); err != nil || len(got) == 0 {
		t.Errorf("the ConfigMap's peers: %q, %v", got, err)
	}
}

// TestAgentSystemdUnit: the unit's ExecStart runs `rdmabench agent` with
// flags it takes.
func TestAgentSystemdUnit(t *testing.T) {
	f, err := os.Open("../../deploy/systemd/rdmabench-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exec []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "ExecStart="); ok {
			exec = strings.Fields(v)
		}
	}
	if len(exec) < 2 || path.Base(exec[0]) != "rdmabench" || exec[1] != "agent" {
		t.Fatalf("ExecStart %q", exec)
	}
	var args []string
	for _, a := range exec[2:] {
		if !strings.HasPrefix(a, "$") { // the options of /etc/default/rdmabench-agent
			args = append(args, a)
		}
	}
	checkAgentArgs(t, args, "/etc/rdmabench/peers")
}

// checkAgentArgs checks that the agent command takes args, with --peers
// wantPeers.
func checkAgentArgs(t *testing.T, args []string, wantPeers string) {
	t.Helper()
	cmd := newAgentCmd()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("rdmabench agent %q: %v", args, err)
	}
	if got, _ := cmd.Flags().GetString("peers"); got != wantPeers {
		t.Errorf("--peers %q, want %q", got, wantPeers)
	}
}
