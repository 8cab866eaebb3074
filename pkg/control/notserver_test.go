package control

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// notServerOpts are the client's options against servers of other
// protocols: a timeout far longer than the test's patience, so that an
// error the client found only by waiting would be the context's, not the
// one the test wants.
func notServerOpts() ClientOptions { return ClientOptions{Timeout: time.Hour} }

// A server of another protocol is named as such as soon as it answers:
// one that speaks first (SSH) and one that waits for its client's request
// (HTTP), which the client's hello, ending with a newline, is.
func TestDialNotAServer(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer web.Close()
	cases := []struct {
		name   string
		server func(r *rawConn) // nil: web, Go's own HTTP server
		says   string           // after "ADDR is not an rdmabench server: it answered "
		want   error            // the frame error it wraps
	}{
		{"Go's HTTP server", nil, `"HTTP/1.1 400 Bad Request" (an HTTP server?)`, ErrFrameTooLarge},
		{"an HTTP/1.0 server that reads a line first", func(r *rawConn) {
			// As Python's http.server answers a request it cannot parse.
			if line, err := bufio.NewReader(r.conn).ReadString('\n'); err != nil {
				t.Errorf("the fake HTTP server read no line: %q, %v", line, err)
				return
			}
			r.writeBytes([]byte("HTTP/1.0 400 Bad Request\r\nContent-Type: text/html\r\n\r\n<html>...</html>\n"))
			_, _ = io.Copy(io.Discard, r.conn)
		}, `"HTTP/1.0 400 Bad Request" (an HTTP server?)`, ErrFrameTooLarge},
		{"an HTTP server answering a bad request with a page alone", func(r *rawConn) {
			// Python's http.server, for a request line of one word.
			_, _ = bufio.NewReader(r.conn).ReadString('\n')
			r.writeBytes([]byte("<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n"))
			_, _ = io.Copy(io.Discard, r.conn)
		}, `"<!DOCTYPE HTML>" (an HTTP server?)`, ErrFrameTooLarge},
		{"an SSH server", func(r *rawConn) {
			r.writeBytes([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"))
			_, _ = io.Copy(io.Discard, r.conn) // waits for the client's banner
		}, `"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3" (an SSH server?)`, ErrFrameTooLarge},
		{"a TLS server's alert", func(r *rawConn) {
			r.writeBytes([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32})
		}, `"\x15\x03\x03\x00\x02\x022" (a TLS server?)`, ErrFrameTooLarge},
		{"a line shorter than a frame's length", func(r *rawConn) {
			r.writeBytes([]byte("OK\n"))
			_, _ = io.Copy(io.Discard, r.conn)
		}, `"OK" (control frame too large: at least 1330317824 bytes declared, the limit is 1048576)`, ErrFrameTooLarge},
		{"half a frame's length and the end", func(r *rawConn) {
			r.writeBytes([]byte{0, 0})
		}, `"\x00\x00" and closed the connection`, ErrPeerClosed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			noLeaks(t)
			addr := strings.TrimPrefix(web.URL, "http://")
			if tc.server != nil {
				addr = fakeServer(t, tc.server)
			}
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			c, err := Dial(ctx, addr, notServerOpts())
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			want := addr + " is not an rdmabench server: it answered " + tc.says
			if ctx.Err() != nil || !errors.Is(err, ErrNotServer) || !errors.Is(err, tc.want) || err.Error() != want {
				t.Errorf("dial: %v\nwant %s (wrapping %v), before any deadline", err, want, tc.want)
			}
		})
	}
}

// A server that accepts the connection and says nothing is no rdmabench
// server either, which says hello at once; the client says so when its
// timeout ends.
func TestDialSilentListener(t *testing.T) {
	noLeaks(t)
	addr := fakeServer(t, func(r *rawConn) { _, _ = io.Copy(io.Discard, r.conn) })
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, err := Dial(ctx, addr, ClientOptions{Timeout: 200 * time.Millisecond})
	want := "server " + addr + " accepted the connection but said nothing for 200ms: an rdmabench server says hello at once (is it one, and is it running?) (while waiting for the server's hello)"
	if !errors.Is(err, ErrPeerSilent) || err == nil || err.Error() != want {
		t.Errorf("dial: %v\nwant %s", err, want)
	}
}

// The client's hello goes first, with its newline; a server reads it
// after sending its own, as always.
func TestClientHelloFirst(t *testing.T) {
	noLeaks(t)
	got := make(chan *Message, 1)
	addr := fakeServer(t, func(r *rawConn) {
		_ = r.conn.SetReadDeadline(time.Now().Add(patience))
		m, err := ReadFrame(r.conn, 0) // before this end says anything
		if err != nil {
			t.Errorf("read the client's hello: %v", err)
		}
		got <- m
		r.write(&Message{Type: TypeError, Code: CodeLimit, Msg: "not now"})
		_, _ = io.Copy(io.Discard, r.conn)
	})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, err := Dial(ctx, addr, notServerOpts())
	var se *ServerError
	if !errors.As(err, &se) || se.Code != CodeLimit {
		t.Errorf("dial: %v, want the server's limit error", err)
	}
	if m := <-got; m == nil || m.Type != TypeHello {
		t.Errorf("the server read %+v first, want the client's hello", m)
	}
}
