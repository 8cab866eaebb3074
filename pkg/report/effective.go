package report

import (
	"fmt"
	"strconv"
	"strings"
)

// setting is one effective value, named as the command line names it.
type setting struct{ name, value string }

func (s setting) String() string {
	if s.value == "" {
		return s.name
	}
	return s.name + " " + s.value
}

// settings lists e's values in a fixed order, leaving out those it does not
// have. Inline (whether one size went inline) is left out: it differs by
// size, and [settingsLine] says it once for a test.
func (e *Effective) settings() []setting {
	if e == nil {
		return nil
	}
	var out []setting
	num := func(name string, v int, unit string) {
		if v != 0 {
			out = append(out, setting{name, strconv.Itoa(v) + unit})
		}
	}
	flag := func(name string, on bool) {
		if on {
			out = append(out, setting{name: name})
		}
	}
	num("tx-depth", e.TxDepth, "")
	num("rx-depth", e.RxDepth, "")
	num("cq-mod", e.CQMod, "")
	num("post-list", e.PostList, "")
	num("inline-max", e.InlineMax, " B")
	num("path-mtu", e.PathMTU, " B")
	num("max-rd-atomic", e.MaxRdAtomic, "")
	flag("events", e.Events)
	if e.AtomicType != "" {
		out = append(out, setting{"atomic", e.AtomicType})
	}
	num("connections", e.Connections, "")
	flag("TCP_NODELAY", e.NoDelay)
	num("SO_SNDBUF", e.SendBuf, " B")
	num("SO_RCVBUF", e.RecvBuf, " B")
	return out
}

// settingsDiff lists how the effective values of base and new differ:
// "tx-depth base 128, new 64".
func settingsDiff(base, new *Effective) []string {
	index := func(ss []setting) map[string]string {
		m := map[string]string{}
		for _, s := range ss {
			m[s.name] = orDefault(s.value, "on")
		}
		return m
	}
	bs, ns := base.settings(), new.settings()
	bm, nm := index(bs), index(ns)
	var out []string
	seen := map[string]bool{}
	for _, s := range append(bs, ns...) {
		if seen[s.name] {
			continue
		}
		seen[s.name] = true
		if b, n := bm[s.name], nm[s.name]; b != n {
			out = append(out, fmt.Sprintf("%s base %s, new %s", s.name, orDefault(b, "-"), orDefault(n, "-")))
		}
	}
	return out
}

// settingsLine describes what the results of one test (connection and run)
// ran with: the effective values of the first of them, the sizes that went
// inline, and the clock.
func settingsLine(rs []*Result) string {
	var first *Effective
	clock := ""
	inlineUpTo := 0
	for _, r := range rs {
		if r.Effective != nil && first == nil {
			first = r.Effective
		}
		if clock == "" {
			clock = r.Clock
		}
		if r.Effective != nil && r.Effective.Inline {
			inlineUpTo = max(inlineUpTo, r.Size)
		}
	}
	var parts []string
	for _, s := range first.settings() {
		parts = append(parts, s.String())
	}
	if inlineUpTo > 0 {
		parts = append(parts, fmt.Sprintf("payload inline up to %d B", inlineUpTo))
	}
	if clock != "" {
		parts = append(parts, "clock "+clock)
	}
	return strings.Join(parts, ", ")
}
