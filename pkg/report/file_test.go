package report_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")

	// New file.
	if err := report.WriteFileAtomic(path, func(w io.Writer) error { return report.WriteJSON(w, reporttest.DurationDoc()) }); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := report.ReadJSON(f)
	f.Close()
	if err != nil || len(doc.Results) != len(reporttest.DurationDoc().Results) {
		t.Fatalf("read back: %v, %d results", err, len(doc.Results))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", fi.Mode().Perm())
	}

	// Replacing keeps the old mode.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Errorf("content %q, want %q", b, "new\n")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want 0600 kept", fi.Mode().Perm())
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only results.json", names)
	}
}

func TestWriteFileAtomicWriterFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, []byte("old results\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := report.WriteFileAtomic(path, func(w io.Writer) error {
		// Enough to go past any buffer, so part of it reached the temp file.
		for i := range 10000 {
			fmt.Fprintf(w, "partial line %d\n", i)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want it to wrap the writer's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old results\n" {
		t.Errorf("target changed to %.40q..., want the old content", b)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v: the temporary file was left behind", names)
	}

	// A panicking writer leaves nothing behind either.
	func() {
		defer func() { _ = recover() }()
		_ = report.WriteFileAtomic(path, func(w io.Writer) error { panic("writer panic") })
	}()
	if b, _ := os.ReadFile(path); string(b) != "old results\n" {
		t.Errorf("after a panic the target is %q", b)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("after a panic the directory holds %v", names)
	}
}

func TestWriteFileAtomicBadPath(t *testing.T) {
	dir := t.TempDir()
	if err := report.WriteFileAtomic(filepath.Join(dir, "missing", "r.json"), func(io.Writer) error { return nil }); err == nil {
		t.Error("missing directory: no error")
	}
	if err := report.WriteFileAtomic(dir, func(io.Writer) error { return nil }); err == nil {
		t.Error("path is a directory: no error")
	}
}
