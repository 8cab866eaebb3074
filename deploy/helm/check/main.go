// Command check checks the manifests `helm template` renders of the
// rdmabench chart against the values they were rendered with: the kinds
// and names every toggle asks for and no more, each object decoded
// strictly into its Kubernetes API type (a misspelt field is an error),
// the Services selecting the pods, the agent's and the mesh's flags being
// the values' and parsing as rdmabench's own (RDMABENCH ARGS --help), and
// the PrometheusRule's groups being the repository's rules file (and
// passing `promtool check rules` when promtool is installed).
//
//	check -rdmabench BIN -rules RULES [-release NAME] [-f VALUES]... RENDERED
//
// The values are the chart's values.yaml, then each -f over them, as helm
// merges them. scripts/helm-check.sh runs it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var valueFiles multiFlag
	chart := flag.String("chart", "rdmabench", "the chart's folder (its values.yaml comes first)")
	rdmabench := flag.String("rdmabench", "", "the rdmabench binary, which parses the agent's and the mesh's flags")
	rules := flag.String("rules", "", "the repository's rules file, that the PrometheusRule must hold")
	release := flag.String("release", "release-name", "the release's name (helm template's default: release-name)")
	flag.Var(&valueFiles, "f", "a values file given to helm (repeatable, in helm's order)")
	flag.Parse()
	if flag.NArg() != 1 || *rdmabench == "" || *rules == "" {
		fmt.Fprintln(os.Stderr, "usage: check -rdmabench BIN -rules RULES [-chart DIR] [-release NAME] [-f VALUES]... RENDERED")
		os.Exit(2)
	}
	c := &checker{rdmabench: *rdmabench, rulesFile: *rules, release: *release}
	if err := c.run(*chart, valueFiles, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "check:", err)
		os.Exit(1)
	}
	if len(c.errs) > 0 {
		for _, e := range c.errs {
			fmt.Fprintf(os.Stderr, "check: %s: %s\n", flag.Arg(0), e)
		}
		os.Exit(1)
	}
	fmt.Printf("%s: %d objects (%s) as the values ask\n", flag.Arg(0), len(c.objects), strings.Join(c.kinds(), ", "))
}

type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	raw []byte // JSON
}

type checker struct {
	rdmabench, rulesFile string
	release              string
	v                    map[string]any
	objects              []object
	errs                 []string
}

func (c *checker) errorf(format string, a ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, a...))
}

func (c *checker) kinds() []string {
	var k []string
	for _, o := range c.objects {
		k = append(k, o.Kind+"/"+o.Metadata.Name)
	}
	return k
}

