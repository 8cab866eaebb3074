package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
	"gopkg.in/yaml.v3"
)

// k8sObject is what this test reads of the manifest's objects.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		// Service
		ClusterIP string            `yaml:"clusterIP"`
		Selector  map[string]string `yaml:"selector"`
		// Job
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				Subdomain  string `yaml:"subdomain"`
				Containers []struct {
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name      string `yaml:"name"`
						Value     string `yaml:"value"`
						ValueFrom any    `yaml:"valueFrom"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestKubernetesManifest checks the Indexed Job and headless Service of
// deploy/kubernetes, then runs this binary as the Job's pods would: one
// process per index, each with the container's command line and
// environment plus what Kubernetes sets in an Indexed Job's pod
// (JOB_COMPLETION_INDEX, HOSTNAME=<job>-<index>). Two things stand in for
// the cluster: the coordinator's DNS name (<job>-0.<service>) resolves to
// 127.0.0.1, and the links run the TCP tests (this host has no RDMA
// device): the rank, size and coordinator wiring is the manifest's own.
func TestKubernetesManifest(t *testing.T) {
	f, err := os.Open("../../deploy/kubernetes/rdmabench-mesh.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var svc, job *k8sObject
	dec := yaml.NewDecoder(f)
	for {
		var o k8sObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch o.Kind {
		case "Service":
			svc = &o
		case "Job":
			job = &o
		}
	}
	if svc == nil || job == nil {
		t.Fatal("the manifest needs a Service and a Job")
	}
	js := job.Spec
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("the Service is not headless: clusterIP %q", svc.Spec.ClusterIP)
	}
	for k, v := range svc.Spec.Selector {
		if js.Template.Metadata.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the Job's pods do not have", k, v)
		}
	}
	if js.CompletionMode != "Indexed" || js.Completions < 2 || js.Parallelism != js.Completions {
		t.Fatalf("the Job: completionMode %q, completions %d, parallelism %d: want Indexed, every rank at once",
			js.CompletionMode, js.Completions, js.Parallelism)
	}
	if js.Template.Spec.Subdomain != svc.Metadata.Name {
		t.Errorf("the pods' subdomain %q is not the Service %q: pod 0 has no DNS name", js.Template.Spec.Subdomain, svc.Metadata.Name)
	}
	if len(js.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers", len(js.Template.Spec.Containers))
	}
	c := js.Template.Spec.Containers[0]
	if len(c.Command) < 2 || filepath.Base(c.Command[0]) != "rdmabench" || c.Command[1] != "mesh" {
		t.Fatalf("command %q: want rdmabench mesh", c.Command)
	}
	n := js.Completions
	args := append(slices.Clone(c.Command[1:]), c.Args...)
	coordHost := job.Metadata.Name + "-0." + svc.Metadata.Name
	sawRanks, sawCoord := false, false
	for i, a := range args {
		switch {
		case a == "--ranks="+strconv.Itoa(n):
			sawRanks = true
		case strings.HasPrefix(a, "--ranks"):
			t.Errorf("%s, but the Job has %d completions", a, n)
		case strings.HasPrefix(a, "--coordinator="+coordHost+":"):
			sawCoord = true
			args[i] = strings.Replace(a, coordHost, "127.0.0.1", 1) // the cluster's DNS
		case strings.HasPrefix(a, "--coordinator"):
			t.Errorf("%s: rank 0 is pod %s-0 of the Service %s: %s", a, job.Metadata.Name, svc.Metadata.Name, coordHost)
		}
	}
	if !sawRanks || !sawCoord {
		t.Fatalf("args %q: want --ranks=%d and --coordinator=%s:PORT", c.Args, n, coordHost)
	}
	// Two ports in use on this host: another coordinator port.
	for i, a := range args {
		if strings.HasPrefix(a, "--coordinator=") {
			args[i] = "--coordinator=127.0.0.1:" + strconv.Itoa(freeTCPPort(t))
		}
	}
	// Gates and blame judge timings, which this host's loopback does not
	// stand for.
	args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "--outlier") })
	args = append(args, "--blame=false", "tcp-lat", "tcp-bw", "-n", "50", "-o", "json")

	env := os.Environ()
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.Name == EnvToken:
			env = append(env, e.Name+"=from-the-secret")
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		}
	}
	type rank struct {
		stdout, stderr bytes.Buffer
		code           int
	}
	ranks := make([]rank, n)
	var wg sync.WaitGroup
	for i := range n {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(slices.Clone(env), "RDMABENCH_TEST_AS_MAIN=1",
			"JOB_COMPLETION_INDEX="+strconv.Itoa(i), "HOSTNAME="+job.Metadata.Name+"-"+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = &ranks[i].stdout, &ranks[i].stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				ranks[i].code = ee.ExitCode()
			}
		}()
	}
	wg.Wait()
	for i, r := range ranks {
		if r.code != 0 {
			t.Errorf("pod %d exited %d: %s", i, r.code, r.stderr.String())
		}
		if i > 0 && r.stdout.Len() > 0 {
			t.Errorf("pod %d printed %q: only rank 0 prints the document", i, r.stdout.String())
		}
	}
	doc, err := report.ReadJSON(&ranks[0].stdout)
	if err != nil {
		t.Fatalf("rank 0's document: %v", err)
	}
	m := doc.Mesh
	if m == nil || m.Launcher != "kubernetes" || m.Size != n || len(m.Links) != n*(n-1) || len(m.FailedLinks()) != 0 {
		t.Fatalf("mesh %+v", m)
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return portOf(ln)
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func portOf(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }
