package atomicfile_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rdmabench/rdmabench/internal/atomicfile"
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

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")

	// New file.
	if err := atomicfile.Write(path, func(w io.Writer) error { return report.WriteJSON(w, reporttest.DurationDoc()) }); err != nil {
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
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
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

func TestWriteWriterFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, []byte("old results\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := atomicfile.Write(path, func(w io.Writer) error {
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
		_ = atomicfile.Write(path, func(w io.Writer) error { panic("writer panic") })
	}()
	if b, _ := os.ReadFile(path); string(b) != "old results\n" {
		t.Errorf("after a panic the target is %q", b)
	}
	if names := dirEntries(t, dir); len(names) != 1 {
		t.Errorf("after a panic the directory holds %v", names)
	}
}

func TestWriteBadPath(t *testing.T) {
	dir := t.TempDir()
	if err := atomicfile.Write(filepath.Join(dir, "missing", "r.json"), func(io.Writer) error { return nil }); err == nil {
		t.Error("missing directory: no error")
	}
	if err := atomicfile.Write(dir, func(io.Writer) error { return nil }); err == nil {
		t.Error("path is a directory: no error")
	}
}

// TestWriteSymlink: a symbolic link at the path is replaced by the new
// file, with its target's mode; the target is left as it was.
func TestWriteSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(target, []byte("target\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(link, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
		t.Fatalf("link after write: %v, %v; want a regular file of mode 0640", fi, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "target\n" {
		t.Errorf("target is %q: the link was followed", b)
	}
	if b, _ := os.ReadFile(link); string(b) != "new\n" {
		t.Errorf("new file holds %q", b)
	}
}

// TestWriteUmask: a new file gets 0644 whatever the umask.
func TestWriteUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "r.json")
	if err := atomicfile.Write(path, func(w io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode().Perm(), err)
	}
}
