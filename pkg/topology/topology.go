// Package topology reads the operator's description of a fabric: Slurm's
// topology.conf, the file the tree topology plugin (TopologyPlugin=
// topology/tree) reads, one switch a line:
//
//	# leaves, each with its nodes
//	SwitchName=leaf1 Nodes=node[01-16,20] LinkSpeed=400
//	SwitchName=leaf2 Nodes=node[17-19,21-32]
//	# the spine over them
//	SwitchName=spine Switches=leaf[1-2]
//
// Keys are case-insensitive; Nodes and Switches take Slurm host lists; a
// '#' starts a comment; a line ending in '\' goes on on the next. A file
// that does not parse is refused with the line named (ParseError). The
// switches form trees: a node under one leaf, a switch under at most one
// other.
package topology

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Switch is one line of the file.
type Switch struct {
	Name string
	// Parent is the switch whose Switches list it, "" for a top switch.
	Parent string
	// Nodes are the hosts attached to it, Switches the switches under it,
	// as their host lists expand.
	Nodes, Switches []string
	// LinkSpeed is as written (Slurm does not read it either).
	LinkSpeed string
	// Line is the line of the file it is on.
	Line int
}

// Topology is a parsed file.
type Topology struct {
	// File names it in messages.
	File     string
	Switches []Switch
	byName   map[string]int
	leafOf   map[string]int // node -> its switch
}

