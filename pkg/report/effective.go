package report

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/settings"
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
// have; a setting of pkg/settings' table is named as the table names it. Inline (whether one size went inline) is left out: it differs by
// size, and [SettingsLine] says it once for a test.
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
	num(settings.TxDepth.Label(), e.TxDepth, "")
	num(settings.RxDepth.Label(), e.RxDepth, "")
	num(settings.CQMod.Label(), e.CQMod, "")
	num(settings.PostList.Label(), e.PostList, "")
	num(settings.Threads.Label(), e.Threads, "")
	if e.RateLimitGbps > 0 {
		out = append(out, setting{settings.RateLimit.Label(), strconv.FormatFloat(e.RateLimitGbps, 'g', 4, 64) + " Gbit/s " + cmp.Or(e.RateLimiter, "sw")})
	}
	num("inline-max", e.InlineMax, " B")
	num("path-mtu", e.PathMTU, " B")
	num("max-rd-atomic", e.MaxRdAtomic, "")
	flag(settings.Events.Label(), e.Events)
	flag("reverse (the server initiated)", e.Reverse)
	if c := e.RDMACM; c != nil {
		out = append(out, setting{"rdma_cm", fmt.Sprintf("%s, gid-index %d", c.PortSpace, c.GIDIndex)})
	}
	if e.LinkGbps > 0 {
		out = append(out, setting{"link", strconv.FormatFloat(e.LinkGbps, 'f', -1, 64) + " Gbit/s"})
	}
	if e.AtomicType != "" {
		out = append(out, setting{settings.AtomicType.Label(), e.AtomicType})
	}
	flag(settings.CheckData.Label(), e.CheckData)
	if m := e.Memory; m != nil && (m.Kind != MemHost || m.ODP || m.Registration != RegMR) {
		// Host pages registered with ibv_reg_mr are the default, left out.
		out = append(out, setting{settings.Mem.Label(), m.Text()})
	}
	num("connections", e.Connections, "")
	flag("TCP_NODELAY", e.NoDelay)
	num("SO_SNDBUF", e.SendBuf, " B")
	num("SO_RCVBUF", e.RecvBuf, " B")
	if e.IPTOS != nil && *e.IPTOS != 0 {
		out = append(out, setting{"IP_TOS", settings.DSName(*e.IPTOS)})
	}
	if av := e.AV; av != nil {
		// Only what differs from the defaults.
		for _, v := range av.Shown() {
			out = append(out, setting{v[0], v[1]})
		}
	}
	return out
}

// diffSettings are e's settings as a comparison of two results of one
// size weighs them: [Effective.settings], then what the "ran with" line
// of a table leaves out or says otherwise: whether the payload went
// inline, the QPs' ACK timeout, and the server's memory.
func (e *Effective) diffSettings() []setting {
	out := e.settings()
	if e == nil {
		return out
	}
	if e.Inline {
		out = append(out, setting{name: "payload inline"})
	}
	if e.QPTimeout != 0 {
		out = append(out, setting{settings.QPTimeout.Label(), strconv.Itoa(e.QPTimeout)})
	}
	if m := e.ServerMemory; m != nil && (m.Kind != MemHost || m.ODP || m.Registration != RegMR) {
		out = append(out, setting{"server mem", m.Text()})
	}
	return out
}

// SettingsDiff lists how the effective values of base and new differ, as a
// comparison notes them: "tx-depth base 128, new 64".
func SettingsDiff(base, new *Effective) []string {
	index := func(ss []setting) map[string]string {
		m := map[string]string{}
		for _, s := range ss {
			m[s.name] = cmp.Or(s.value, "on")
		}
		return m
	}
	bs, ns := base.diffSettings(), new.diffSettings()
	bm, nm := index(bs), index(ns)
	var out []string
	seen := map[string]bool{}
	for _, s := range append(bs, ns...) {
		if seen[s.name] {
			continue
		}
		seen[s.name] = true
		if b, n := bm[s.name], nm[s.name]; b != n {
			out = append(out, fmt.Sprintf("%s base %s, new %s", s.name, cmp.Or(b, "-"), cmp.Or(n, "-")))
		}
	}
	return out
}

// SettingsLine describes what the results of one test (connection and run)
// ran with: each setting once, or per size where sizes differ (cq-mod 100
// up to 8 KiB, 1 above), the sizes that went inline, and the clock.
func SettingsLine(rs []*Result) string {
	type valued struct {
		value string
		sizes []int
	}
	var names []string
	values := map[string][]valued{}
	clock, placed := "", ""
	inlineUpTo := 0
	for _, r := range rs {
		if clock == "" {
			clock = r.Clock
		}
		if placed == "" {
			placed = r.Placement.Text()
		}
		if r.Effective == nil {
			continue
		}
		if r.Effective.Inline {
			inlineUpTo = max(inlineUpTo, r.Size)
		}
		for _, st := range r.Effective.settings() {
			vs, seen := values[st.name]
			if !seen {
				names = append(names, st.name)
			}
			if n := len(vs); n > 0 && vs[n-1].value == st.value {
				vs[n-1].sizes = append(vs[n-1].sizes, r.Size)
			} else {
				vs = append(vs, valued{st.value, []int{r.Size}})
			}
			values[st.name] = vs
		}
	}
	var parts []string
	for _, name := range names {
		vs := values[name]
		if len(vs) == 1 {
			parts = append(parts, setting{name, vs[0].value}.String())
			continue
		}
		var per []string
		for _, v := range vs {
			per = append(per, fmt.Sprintf("%s at %s B", cmp.Or(v.value, "on"), sizeRange(v.sizes)))
		}
		parts = append(parts, name+" "+strings.Join(per, ", "))
	}
	if inlineUpTo > 0 {
		parts = append(parts, fmt.Sprintf("payload inline up to %d B", inlineUpTo))
	}
	if clock != "" {
		parts = append(parts, "clock "+clock)
	}
	if placed != "" {
		parts = append(parts, placed)
	}
	return strings.Join(parts, ", ")
}

// sizeRange writes sizes as "64" or "64..4096".
func sizeRange(sizes []int) string {
	if len(sizes) == 1 {
		return strconv.Itoa(sizes[0])
	}
	return strconv.Itoa(sizes[0]) + ".." + strconv.Itoa(sizes[len(sizes)-1])
}
