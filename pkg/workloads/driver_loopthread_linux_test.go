//go:build linux

package workloads

import (
	"errors"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Package init runs on the main thread with the main goroutine locked to
// it; locked once more, it stays there for TestMain, which asks for a loop
// from the main thread as a loop goroutine that Go had scheduled there
// would (mainLoop).
func init() { runtime.LockOSThread() }

// mainLoop is what a loop asked for on the main thread did, for
// TestLoopThreadNotMain: the thread it ran on, and whether a pipe's write
// end, closed by another thread while the loop ran, was closed for good
// once the loop was done (its reader saw the end).
var mainLoop struct {
	onMain   bool // the asking goroutine was on the main thread
	loopTID  int
	closed   bool
	readErr  error
	checkErr error
}

func TestMain(m *testing.M) {
	mainLoop.onMain = unix.Gettid() == unix.Getpid()
	mainLoop.checkErr = loopFromHere()
	os.Exit(m.Run())
}

func loopFromHere() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	started, release, closed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() { // another thread, with the process's table
		<-started
		w.Close()
		close(closed)
	}()
	done := make(chan cpuSpan, 1)
	runOnLoopThread(nil, func() {
		mainLoop.loopTID = unix.Gettid()
		close(started)
		<-closed
		close(release)
	}, done)
	<-done
	<-release
	// The loop's thread has ended, and its copy of the table with it: the
	// write end is closed everywhere, and the reader sees the end.
	_ = r.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, mainLoop.readErr = r.Read(make([]byte, 1))
	mainLoop.closed = errors.Is(mainLoop.readErr, io.EOF)
	return nil
}

// A loop asked for on the main thread runs on another thread, one that
// ends with it: a copy of the descriptor table made on the main thread
// would outlive the loop (Go parks that thread for good rather than end
// it) and keep open every file open when it was made.
func TestLoopThreadNotMain(t *testing.T) {
	if mainLoop.checkErr != nil {
		t.Fatal(mainLoop.checkErr)
	}
	if !mainLoop.onMain {
		t.Skip("TestMain did not run on the main thread")
	}
	if mainLoop.loopTID == unix.Getpid() {
		t.Errorf("the loop ran on the main thread (tid %d)", mainLoop.loopTID)
	}
	if !mainLoop.closed {
		t.Errorf("a pipe's write end closed while the loop ran was still open after it: its reader got %v, want EOF", mainLoop.readErr)
	}
}
