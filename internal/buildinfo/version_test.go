package buildinfo

import (
	"runtime/debug"
	"testing"
)

// TestPickVersion: the version a build reports, from the link-time value
// and the build information Go recorded.
func TestPickVersion(t *testing.T) {
	main := func(v string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/rdmabench/rdmabench", Version: v}, Settings: settings}
	}
	for _, tc := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		ok     bool
		want   string
	}{
		{"go install @v1.2.3", "dev", main("v1.2.3"), true, "v1.2.3"},
		{"go install @commit", "dev", main("v0.0.0-20261201095630-f919ed7a1b2c"), true, "v0.0.0-20261201095630-f919ed7a1b2c"},
		{"clone build", "dev", main("(devel)", debug.BuildSetting{Key: "vcs.revision", Value: "f919ed7"}), true, "dev"},
		{"no module version", "dev", main(""), true, "dev"},
		{"no build information", "dev", nil, false, "dev"},
		{"ldflags over the module", "v2.0.0-rc1", main("v1.2.3"), true, "v2.0.0-rc1"},
		{"ldflags in a clone", "v2.0.0", main("(devel)"), true, "v2.0.0"},
		{"ldflags empty", "", main("v1.2.3"), true, "v1.2.3"},
	} {
		if got := pickVersion(tc.linked, tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestGetReadsVCS: Get reports the commit and modified flag from the VCS
// settings of the build information it is given.
func TestGetReadsVCS(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "f919ed7"}, {Key: "vcs.modified", Value: "true"}}}
	i := get(bi, true)
	if i.Commit != "f919ed7" || !i.Modified || i.Version != Version {
		t.Errorf("%+v", i)
	}
	if i := get(nil, false); i.Commit != "" || i.Modified {
		t.Errorf("no build information: %+v", i)
	}
}
