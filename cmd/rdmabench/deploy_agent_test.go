package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/watch"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// TestAgentDaemonSet: the DaemonSet of deploy/kubernetes runs `rdmabench
// agent` with flags it takes, its --peers is dns: with the name of the
// headless Service of the manifest, which selects the DaemonSet's pods,
// and the port it names is the Service's and the one the agents serve
// tests on.
func TestAgentDaemonSet(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/rdmabench-agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var svcName, clusterIP string
	var svcSelector map[string]any
	var podLabels map[string]string
	var svcPorts []int
	var args, command []string
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
			} `yaml:"metadata"`
			Spec struct {
				ClusterIP string         `yaml:"clusterIP"`
				Selector  map[string]any `yaml:"selector"` // a Service's labels; a DaemonSet's matchLabels
				Ports     []struct {
					Port int `yaml:"port"`
				} `yaml:"ports"`
				Template struct {
					Metadata struct {
						Labels map[string]string `yaml:"labels"`
					} `yaml:"metadata"`
					Spec struct {
						Containers []struct {
							Command []string `yaml:"command"`
							Args    []string `yaml:"args"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&o); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		switch o.Kind {
		case "Service":
			svcName, clusterIP, svcSelector = o.Metadata.Name, o.Spec.ClusterIP, o.Spec.Selector
			for _, p := range o.Spec.Ports {
				svcPorts = append(svcPorts, p.Port)
			}
		case "DaemonSet":
			ps := o.Spec.Template.Spec
			if len(ps.Containers) != 1 {
				t.Fatalf("%d containers", len(ps.Containers))
			}
			command, args = ps.Containers[0].Command, ps.Containers[0].Args
			podLabels = o.Spec.Template.Metadata.Labels
		}
	}
	if strings.Join(command, " ") != "rdmabench agent" {
		t.Fatalf("command %q", command)
	}
	if clusterIP != "None" {
		t.Errorf("the Service %q has clusterIP %q: not headless", svcName, clusterIP)
	}
	for k, v := range svcSelector {
		if s, ok := v.(string); !ok || podLabels[k] != s {
			t.Errorf("the Service selects %s=%s, the DaemonSet's pods have %q", k, v, podLabels)
		}
	}
	if len(svcSelector) == 0 {
		t.Error("the Service selects no pods")
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$(NODE_NAME)", "node-1")
	}
	cmd := checkAgentArgs(t, args)
	peers, _ := cmd.Flags().GetString("peers")
	spec, ok := strings.CutPrefix(peers, watch.PeersDNSPrefix)
	if !ok {
		t.Fatalf("--peers %q: want dns:NAME[:PORT]", peers)
	}
	name, port, err := watch.ParsePeersDNS(spec, 19515)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(name, "."); first != svcName {
		t.Errorf("--peers names %q, the Service is %q", name, svcName)
	}
	listen, _ := cmd.Flags().GetString("listen")
	if !slices.Contains(svcPorts, port) || !strings.HasSuffix(listen, ":"+strconv.Itoa(port)) {
		t.Errorf("--peers port %d: the Service's ports are %v, the agents listen on %q", port, svcPorts, listen)
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
	cmd := checkAgentArgs(t, args)
	if got, _ := cmd.Flags().GetString("peers"); got != "/etc/rdmabench/peers" {
		t.Errorf("--peers %q, want /etc/rdmabench/peers", got)
	}
}

// checkAgentArgs checks that the agent command takes args, and returns
// it with them parsed.
func checkAgentArgs(t *testing.T, args []string) *cobra.Command {
	t.Helper()
	cmd := newAgentCmd()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("rdmabench agent %q: %v", args, err)
	}
	return cmd
}