// val is the value at a dotted path of the values ("agent.rate"), nil
// when there is none.
func (c *checker) val(path string) any {
	var cur any = c.v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func (c *checker) str(path string) string {
	switch v := c.val(path).(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

func (c *checker) on(path string) bool { b, _ := c.val(path).(bool); return b }

func (c *checker) strs(path string) []string {
	var out []string
	l, _ := c.val(path).([]any)
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// readYAML reads a YAML file as JSON's types.
func readYAML(file string) (any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}

// merge merges over into base as helm merges values: maps key by key,
// anything else replaced.
func merge(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		bm, ok1 := out[k].(map[string]any)
		om, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = merge(bm, om)
		} else {
			out[k] = v
		}
	}
	return out
}

func (c *checker) run(chart string, valueFiles []string, rendered string) error {
	v, err := readYAML(filepath.Join(chart, "values.yaml"))
	if err != nil {
		return err
	}
	c.v, _ = v.(map[string]any)
	for _, f := range valueFiles {
		o, err := readYAML(f)
		if err != nil {
			return err
		}
		om, _ := o.(map[string]any)
		c.v = merge(c.v, om)
	}
	f, err := os.Open(rendered)
	if err != nil {
		return err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return err
		}
		if string(j) == "null" {
			continue // a document of comments only
		}
		var o object
		if err := json.Unmarshal(j, &o); err != nil {
			return err
		}
		o.raw = j
		c.objects = append(c.objects, o)
	}
	c.checkKinds()
	if c.on("agent.enabled") {
		c.checkAgent()
	}
	if c.on("metrics.prometheusRule.enabled") {
		c.checkRules()
	}
	if c.on("mesh.enabled") {
		c.checkMesh()
	}
	return nil
}

// fullname is the chart's objects' name, as its helper makes it.
func (c *checker) fullname() string {
	if s := c.str("fullnameOverride"); s != "" {
		return trunc(s, 52)
	}
	name := c.str("nameOverride")
	if name == "" {
		name = "rdmabench"
	}
	release := c.release
	if strings.Contains(release, name) {
		return trunc(release, 52)
	}
	return trunc(release+"-"+name, 52)
}

func trunc(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimSuffix(s, "-")
}

// checkKinds: exactly the objects the values ask for.
func (c *checker) checkKinds() {
	name := c.fullname()
	var want []string
	if c.on("agent.enabled") {
		want = append(want, "Service/"+name, "DaemonSet/"+name)
		if c.str("agent.peers.source") == "file" {
			want = append(want, "ConfigMap/"+name+"-peers")
		}
		if c.str("agent.token.existingSecret") == "" && c.str("agent.token.value") != "" {
			want = append(want, "Secret/"+name+"-token")
		}
		if c.on("metrics.serviceMonitor.enabled") {
			want = append(want, "ServiceMonitor/"+name)
		}
	}
	if c.on("metrics.prometheusRule.enabled") {
		want = append(want, "PrometheusRule/"+name)
	}
	if c.on("mesh.enabled") {
		want = append(want, "Service/"+name+"-mesh", "Job/"+name+"-mesh")
	}
	got := c.kinds()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		c.errorf("objects %q, want %q", got, want)
	}
	for _, o := range c.objects {
		if o.Metadata.Labels["app.kubernetes.io/instance"] == "" || o.Metadata.Labels["app.kubernetes.io/name"] == "" {
			c.errorf("%s/%s: no app.kubernetes.io/name and instance labels: %v", o.Kind, o.Metadata.Name, o.Metadata.Labels)
		}
	}
}

