package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A test or the suite against a port where some other server listens says
// what answered there, at once: the control client's timeout (10 s) is
// not waited for, so the error is the answer's, not a silence's.
func TestNotAnRDMABenchServer(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer web.Close()
	ssh := banner(t, "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
	for _, tc := range []struct {
		addr, says string
	}{
		{strings.TrimPrefix(web.URL, "http://"), `it answered "HTTP/1.1 400 Bad Request" (an HTTP server?)`},
		{ssh, `it answered "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3" (an SSH server?)`},
	} {
		host, port, _ := net.SplitHostPort(tc.addr)
		for _, args := range [][]string{{"tcp-lat", host, "-p", port}, {"suite", tc.addr}, {"write-bw", tc.addr, "-D", "5"}} {
			stdout, stderr, code := cli(t, args...)
			want := "rdmabench: " + tc.addr + " is not an rdmabench server: " + tc.says + "\n"
			if code != exitError || stderr != want || stdout != "" {
				t.Errorf("%v: exit %d, stderr %q, stdout %q\nwant exit 1 and %q", args, code, stderr, stdout, want)
			}
		}
	}
}

// banner listens on a port of this host, and sends line to each
// connection, then reads what it sends until it closes: as an SSH server
// waits for its client's banner.
func banner(t *testing.T, line string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				_, _ = io.WriteString(conn, line)
				_, _ = io.Copy(io.Discard, conn)
			}()
		}
	}()
	return ln.Addr().String()
}
