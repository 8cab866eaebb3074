package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes a file through write so that path holds either its
// old content or the complete new one, never a part: write goes to a
// temporary file in the same directory, which is flushed, fsynced and renamed
// over path (then the directory is fsynced, where the system allows). If
// write or any step fails, the temporary file is removed, path is untouched
// and the error is returned.
//
// The new file keeps the mode of the file it replaces, or gets 0644. A
// symbolic link at path is replaced, not followed.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	mode := os.FileMode(0o644)
	if fi, statErr := os.Stat(path); statErr == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("report: write %s: not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}

	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	tmp := f.Name()
	closed, renamed := false, false
	// Also runs when write panics: no temporary file is left behind.
	defer func() {
		if !closed {
			_ = f.Close()
		}
		if !renamed {
			_ = os.Remove(tmp)
		}
	}()

	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err = f.Chmod(mode); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("report: write %s: sync: %w", path, err)
	}
	closed = true
	if err = f.Close(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	renamed = true
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable; best effort (not every system can fsync a
// directory).
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync() // the data itself is already synced
	_ = d.Close()
}

// ReadFile reads the results document in the file at path (see ReadJSON).
// Every error names the file and says what is wrong with it: "read
// base.json: truncated JSON: ...", "read new.json: unsupported schema
// \"rdmabench/result/v2\" ...", "read results: open x.json: no such file
// or directory". A regular file larger than [MaxDocumentBytes] is refused
// by its size, unread; another kind of file (a pipe, a device) is read up
// to the limit.
func ReadFile(path string) (*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return readDocument(f, "read "+path, size)
}

// ReadNamed is ReadJSON for an input known by name (a file name, "standard
// input"): its errors start "read NAME: ".
func ReadNamed(r io.Reader, name string) (*Document, error) {
	return readDocument(r, "read "+name, -1)
}

// readDocument reads a results document, or an event stream (a mesh's
// link stream, a run's --json-stream) as the document it makes. A stream
// is read line by line, with a limit per line rather than on the whole.
func readDocument(r io.Reader, what string, size int64) (*Document, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if isEventStream(br) {
		return readEventStream(br, what)
	}
	return readJSON(br, what, size)
}

// Source is a document with the name it is known by (its file name).
type Source struct {
	Name string
	Doc  *Document
}
