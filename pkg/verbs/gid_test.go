package verbs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustGID(t *testing.T, s string) GID {
	t.Helper()
	g, err := ParseGID(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSelectGID(t *testing.T) {
	ll := func(i int, typ GIDType) GIDEntry {
		return GIDEntry{Index: i, GID: mustGID(t, "fe80::aff:fe00:1"), Type: typ}
	}
	v4 := func(i int, typ GIDType) GIDEntry {
		return GIDEntry{Index: i, GID: mustGID(t, "::ffff:10.0.0.1"), Type: typ}
	}
	global := func(i int, typ GIDType) GIDEntry {
		return GIDEntry{Index: i, GID: mustGID(t, "2001:db8::1"), Type: typ}
	}
	cases := []struct {
		name     string
		table    []GIDEntry
		link     LinkLayer
		explicit int
		want     int
		reason   string
	}{
		{"rxe default table", []GIDEntry{ll(0, GIDTypeRoCEv2), v4(1, GIDTypeRoCEv2)}, LinkEthernet, -1, 1, "IPv4-mapped"},
		{"mlx5 v1 and v2 pairs prefer v2", []GIDEntry{ll(0, GIDTypeRoCEv1), ll(1, GIDTypeRoCEv2), v4(2, GIDTypeRoCEv1), v4(3, GIDTypeRoCEv2)}, LinkEthernet, -1, 3, "RoCE v2"},
		{"IPv4-mapped v1 beats global v2", []GIDEntry{global(0, GIDTypeRoCEv2), v4(5, GIDTypeRoCEv1)}, LinkEthernet, -1, 5, "IPv4-mapped"},
		{"non-link-local beats link-local", []GIDEntry{ll(0, GIDTypeRoCEv2), global(1, GIDTypeRoCEv1)}, LinkEthernet, -1, 1, "not link-local"},
		{"only link-local", []GIDEntry{ll(0, GIDTypeRoCEv1), ll(1, GIDTypeRoCEv2)}, LinkEthernet, -1, 1, "link-local"},
		{"tie goes to the lowest index", []GIDEntry{v4(4, GIDTypeRoCEv2), v4(2, GIDTypeRoCEv2)}, LinkEthernet, -1, 2, "lowest"},
		{"InfiniBand uses index 0", []GIDEntry{{Index: 0, GID: mustGID(t, "fe80::1"), Type: GIDTypeIB}, {Index: 1, GID: mustGID(t, "2001:db8::2")}}, LinkInfiniBand, -1, 0, "InfiniBand"},
		{"explicit index overrides", []GIDEntry{ll(0, GIDTypeRoCEv2), v4(1, GIDTypeRoCEv2)}, LinkEthernet, 0, 0, "explicitly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := SelectGID(c.table, c.link, c.explicit)
			if err != nil {
				t.Fatal(err)
			}
			if got.Index != c.want || !strings.Contains(got.Reason, c.reason) {
				t.Fatalf("got index %d (%s), want %d with reason containing %q", got.Index, got.Reason, c.want, c.reason)
			}
			if got.Auto != (c.explicit < 0) {
				t.Fatalf("Auto = %v for explicit %d", got.Auto, c.explicit)
			}
		})
	}
}

func TestSelectGIDErrors(t *testing.T) {
	table := []GIDEntry{{Index: 0, GID: mustGID(t, "fe80::1"), Type: GIDTypeRoCEv2}, {Index: 3, GID: mustGID(t, "::ffff:1.2.3.4"), Type: GIDTypeRoCEv2}}
	_, err := SelectGID(table, LinkEthernet, 2)
	if !errors.Is(err, ErrNoGID) || !strings.Contains(err.Error(), "GID index 2 does not exist (valid indexes: 0, 3)") {
		t.Fatalf("missing index: %v", err)
	}
	_, err = SelectGID(nil, LinkEthernet, -1)
	if !errors.Is(err, ErrNoGID) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty table: %v", err)
	}
}

func TestGIDText(t *testing.T) {
	for _, s := range []string{"::ffff:10.0.0.1", "fe80::aff:fe00:1", "2001:db8::1"} {
		g := mustGID(t, s)
		if g.String() != s {
			t.Errorf("%s renders as %s", s, g)
		}
		var back GID
		b, _ := g.MarshalText()
		if err := back.UnmarshalText(b); err != nil || back != g {
			t.Errorf("%s: text round trip gave %s, %v", s, back, err)
		}
	}
	if g := mustGID(t, "10.0.0.1"); !g.IsIPv4Mapped() || g.String() != "::ffff:10.0.0.1" {
		t.Errorf("IPv4 input: %s", g)
	}
	if g := mustGID(t, "fe80::1"); !g.IsLinkLocal() || g.IsIPv4Mapped() {
		t.Error("fe80::1 must be link-local")
	}
	if _, err := ParseGID("not-a-gid"); err == nil {
		t.Error("ParseGID accepted garbage")
	}
	if got := mustGID(t, "fe80::1").Raw(); got != "fe80:0000:0000:0000:0000:0000:0000:0001" {
		t.Errorf("Raw = %s", got)
	}
}

// TestDeviceInfoJSON: `rdmabench devices -o json` output decodes back.
func TestDeviceInfoJSON(t *testing.T) {
	in := []DeviceInfo{{Name: "rxe0", Ports: []PortInfo{{Port: 1, State: PortActive, ActiveMTU: 1024, LinkLayer: LinkEthernet,
		GIDs: []GIDEntry{{Index: 1, GID: mustGID(t, "::ffff:10.0.0.1"), Type: GIDTypeRoCEv2}}}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out []DeviceInfo
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip: %+v", out)
	}
}