// get decodes the object kind/name strictly into into; false when there is
// none.
func (c *checker) get(kind, name string, into any) bool {
	for _, o := range c.objects {
		if o.Kind != kind || o.Metadata.Name != name {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(o.raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			c.errorf("%s/%s: %v", kind, name, err)
		}
		return true
	}
	return false
}

// partial decodes the objects of kind into into, the fields it names
// only: the Prometheus Operator's kinds, whose Go types this checker does
// not import.
func (c *checker) partial(kind string, into any) {
	for _, o := range c.objects {
		if o.Kind == kind {
			_ = json.Unmarshal(o.raw, into)
		}
	}
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// sameJSON: a and b marshal to the same JSON (a value of the values and
// a typed field).
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	if va == nil {
		va = map[string]any{}
	}
	if vb == nil {
		vb = map[string]any{}
	}
	if l, ok := va.([]any); ok && len(l) == 0 {
		va = map[string]any{}
	}
	if l, ok := vb.([]any); ok && len(l) == 0 {
		vb = map[string]any{}
	}
	return reflect.DeepEqual(va, vb)
}

// flagsOf maps the --name=value arguments of args by name; the others
// (positional arguments) are returned apart.
func flagsOf(args []string) (map[string]string, []string) {
	m := map[string]string{}
	var rest []string
	for _, a := range args {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok && strings.HasPrefix(a, "--") {
			m[k] = v
		} else {
			rest = append(rest, a)
		}
	}
	return m, rest
}

// parses: rdmabench COMMAND ARGS --help exits 0: every flag is the
// command's, with a value it takes.
func (c *checker) parses(command string, args []string) {
	cmd := exec.Command(c.rdmabench, append(append([]string{command}, args...), "--help")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.errorf("rdmabench %s %s: %v\n%s", command, strings.Join(args, " "), err, firstLines(out, 5))
	}
}

func firstLines(b []byte, n int) string {
	l := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(l[:min(n, len(l))], "\n")
}

// endsWith: the last arguments of args are tail.
func endsWith(args, tail []string) bool {
	return len(args) >= len(tail) && slices.Equal(args[len(args)-len(tail):], tail)
}

func (c *checker) checkPod(what string, spec corev1.PodSpec, prefix string, hostNetwork bool) *corev1.Container {
	if len(spec.Containers) != 1 {
		c.errorf("%s: %d containers, want 1", what, len(spec.Containers))
		return nil
	}
	ct := &spec.Containers[0]
	if want := c.str("image.repository") + ":" + c.str("image.tag"); ct.Image != want {
		c.errorf("%s: image %q, want %q", what, ct.Image, want)
	}
	if string(ct.ImagePullPolicy) != c.str("image.pullPolicy") {
		c.errorf("%s: imagePullPolicy %q, want %q", what, ct.ImagePullPolicy, c.str("image.pullPolicy"))
	}
	if spec.HostNetwork != hostNetwork || (hostNetwork && spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet) {
		c.errorf("%s: hostNetwork %v dnsPolicy %q, want hostNetwork %v (with ClusterFirstWithHostNet)", what, spec.HostNetwork, spec.DNSPolicy, hostNetwork)
	}
	if !sameJSON(c.val(prefix+".nodeSelector"), spec.NodeSelector) {
		c.errorf("%s: nodeSelector %v, want %v", what, spec.NodeSelector, c.val(prefix+".nodeSelector"))
	}
	if !sameJSON(c.val(prefix+".tolerations"), spec.Tolerations) {
		c.errorf("%s: tolerations %v, want %v", what, spec.Tolerations, c.val(prefix+".tolerations"))
	}
	if !sameJSON(c.val("imagePullSecrets"), spec.ImagePullSecrets) {
		c.errorf("%s: imagePullSecrets %v, want %v", what, spec.ImagePullSecrets, c.val("imagePullSecrets"))
	}
	res, _ := c.val("rdma.resources").(map[string]any)
	for k, v := range res {
		want := fmt.Sprint(v)
		lim, req := ct.Resources.Limits[corev1.ResourceName(k)], ct.Resources.Requests[corev1.ResourceName(k)]
		if lim.String() != want || req.String() != want {
			c.errorf("%s: resource %s: limit %s, request %s, want %s (rdma.resources)", what, k, lim.String(), req.String(), want)
		}
	}
	if c.on("rdma.hostDevices") {
		mounted := slices.ContainsFunc(ct.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.MountPath == "/dev/infiniband" && slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
				return v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == "/dev/infiniband"
			})
		})
		if !mounted {
			c.errorf("%s: rdma.hostDevices, but the host's /dev/infiniband is not mounted there", what)
		}
	}
	sc := ct.SecurityContext
	if c.on("rdma.privileged") {
		if sc == nil || sc.Privileged == nil || !*sc.Privileged {
			c.errorf("%s: rdma.privileged, but the container is not", what)
		}
	} else if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Add, "IPC_LOCK") {
		c.errorf("%s: no capability IPC_LOCK (registering memory)", what)
	}
	return ct
}

// tokenEnv checks the container's RDMABENCH_TOKEN: from secret (key), or
// none when secret is "".
func (c *checker) tokenEnv(what string, ct *corev1.Container, secret, key string) {
	var ref *corev1.SecretKeySelector
	for _, e := range ct.Env {
		if e.Name == "RDMABENCH_TOKEN" && e.ValueFrom != nil {
			ref = e.ValueFrom.SecretKeyRef
		}
	}
	switch {
	case secret == "" && ref != nil:
		c.errorf("%s: a token from %s, but the values give none", what, ref.Name)
	case secret != "" && (ref == nil || ref.Name != secret || ref.Key != key):
		c.errorf("%s: RDMABENCH_TOKEN from %+v, want the key %s of the Secret %s", what, ref, key, secret)
	}
}

