package reporttest

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func JSONOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func Equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// Update is the -update flag of every test binary that uses CheckGolden.
var Update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// CheckGolden compares got with the golden file dir/name, rewriting it
// with -update.
func CheckGolden(t *testing.T, dir, name string, got []byte) {
	t.Helper()
	golden := filepath.Join(dir, name)
	if *Update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (rerun with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("output differs from %s (rerun with -update if intended)\n--- got:\n%s\n--- want:\n%s", golden, got, want)
	}
}
