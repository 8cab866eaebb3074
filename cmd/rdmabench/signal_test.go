package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// TestMain lets a test run this binary as rdmabench itself (with
// RDMABENCH_TEST_AS_MAIN=1), to send it real signals.
func TestMain(m *testing.M) {
	if os.Getenv("RDMABENCH_TEST_AS_MAIN") == "1" {
		os.Args = append([]string{"rdmabench"}, os.Args[1:]...)
		main()
	}
	os.Exit(m.Run())
}

// TestSignalsKeepResults: SIGINT, SIGTERM and SIGHUP stop a run alike: the
// document on disk holds what was measured, is complete (not partial) and
// says why the run stopped, and the exit status is the shell's.
func TestSignalsKeepResults(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}} {
		t.Run(signalName(c.sig), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run.json")
			cmd := exec.Command(os.Args[0], "tcp-lat", "-s", "2,64,128,256", "-D", "1", "--interval", "100ms", "--out", out)
			cmd.Env = append(os.Environ(), "RDMABENCH_TEST_AS_MAIN=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The first size has measured something once the file exists.
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(out); err == nil || time.Now().After(deadline) {
					break
				}
			}
			time.Sleep(300 * time.Millisecond)
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("the run did not stop")
			}
			if got := cmd.ProcessState.ExitCode(); got != c.code {
				t.Errorf("exit status %d, want %d (stderr %q)", got, c.code, stderr.String())
			}
			doc, err := report.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Partial || !strings.Contains(doc.Error, signalName(c.sig)) || len(doc.Results) == 0 || len(doc.Results[0].Intervals) == 0 {
				t.Errorf("document: partial %v, error %q, %d results; want the intervals measured and why it stopped",
					doc.Partial, doc.Error, len(doc.Results))
			}
		})
	}
}