// ParseError is a line of the file that does not parse.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// ParseFile reads and parses the file at path.
func ParseFile(path string) (*Topology, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// maxLine bounds a line (continuations joined).
const maxLine = 1 << 20

// Parse parses a topology.conf read from r; name names it in errors.
func Parse(r io.Reader, name string) (*Topology, error) {
	t := &Topology{File: name, byName: map[string]int{}, leafOf: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	n, start := 0, 0
	var pending strings.Builder
	fail := func(line int, format string, args ...any) error {
		return &ParseError{File: name, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	for sc.Scan() {
		n++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		if pending.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(text, " \t\r"), `\`); ok {
			pending.WriteString(s + " ")
			continue
		}
		pending.WriteString(text)
		line := strings.TrimSpace(pending.String())
		pending.Reset()
		if line == "" {
			continue
		}
		sw, err := parseLine(line)
		if err != nil {
			return nil, fail(start, "%v", err)
		}
		sw.Line = start
		if k, dup := t.byName[sw.Name]; dup {
			return nil, fail(start, "switch %s is already defined on line %d", sw.Name, t.Switches[k].Line)
		}
		t.byName[sw.Name] = len(t.Switches)
		t.Switches = append(t.Switches, sw)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fail(n+1, "a line longer than %d bytes", maxLine)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if pending.Len() > 0 {
		return nil, fail(start, "the file ends in a continued line ('\\')")
	}
	if len(t.Switches) == 0 {
		return nil, fail(max(n, 1), "no switch: want lines such as SwitchName=leaf1 Nodes=node[01-16]")
	}
	// The tree: parents, nodes' leaves.
	for i := range t.Switches {
		s := &t.Switches[i]
		for _, c := range s.Switches {
			k, ok := t.byName[c]
			switch {
			case !ok:
				return nil, fail(s.Line, "switch %s lists switch %s, which no line defines", s.Name, c)
			case k == i:
				return nil, fail(s.Line, "switch %s lists itself", s.Name)
			case t.Switches[k].Parent != "":
				return nil, fail(s.Line, "switch %s is under %s (line %d) and %s: a switch has one parent",
					c, t.Switches[k].Parent, t.Switches[t.byName[t.Switches[k].Parent]].Line, s.Name)
			}
			t.Switches[k].Parent = s.Name
		}
		for _, node := range s.Nodes {
			if k, dup := t.leafOf[node]; dup && k != i {
				return nil, fail(s.Line, "node %s is under %s (line %d) and %s: a node has one switch",
					node, t.Switches[k].Name, t.Switches[k].Line, s.Name)
			}
			t.leafOf[node] = i
		}
	}
	for i := range t.Switches {
		seen := map[int]bool{}
		for k := i; k >= 0; k = t.parent(k) {
			if seen[k] {
				return nil, fail(t.Switches[i].Line, "switch %s is under itself (a loop of Switches=)", t.Switches[i].Name)
			}
			seen[k] = true
		}
	}
	return t, nil
}

// parseLine parses one line: KEY=VALUE words.
func parseLine(line string) (Switch, error) {
	var sw Switch
	seen := map[string]bool{}
	for _, word := range strings.Fields(line) {
		k, v, ok := strings.Cut(word, "=")
		if !ok {
			return sw, fmt.Errorf("%q is not KEY=VALUE", word)
		}
		key := strings.ToLower(k)
		if seen[key] {
			return sw, fmt.Errorf("%s is given twice", k)
		}
		seen[key] = true
		if v == "" {
			return sw, fmt.Errorf("%s= has no value", k)
		}
		switch key {
		case "switchname":
			if strings.ContainsAny(v, "[],") {
				return sw, fmt.Errorf("SwitchName=%s: one switch a line", v)
			}
			sw.Name = v
		case "nodes", "switches":
			list, err := ExpandHostlist(v)
			if err != nil {
				return sw, fmt.Errorf("%s=%s: %w", k, v, err)
			}
			if key == "nodes" {
				sw.Nodes = list
			} else {
				sw.Switches = list
			}
		case "linkspeed":
			sw.LinkSpeed = v
		default:
			return sw, fmt.Errorf("unknown key %s (want SwitchName, Nodes, Switches, LinkSpeed)", k)
		}
	}
	if sw.Name == "" {
		return sw, errors.New("no SwitchName=")
	}
	return sw, nil
}

func (t *Topology) parent(k int) int {
	if p := t.Switches[k].Parent; p != "" {
		return t.byName[p]
	}
	return -1
}

// Leaf is the switch a host is attached to: the node named host, else
// the one named its short name (host up to its first '.').
func (t *Topology) Leaf(host string) (string, bool) {
	k, ok := t.leafOf[host]
	if !ok {
		if short, _, cut := strings.Cut(host, "."); cut {
			k, ok = t.leafOf[short]
		}
	}
	if !ok {
		return "", false
	}
	return t.Switches[k].Name, true
}

// Up is a host's switches from its leaf to its top switch; nil for a host
// the file does not list.
func (t *Topology) Up(host string) []string {
	leaf, ok := t.Leaf(host)
	if !ok {
		return nil
	}
	var out []string
	for k := t.byName[leaf]; k >= 0; k = t.parent(k) {
		out = append(out, t.Switches[k].Name)
	}
	return out
}

// Path is the switches a link between hosts a and b crosses: up from a's
// leaf to the lowest switch over both, then down to b's ([leaf1 spine
// leaf2]; [leaf1] for two hosts of one leaf, or one host). Hosts of two
// separate trees cross the top switches of both. Nil when the file does
// not list one of them.
func (t *Topology) Path(a, b string) []string {
	ua, ub := t.Up(a), t.Up(b)
	if ua == nil || ub == nil {
		return nil
	}
	// The common tail of the two chains is the switches over both.
	i, j := len(ua), len(ub)
	for i > 0 && j > 0 && ua[i-1] == ub[j-1] {
		i, j = i-1, j-1
	}
	if i < len(ua) {
		i++ // the lowest common switch, once
	}
	out := slices.Clone(ua[:i])
	for k := j - 1; k >= 0; k-- {
		out = append(out, ub[k])
	}
	return out
}

// Missing are the hosts of hosts the file does not list, each once, in
// order.
func (t *Topology) Missing(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		if _, ok := t.Leaf(h); !ok && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// Nodes counts the nodes the file lists.
func (t *Topology) Nodes() int { return len(t.leafOf) }

// Sorted are the switches by name, for output that does not depend on
// the file's order.
func (t *Topology) Sorted() []Switch {
	s := slices.Clone(t.Switches)
	slices.SortFunc(s, func(a, b Switch) int { return cmp.Compare(a.Name, b.Name) })
	return s
}
