package remote

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/pkg/control"
	"github.com/rdmabench/rdmabench/pkg/workloads"
)

func TestToken(t *testing.T) {
	t.Setenv(EnvToken, "from-env")
	if got := Token(""); got != "from-env" {
		t.Errorf("Token(\"\") = %q, want $%s's", got, EnvToken)
	}
	if got := Token("given"); got != "given" {
		t.Errorf("Token(\"given\") = %q, want the token given", got)
	}
}

// serve starts a test server on 127.0.0.1 and returns its address.
func serve(t *testing.T, srv *workloads.Server, token string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, ln, srv, control.ServerOptions{Token: token})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ln.Addr().String()
}

func tcpLat(t *testing.T) *workloads.Plan {
	t.Helper()
	plan, err := workloads.NewPlan(workloads.Request{Tests: []string{"tcp-lat"},
		Spec: workloads.Spec{Iterations: 10}})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// A test runs against a server that Serve serves and Dial reaches, with
// the token, and its document names the server's host.
func TestServeDial(t *testing.T) {
	addr := serve(t, &workloads.Server{}, "s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Dial(ctx, addr, "wrong"); err == nil {
		t.Fatal("Dial with the wrong token: no error")
	}
	c, err := Dial(ctx, addr, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if tg := c.Target(); tg.Host != "127.0.0.1" || tg.Remote == nil {
		t.Fatalf("Target() = %+v, want the server at 127.0.0.1", tg)
	}
	doc, err := tcpLat(t).Execute(ctx, c.Target())
	if err != nil {
		t.Fatal(err)
	}
	if doc.Params.Server != "127.0.0.1" || doc.Params.Loopback {
		t.Errorf("params: server %q, loopback %v; want the server 127.0.0.1", doc.Params.Server, doc.Params.Loopback)
	}
	if len(doc.Results) != 1 || doc.Results[0].Error != "" {
		t.Fatalf("results: %+v, want one tcp-lat result without error", doc.Results)
	}
}

// A test over the server's memory cap is refused with the code "limit".
func TestServeOverLimit(t *testing.T) {
	addr := serve(t, &workloads.Server{MaxMem: 1}, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = tcpLat(t).Execute(ctx, c.Target())
	var se *control.ServerError
	if !errors.As(err, &se) || se.Code != control.CodeLimit {
		t.Fatalf("err = %v, want a server error with code %q", err, control.CodeLimit)
	}
}
