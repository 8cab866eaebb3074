// Package buildinfo tells which rdmabench this is: version, commit, Go
// version, and whether it was built with libibverbs.
package buildinfo

import (
	"runtime"
	"runtime/debug"

	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// Version is set at link time (-ldflags "-X .../internal/buildinfo.Version=v1.2.3").
var Version = "dev"

// ProtocolVersion is the control protocol's version; peers must agree on it.
const ProtocolVersion = 1

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
	i := Info{Name: "rdmabench", Version: Version, GoVersion: runtime.Version(), Verbs: verbs.Supported}
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
