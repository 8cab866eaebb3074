// Package buildinfo tells which rdmabench this is: version, commit, Go
// version, and whether it was built with libibverbs.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strconv"
)

// Version is this build's version: the one set at link time (-ldflags
// "-X .../internal/buildinfo.Version=v1.2.3") when there is one, else the
// module version Go recorded (a `go install
// github.com/rdmabench/rdmabench/cmd/rdmabench@v1.2.3` build says v1.2.3),
// else "dev" (a build from a clone, which the commit tells apart).
var Version = "dev"

func init() {
	bi, ok := debug.ReadBuildInfo()
	Version = pickVersion(Version, bi, ok)
}

// pickVersion returns the version of a build linked with version linked
// ("dev" when none was set) whose build information is bi (ok false when
// there is none): linked when set, else bi's main module version unless
// Go recorded none ("(devel)", as for a build in a clone without VCS
// stamping), else "dev".
func pickVersion(linked string, bi *debug.BuildInfo, ok bool) string {
	if linked != "" && linked != "dev" {
		return linked
	}
	if ok && bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "dev"
}

// ProtocolVersion is the control protocol's version; peers must agree on it.
// Version 2: a spec leaves out warmup, inline and gid_index for "the test's
// default" (version 1 sent -1).
var ProtocolVersion = protocolVersion()

// protocol is the protocol version as text, so that a test build can claim
// another one (-ldflags "-X .../internal/buildinfo.protocol=3") and prove
// that a mismatch is refused by name.
var protocol = "2"

func protocolVersion() int {
	n, err := strconv.Atoi(protocol)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Info describes this build.
type Info struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Verbs     bool   `json:"verbs"`
}

// Get returns this build's facts: the commit from the VCS settings Go
// recorded (a build in a git clone).
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	return get(bi, ok)
}

func get(bi *debug.BuildInfo, ok bool) Info {
	i := Info{Name: "rdmabench", Version: Version, GoVersion: runtime.Version(), Verbs: verbs}
	if ok && bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	return i
}
