package topology

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

const good = `# two leaves under a spine
SwitchName=leaf1 Nodes=node[01-03,07] LinkSpeed=400
switchname=leaf2 nodes=node[04-06],gpu-a   # a comment after the line
SwitchName=leaf3 \
    Nodes=rack2-n[1-2]
SwitchName=spine Switches=leaf[1-2]
SwitchName=top Switches=spine,leaf3
`

func TestParseGood(t *testing.T) {
	topo, err := Parse(strings.NewReader(good), "topology.conf")
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Switches) != 5 || topo.Nodes() != 10 {
		t.Fatalf("%d switches, %d nodes: %+v", len(topo.Switches), topo.Nodes(), topo.Switches)
	}
	l1 := topo.Switches[0]
	if l1.Name != "leaf1" || l1.Parent != "spine" || l1.LinkSpeed != "400" || l1.Line != 2 ||
		!slices.Equal(l1.Nodes, []string{"node01", "node02", "node03", "node07"}) {
		t.Errorf("leaf1: %+v", l1)
	}
	if l3 := topo.Switches[2]; l3.Line != 4 || l3.Parent != "top" || !slices.Equal(l3.Nodes, []string{"rack2-n1", "rack2-n2"}) {
		t.Errorf("leaf3 (a continued line): %+v", l3)
	}
	for _, c := range []struct {
		a, b string
		want []string
	}{
		{"node01", "node02", []string{"leaf1"}},
		{"node01", "node01", []string{"leaf1"}},
		{"node01", "node05", []string{"leaf1", "spine", "leaf2"}},
		{"gpu-a", "node07", []string{"leaf2", "spine", "leaf1"}},
		{"node01", "rack2-n2", []string{"leaf1", "spine", "top", "leaf3"}},
		{"rack2-n1", "node04", []string{"leaf3", "top", "spine", "leaf2"}},
		{"node02.cluster.example", "node04", []string{"leaf1", "spine", "leaf2"}}, // a host's short name
		{"node01", "node99", nil},
	} {
		if got := topo.Path(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("Path(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if got := topo.Up("node04"); !slices.Equal(got, []string{"leaf2", "spine", "top"}) {
		t.Errorf("Up(node04) = %v", got)
	}
	if got := topo.Missing([]string{"node01", "nodeX", "node05", "nodeX", "nodeY"}); !slices.Equal(got, []string{"nodeX", "nodeY"}) {
		t.Errorf("Missing = %v", got)
	}
}

// Two top switches: hosts of the two trees cross both.
func TestParseForest(t *testing.T) {
	topo, err := Parse(strings.NewReader("SwitchName=a Nodes=x\nSwitchName=b Nodes=y\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.Path("x", "y"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Path = %v", got)
	}
}

// Each bad line is refused, naming its line.
func TestParseBad(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"empty", "# nothing\n\n", 2, "no switch"},
		{"no =", "SwitchName=a Nodes=n1\nSwitchName=b nodes\n", 2, `"nodes" is not KEY=VALUE`},
		{"unknown key", "SwitchName=a Nodes=n1\n\nSwitchName=b Nodez=n2\n", 3, "unknown key Nodez"},
		{"no name", "Nodes=n[1-2]\n", 1, "no SwitchName="},
		{"empty value", "SwitchName=a Nodes=\n", 1, "Nodes= has no value"},
		{"twice", "SwitchName=a Nodes=n1 nodes=n2\n", 1, "nodes is given twice"},
		{"bad range", "SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n[5-3]\n", 2, `bad range "5-3"`},
		{"unbalanced", "SwitchName=a Nodes=n[1-2\n", 1, "unbalanced ["},
		{"a name list", "SwitchName=leaf[1-2] Nodes=n1\n", 1, "one switch a line"},
		{"duplicate", "SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n", 2, "switch a is already defined on line 1"},
		{"undefined switch", "SwitchName=a Nodes=n1\nSwitchName=s Switches=a,b\n", 2, "lists switch b, which no line defines"},
		{"two parents", "SwitchName=a Nodes=n1\nSwitchName=s Switches=a\nSwitchName=t Switches=a\n", 3, "switch a is under s (line 2) and t"},
		{"node twice", "SwitchName=a Nodes=n[1-3]\nSwitchName=b Nodes=n3\n", 2, "node n3 is under a (line 1) and b"},
		{"itself", "SwitchName=a Switches=a\n", 1, "lists itself"},
		{"loop", "SwitchName=a Switches=b\nSwitchName=b Switches=a\n", 1, "under itself"},
		{"continued at the end", "SwitchName=a Nodes=n1 \\\n", 1, "ends in a continued line"},
	} {
		_, err := Parse(strings.NewReader(c.text), "topology.conf")
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != c.line || !strings.Contains(err.Error(), c.want) ||
			!strings.HasPrefix(err.Error(), "topology.conf:") {
			t.Errorf("%s: %v; want line %d naming %q", c.name, err, c.line, c.want)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"node[01-03,07]", []string{"node01", "node02", "node03", "node07"}},
		{"a,b[1-2]", []string{"a", "b1", "b2"}},
		{"r[1-2]-n[8-9]", []string{"r1-n8", "r1-n9", "r2-n8", "r2-n9"}},
		{"n[9-11]", []string{"n9", "n10", "n11"}},
		{"n[009-011]", []string{"n009", "n010", "n011"}},
	} {
		got, err := ExpandHostlist(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"n[1-", "n]", "n[a-b]", "n[3-1]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
