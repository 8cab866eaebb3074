// Package atomicfile writes a results file so that its path holds either
// its old content or the complete new one, never a part.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/renameio/v2"
)

// Write writes the file at path through write so that path holds either
// its old content or the complete new one, never a part: write goes to a
// temporary file in the same directory, which is flushed, fsynced and
// renamed over path (then the directory is fsynced, where the system
// allows). If write or any step fails, the temporary file is removed,
// path is untouched and the error is returned.
//
// The new file keeps the mode of the file it replaces, or gets 0644
// whatever the umask. A symbolic link at path is replaced, not followed
// (its target's mode is kept); a directory or another file that is not a
// regular one is refused.
func Write(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	mode := os.FileMode(0o644)
	if fi, statErr := os.Stat(path); statErr == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("report: write %s: not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}
	// The temporary file in path's directory, so that the rename cannot
	// cross file systems; created with mode, whatever the umask.
	f, err := renameio.NewPendingFile(path, renameio.WithTempDir(dir), renameio.WithStaticPermissions(mode))
	if err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	// Also runs when write panics: no temporary file is left behind. After
	// the rename it does nothing.
	defer func() { _ = f.Cleanup() }()

	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	// Fsyncs the file, closes and renames it.
	if err := f.CloseAtomicallyReplace(); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename durable; best effort (not every system can fsync
// a directory). renameio leaves it to its caller.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync() // the data itself is already synced
	_ = d.Close()
}
