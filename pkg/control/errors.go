package control

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrFrameTooLarge: a frame's declared length is over the limit.
	ErrFrameTooLarge = errors.New("control frame too large")
	// ErrBadFrame: a zero length, a body that is not a JSON object, or an
	// unknown or incomplete message.
	ErrBadFrame = errors.New("bad control frame")
	// ErrPeerSilent: nothing arrived from the other end for the timeout
	// (no ping either), or it stopped reading what this end sends.
	ErrPeerSilent = errors.New("the other end is silent")
	// ErrPeerClosed: the other end closed the connection (or reset it).
	ErrPeerClosed = errors.New("the other end closed the connection")
	// ErrClosed: this end closed the connection.
	ErrClosed = errors.New("control connection closed")
	// ErrProtocol: the other end sent a message out of order.
	ErrProtocol = errors.New("control protocol violation")
	// ErrTestEnded: the server's end of the test returned; the session
	// carries no more messages.
	ErrTestEnded = errors.New("the test has ended")
	// ErrBusy matches a *ServerError with code "busy".
	ErrBusy = errors.New("server busy")
	// ErrAuth matches a *ServerError with code "auth".
	ErrAuth = errors.New("authentication failed")
	// ErrVersion matches a *VersionError and a *ServerError with code "version".
	ErrVersion = errors.New("protocol version mismatch")
	// ErrNotServer matches a *NotServerError: what answered is no
	// rdmabench server.
	ErrNotServer = errors.New("not an rdmabench server")
)

// ErrPeerShutdown: the other end said bye, then closed the connection: a
// server shutting down (a clean stop or restart), a client done. An
// error that matches it matches ErrPeerClosed too; a close without bye
// (a process killed, a crash: the kernel closes its sockets alike) does
// not match it.
var ErrPeerShutdown = errors.New("the other end shut down")

// Error codes of "error" frames.
const (
	CodeVersion  = "version"  // protocol versions differ; the connection closes
	CodeAuth     = "auth"     // wrong or missing token; the connection closes
	CodeBusy     = "busy"     // another test is running; the connection stays usable
	CodeSpec     = "spec"     // the handler refused the spec; the connection stays usable
	CodeLimit    = "limit"    // over a server limit (memory, connections)
	CodeRun      = "run"      // the test failed on the server (also a done frame's error)
	CodeProtocol = "protocol" // a frame out of order or malformed; the connection closes
)

// ServerError is an error the server reported. Its message reads
// "server ADDR: MSG", ADDR being the address the client dialled, so the CLI
// can print it as it is.
type ServerError struct {
	Addr string // the server's address, as dialled
	Code string // one of the Code constants
	Msg  string
}

func (e *ServerError) Error() string { return "server " + e.Addr + ": " + e.Msg }

// Is matches ErrBusy, ErrAuth and ErrVersion by code.
func (e *ServerError) Is(target error) bool {
	switch target {
	case ErrBusy:
		return e.Code == CodeBusy
	case ErrAuth:
		return e.Code == CodeAuth
	case ErrVersion:
		return e.Code == CodeVersion
	}
	return false
}

// usable tells whether the connection survives the error.
func (e *ServerError) usable() bool {
	return e.Code == CodeBusy || e.Code == CodeSpec || e.Code == CodeLimit
}

// VersionError is a protocol version mismatch this end detected.
type VersionError struct {
	Peer         string // "the client", "server 10.0.0.2:19515"
	PeerProtocol int
	PeerVersion  string
	Self         string // "server", "client"
	Protocol     int
	Version      string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("version mismatch: %s speaks protocol version %d (rdmabench %s) but this %s speaks %d (rdmabench %s); run the same rdmabench release on both hosts",
		e.Peer, e.PeerProtocol, e.PeerVersion, e.Self, e.Protocol, e.Version)
}

// Is matches ErrVersion.
func (e *VersionError) Is(target error) bool { return target == ErrVersion }

// LimitError, returned (or wrapped) by Handler.Accept, refuses a test with
// code "limit" instead of "spec": the spec is valid but over what this server
// allows (e.g. its memory cap). Both LimitError and *LimitError are
// recognised.
type LimitError struct{ Err error }

