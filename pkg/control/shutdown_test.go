package control

import (
	"context"
	"errors"
	"testing"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
)

// TestPeerShutdown: a client whose server stops (its context ends) is
// told so by the server's bye: its next run fails with an error matching
// ErrPeerShutdown and ErrPeerClosed, saying the server is shutting down.
// A server that closes without bye (killed, crashed) matches
// ErrPeerClosed only.
func TestPeerShutdown(t *testing.T) {
	noLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	ts := startServer(t, newEcho(), serverOpts())
	c, err := Dial(ctx, ts.addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echoTest(t, ctx, c, "write-lat")
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(ctx, "echo", testSpec)
	if !errors.Is(err, ErrPeerShutdown) || !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("run on a server that stopped: %v, want ErrPeerShutdown and ErrPeerClosed", err)
	}
	if want := "server " + ts.addr + " closed the connection: it is shutting down"; err == nil || len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("%q, want it to start %q", err, want)
	}

	addr := fakeServer(t, func(r *rawConn) {
		r.write(serverHello(buildinfo.ProtocolVersion, buildinfo.Version))
		r.expect(TypeHello)
		r.write(&Message{Type: TypeAccepted})
		// Then closes, at a frame boundary, saying nothing.
	})
	k, err := Dial(ctx, addr, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	_, err = k.Run(ctx, "echo", testSpec)
	if !errors.Is(err, ErrPeerClosed) || errors.Is(err, ErrPeerShutdown) {
		t.Errorf("run on a server that closed without bye: %v, want ErrPeerClosed and not ErrPeerShutdown", err)
	}
}