func (c *checker) checkAgent() {
	name := c.fullname()
	var svc corev1.Service
	var ds appsv1.DaemonSet
	if !c.get("Service", name, &svc) || !c.get("DaemonSet", name, &ds) {
		return
	}
	pod := ds.Spec.Template
	if ds.Spec.Selector == nil || !subset(ds.Spec.Selector.MatchLabels, pod.Labels) {
		c.errorf("DaemonSet: its selector %v does not select its pods %v", ds.Spec.Selector, pod.Labels)
	}
	if svc.Spec.ClusterIP != "None" {
		c.errorf("Service %s: clusterIP %q, not headless", name, svc.Spec.ClusterIP)
	}
	if !subset(svc.Spec.Selector, pod.Labels) {
		c.errorf("Service %s selects %v, the agents' pods have %v", name, svc.Spec.Selector, pod.Labels)
	}
	for _, o := range c.objects { // nor the mesh's pods
		var job batchv1.Job
		if o.Kind == "Job" && c.get("Job", o.Metadata.Name, &job) && subset(svc.Spec.Selector, job.Spec.Template.Labels) {
			c.errorf("Service %s selects the pods of Job %s too", name, o.Metadata.Name)
		}
	}
	testsPort, _ := strconv.Atoi(c.str("agent.testsPort"))
	metricsPort, _ := strconv.Atoi(c.str("metrics.port"))
	ct := c.checkPod("DaemonSet", pod.Spec, "agent", c.on("agent.hostNetwork"))
	if ct == nil {
		return
	}
	ports := map[string]int32{}
	for _, p := range ct.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, p := range svc.Spec.Ports {
		want := map[string]int{"tests": testsPort, "metrics": metricsPort}[p.Name]
		if int(p.Port) != want || ports[p.TargetPort.String()] != int32(want) {
			c.errorf("Service %s: port %s %d to %s, want %d, the container's", name, p.Name, p.Port, p.TargetPort.String(), want)
		}
	}
	if len(svc.Spec.Ports) != 2 || ports["tests"] != int32(testsPort) || ports["metrics"] != int32(metricsPort) {
		c.errorf("ports: the Service's %v, the container's %v: want tests %d and metrics %d", svc.Spec.Ports, ports, testsPort, metricsPort)
	}
	if rp := ct.ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/metrics" || ports[rp.HTTPGet.Port.String()] != int32(metricsPort) {
		c.errorf("DaemonSet: the readiness probe %+v is not /metrics of the port metrics", rp)
	}
	if c.on("metrics.podAnnotations") && pod.Annotations["prometheus.io/port"] != strconv.Itoa(metricsPort) {
		c.errorf("DaemonSet: prometheus.io/port %q, want %d", pod.Annotations["prometheus.io/port"], metricsPort)
	}
	if !slices.Equal(ct.Command, []string{"rdmabench", "agent"}) {
		c.errorf("DaemonSet: command %q, want rdmabench agent", ct.Command)
	}
	nodeName := slices.ContainsFunc(ct.Env, func(e corev1.EnvVar) bool {
		return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
	})
	if !nodeName {
		c.errorf("DaemonSet: no NODE_NAME from spec.nodeName (its --host)")
	}
	args := slices.Clone(ct.Args)
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$(NODE_NAME)", "node-1")
	}
	c.parses("agent", args)
	flags, rest := flagsOf(args)
	if len(rest) > 0 {
		c.errorf("DaemonSet: arguments %q: the agent takes flags only", rest)
	}
	want := map[string]string{
		"listen":         ":" + strconv.Itoa(testsPort),
		"metrics-listen": ":" + strconv.Itoa(metricsPort),
		"host":           "node-1",
		"probe":          c.str("agent.probe"),
		"ib-dev":         c.str("agent.device"),
		"tclass":         c.str("agent.tclass"),
		"bw-probe":       c.str("agent.bwProbe"),
	}
	switch src := c.str("agent.peers.source"); src {
	case "dns":
		want["peers"] = "dns:" + name + ":" + strconv.Itoa(testsPort)
	case "srv":
		want["peers"] = "srv:_tests._tcp." + name
	case "file":
		want["peers"] = "/etc/rdmabench/peers"
		c.checkPeersFile(name, pod.Spec, ct)
	default:
		c.errorf("agent.peers.source %q", src)
	}
	for k, v := range want {
		if flags[k] != v {
			c.errorf("DaemonSet: --%s=%q, want %q", k, flags[k], v)
		}
	}
	if r, err := strconv.ParseFloat(flags["rate"], 64); err != nil || strconv.FormatFloat(r, 'f', -1, 64) != c.str("agent.rate") {
		c.errorf("DaemonSet: --rate=%q, want %s", flags["rate"], c.str("agent.rate"))
	}
	if extra := c.strs("agent.extraArgs"); !endsWith(ct.Args, extra) {
		c.errorf("DaemonSet: args %q do not end with agent.extraArgs %q", ct.Args, extra)
	}
	secret, key := c.str("agent.token.existingSecret"), c.str("agent.token.secretKey")
	if secret == "" && c.str("agent.token.value") != "" {
		secret = name + "-token"
		var s corev1.Secret
		if c.get("Secret", secret, &s) {
			if got := string(s.Data[key]); got != c.str("agent.token.value") {
				c.errorf("Secret %s: %s is %q, want agent.token.value", secret, key, got)
			}
		}
	}
	c.tokenEnv("DaemonSet", ct, secret, key)
	if c.on("metrics.serviceMonitor.enabled") {
		c.checkServiceMonitor(name, svc)
	}
}

