// Package buildinfo tells which rdmabench this is: version, commit, Go
// version, and whether it was built with libibverbs.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strconv"
)

// Version is set at link time (-ldflags "-X .../internal/buildinfo.Version=v1.2.3").
var Version = "dev"

// ProtocolVersion is the control protocol's version; peers must agree on it.
var ProtocolVersion = protocolVersion()

// protocol is the protocol version as text, so that a test build can claim
// another one (-ldflags "-X .../internal/buildinfo.protocol=2") and prove
// that a mismatch is refused by name.
var protocol = "1"

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

// Get returns this build's facts.
func Get() Info {
	i := Info{Name: "rdmabench", Version: Version, GoVersion: runtime.Version(), Verbs: verbs}
	if bi, ok := debug.ReadBuildInfo(); ok {
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