func (e LimitError) Error() string {
	if e.Err == nil {
		return "over a server limit"
	}
	return e.Err.Error()
}

func (e LimitError) Unwrap() error { return e.Err }

// NotServerError: what answered at Addr does not speak the control
// protocol: its first bytes are no control frame. It wraps why they are
// not (ErrFrameTooLarge, ErrBadFrame, or the connection's end after a few
// bytes) and matches ErrNotServer.
type NotServerError struct {
	Addr   string // as dialled
	Answer []byte // its first bytes: at most 256, or its first line
	Err    error
}

func (e *NotServerError) Error() string {
	s := e.Addr + " is not an rdmabench server: it answered " + quoteAnswer(e.Answer)
	ended := true
	switch {
	case errors.Is(e.Err, ErrPeerClosed):
		s += " and closed the connection"
	case errors.Is(e.Err, ErrPeerSilent):
		s += " and then nothing"
	default:
		ended = false
	}
	if kind := answerKind(e.Answer); kind != "" {
		return s + " (" + kind + "?)"
	}
	if ended || e.Err == nil {
		return s
	}
	return s + " (" + e.Err.Error() + ")"
}

// Is matches ErrNotServer.
func (e *NotServerError) Is(target error) bool { return target == ErrNotServer }

func (e *NotServerError) Unwrap() error { return e.Err }

// answerKind guesses the server that answered b, from its first bytes:
// "an HTTP server", "an SSH server", "a TLS server", or "".
func answerKind(b []byte) string {
	s := strings.ToLower(string(b[:min(len(b), 16)]))
	switch {
	case strings.HasPrefix(s, "http/"), strings.HasPrefix(s, "<!doctype html"), strings.HasPrefix(s, "<html"):
		return "an HTTP server"
	case strings.HasPrefix(s, "ssh-"):
		return "an SSH server"
	case len(b) >= 2 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03: // a TLS alert or handshake record
		return "a TLS server"
	}
	return ""
}

// quoteAnswer quotes the first line of b (at most 80 bytes of it, "..."
// saying there was more of it): printable ASCII as it is, other bytes
// escaped.
func quoteAnswer(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = bytes.TrimSuffix(b[:i], []byte("\r"))
	}
	more := len(b) > 80
	if more {
		b = b[:80]
	}
	var s strings.Builder
	s.WriteByte('"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c == '\r':
			s.WriteString(`\r`)
		case c == '\t':
			s.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&s, `\x%02x`, c)
		default:
			s.WriteByte(c)
		}
	}
	s.WriteByte('"')
	if more {
		s.WriteString("...")
	}
	return s.String()
}

// silentError: nothing arrived from name for d; or, with answer set, no
// answer to it arrived although name kept the connection alive.
type silentError struct {
	name    string
	d       time.Duration
	sending bool
	answer  string // what was not answered: "run write-bw"
	first   bool   // nothing at all came since the connection was made
}

func (e *silentError) Error() string {
	if e.first {
		return fmt.Sprintf("%s accepted the connection but said nothing for %v: an rdmabench server says hello at once (is it one, and is it running?)", e.name, e.d)
	}
	if e.answer != "" {
		return fmt.Sprintf("%s did not answer %s within %v: it sends only pings", e.name, e.answer, e.d)
	}
	if e.sending {
		return fmt.Sprintf("could not send to %s for %v: it is not reading or the network is down", e.name, e.d)
	}
	return fmt.Sprintf("no message from %s for %v: it is gone or the network is down", e.name, e.d)
}

func (e *silentError) Is(target error) bool { return target == ErrPeerSilent }

// closedError: name closed (or reset) the connection.
type closedError struct {
	name  string
	how   string // "", " in the middle of a frame", " (reset)"
	cause error
}

func (e *closedError) Error() string        { return e.name + " closed the connection" + e.how }
func (e *closedError) Is(target error) bool { return target == ErrPeerClosed }
func (e *closedError) Unwrap() error        { return e.cause }

// while adds what this end was doing to a connection error.
func while(err error, doing string) error {
	return fmt.Errorf("%w (while %s)", err, doing)
}