func (c *checker) checkPeersFile(name string, spec corev1.PodSpec, ct *corev1.Container) {
	var cm corev1.ConfigMap
	if !c.get("ConfigMap", name+"-peers", &cm) {
		return
	}
	got := strings.Split(strings.TrimSuffix(cm.Data["peers"], "\n"), "\n")
	if want := c.strs("agent.peers.hosts"); !slices.Equal(got, want) {
		c.errorf("ConfigMap %s-peers: peers %q, want agent.peers.hosts %q", name, got, want)
	}
	mounted := slices.ContainsFunc(ct.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.MountPath == "/etc/rdmabench" && slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool {
			return v.Name == m.Name && v.ConfigMap != nil && v.ConfigMap.Name == cm.Name
		})
	})
	if !mounted {
		c.errorf("DaemonSet: the ConfigMap %s is not mounted at /etc/rdmabench (--peers /etc/rdmabench/peers)", cm.Name)
	}
}

func (c *checker) checkServiceMonitor(name string, svc corev1.Service) {
	var sm struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct {
				Port     string `json:"port"`
				Path     string `json:"path"`
				Interval string `json:"interval"`
			} `json:"endpoints"`
		} `json:"spec"`
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	c.partial("ServiceMonitor", &sm)
	if sm.APIVersion != "monitoring.coreos.com/v1" {
		c.errorf("ServiceMonitor: apiVersion %q", sm.APIVersion)
	}
	if !subset(sm.Spec.Selector.MatchLabels, svc.Labels) {
		c.errorf("ServiceMonitor selects %v, the Service %s has %v", sm.Spec.Selector.MatchLabels, name, svc.Labels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" || sm.Spec.Endpoints[0].Path != "/metrics" ||
		sm.Spec.Endpoints[0].Interval != c.str("metrics.serviceMonitor.interval") {
		c.errorf("ServiceMonitor: endpoints %+v, want the port metrics, /metrics, every %s", sm.Spec.Endpoints, c.str("metrics.serviceMonitor.interval"))
	}
	labels, _ := c.val("metrics.serviceMonitor.labels").(map[string]any)
	for k, v := range labels {
		if sm.Metadata.Labels[k] != fmt.Sprint(v) {
			c.errorf("ServiceMonitor: label %s=%q, want %q", k, sm.Metadata.Labels[k], v)
		}
	}
}

// checkRules: the PrometheusRule's groups are the rules file's, and
// promtool (when installed) checks them.
func (c *checker) checkRules() {
	var pr struct {
		APIVersion string `json:"apiVersion"`
		Spec       struct {
			Groups any `json:"groups"`
		} `json:"spec"`
	}
	c.partial("PrometheusRule", &pr)
	if pr.APIVersion != "monitoring.coreos.com/v1" {
		c.errorf("PrometheusRule: apiVersion %q", pr.APIVersion)
	}
	file, err := readYAML(c.rulesFile)
	if err != nil {
		c.errorf("%v", err)
		return
	}
	want := file.(map[string]any)["groups"]
	if want == nil || !reflect.DeepEqual(pr.Spec.Groups, want) {
		c.errorf("PrometheusRule: its groups are not those of %s", c.rulesFile)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		fmt.Fprintln(os.Stderr, "check: promtool not installed: the PrometheusRule's groups are not checked by it")
		return
	}
	b, _ := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	dir, err := os.MkdirTemp("", "rdmabench-rules")
	if err != nil {
		c.errorf("%v", err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "prometheusrule.yml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		c.errorf("%v", err)
		return
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		c.errorf("promtool check rules of the PrometheusRule's groups: %v\n%s", err, out)
	}
}

func (c *checker) checkMesh() {
	name := c.fullname() + "-mesh"
	var svc corev1.Service
	var job batchv1.Job
	if !c.get("Service", name, &svc) || !c.get("Job", name, &job) {
		return
	}
	ranks, _ := strconv.Atoi(c.str("mesh.ranks"))
	js := job.Spec
	if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion ||
		js.Completions == nil || int(*js.Completions) != ranks || js.Parallelism == nil || int(*js.Parallelism) != ranks {
		c.errorf("Job: completionMode %v, completions %v, parallelism %v: want Indexed, %d at once", js.CompletionMode, js.Completions, js.Parallelism, ranks)
	}
	if js.BackoffLimit == nil || *js.BackoffLimit != 0 {
		c.errorf("Job: backoffLimit %v, want 0 (a failed rank fails the run)", js.BackoffLimit)
	}
	if svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		c.errorf("Service %s: clusterIP %q, publishNotReadyAddresses %v: want headless, every pod published", name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	if !subset(svc.Spec.Selector, js.Template.Labels) {
		c.errorf("Service %s selects %v, the mesh's pods have %v", name, svc.Spec.Selector, js.Template.Labels)
	}
	if js.Template.Spec.Subdomain != svc.Name {
		c.errorf("Job: subdomain %q, want the Service %s: rank 0 has no DNS name", js.Template.Spec.Subdomain, svc.Name)
	}
	if last := fmt.Sprintf("%s-%d", job.Name, ranks-1); len(last) > 63 {
		c.errorf("Job: the hostname of its last pod %s is over 63 characters", last)
	}
	ct := c.checkPod("Job", js.Template.Spec, "mesh", c.on("mesh.hostNetwork"))
	if ct == nil {
		return
	}
	if !slices.Equal(ct.Command, []string{"rdmabench", "mesh"}) {
		c.errorf("Job: command %q, want rdmabench mesh", ct.Command)
	}
	c.parses("mesh", ct.Args)
	flags, _ := flagsOf(ct.Args)
	port := c.str("mesh.coordinatorPort")
	if flags["ranks"] != strconv.Itoa(ranks) || flags["coordinator"] != job.Name+"-0."+svc.Name+":"+port {
		c.errorf("Job: --ranks=%s --coordinator=%s, want --ranks=%d --coordinator=%s-0.%s:%s", flags["ranks"], flags["coordinator"], ranks, job.Name, svc.Name, port)
	}
	if len(svc.Spec.Ports) != 1 || strconv.Itoa(int(svc.Spec.Ports[0].Port)) != port {
		c.errorf("Service %s: ports %v, want the coordinator's %s", name, svc.Spec.Ports, port)
	}
	if tail := c.strs("mesh.args"); !endsWith(ct.Args, tail) {
		c.errorf("Job: args %q do not end with mesh.args %q", ct.Args, tail)
	}
	c.tokenEnv("Job", ct, c.str("mesh.token.existingSecret"), c.str("mesh.token.secretKey"))
}
