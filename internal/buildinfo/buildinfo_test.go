package buildinfo_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

func TestVerbsMatchesThePackage(t *testing.T) {
	if got := buildinfo.Get().Verbs; got != verbs.Supported {
		t.Fatalf("buildinfo says verbs %v, pkg/verbs says %v", got, verbs.Supported)
	}
}

// TestPureGoPackages proves that the protocol, the results model, its
// comparison, renderers and plots and the build facts do not link the cgo
// verbs layer: none of them depends on pkg/verbs. (The standard library's
// net may still use cgo's resolver.)
func TestPureGoPackages(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../pkg/control", "../../pkg/report/...", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/rdmabench/rdmabench/pkg/verbs" {
			t.Errorf("pkg/control, pkg/report/... or internal/buildinfo depends on %s", dep)
		}
	}
}
