package control

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Message types: the "type" field of a frame.
const (
	TypeHello    = "hello"    // both ways, first: versions; the server's also a nonce, token_required and hostname
	TypeAuth     = "auth"     // client: mac, when the server's hello asked for a token
	TypeRun      = "run"      // client: test (for logs) and spec
	TypeAccepted = "accepted" // server: the handshake, or a run, is accepted
	TypeError    = "error"    // either: code and message
	TypeExchange = "exchange" // both ways during a test: body, an opaque workloads envelope
	TypePing     = "ping"     // both ways after the handshake: keepalive
	TypeDone     = "done"     // server: its end of the test returned; error if it failed
	TypeBye      = "bye"      // either: closing the connection

	// A mesh (see MeshServer): ranks register with a coordinator, which
	// hands them jobs. Each carries data, an opaque JSON value.
	TypeRegister = "register" // rank, first after the handshake: data describes the rank
	TypeJob      = "job"      // coordinator: id and data, work for the rank
	TypeJobDone  = "job_done" // rank: the job's id, data (its outcome) or error

	// A registry (see Registry): agents register with a test server that
	// keeps their registrations (TypeRegister, data an AgentRegistration)
	// and get every live one back.
	TypePeers = "peers" // registry: data, the Registrations
)

var knownTypes = map[string]bool{
	TypeHello: true, TypeAuth: true, TypeRun: true, TypeAccepted: true, TypeError: true,
	TypeExchange: true, TypePing: true, TypeDone: true, TypeBye: true,
	TypeRegister: true, TypeJob: true, TypeJobDone: true, TypePeers: true,
}

// NonceSize is the size in bytes of the server's nonce.
const NonceSize = 32

// Message is one frame's JSON object. Type says which of the other fields
// are meaningful; the rest are left empty and omitted.
type Message struct {
	Type string `json:"type"`

	// hello
	Protocol      int    `json:"protocol,omitempty"`       // control protocol version
	Version       string `json:"version,omitempty"`        // rdmabench version
	Hostname      string `json:"hostname,omitempty"`       // server
	Nonce         string `json:"nonce,omitempty"`          // server: NonceSize random bytes, hex
	TokenRequired bool   `json:"token_required,omitempty"` // server
	// Features: server, what it does beyond the protocol's version
	// (ServerOptions.Features); older servers send none.
	Features []string `json:"features,omitempty"`
	// TimeoutMS: both, how long the sender waits for anything from the
	// other end before it takes it for silent, in ms; the other end pings
	// at least twice within it. Older ends send none (DefaultTimeout).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`

	// auth: hex HMAC-SHA256 of the nonce's bytes keyed by the token; empty
	// when the client has no token.
	MAC string `json:"mac,omitempty"`

	// run
	Test string          `json:"test,omitempty"` // test name, for logs and the busy message
	Spec json.RawMessage `json:"spec,omitempty"` // the workloads spec, a JSON object

	// error
	Code string `json:"code,omitempty"`
	Msg  string `json:"message,omitempty"`

	// exchange: any bytes (base64 in JSON).
	Body []byte `json:"body,omitempty"`

	// done: the server's error, empty on success; job_done: the job's.
	Err string `json:"error,omitempty"`

	// register, job, job_done, peers: an opaque JSON value, and the job's id
	// (from 1).
	Data json.RawMessage `json:"data,omitempty"`
	ID   uint64          `json:"id,omitempty"`
}

// check reports a message whose required fields are missing.
func (m *Message) check() error {
	switch m.Type {
	case TypeHello:
		if m.Protocol <= 0 {
			return fmt.Errorf("%w: hello without a protocol version", ErrBadFrame)
		}
	case TypeRun:
		if len(m.Spec) == 0 {
			return fmt.Errorf("%w: run without a spec", ErrBadFrame)
		}
	case TypeRegister:
		if len(m.Data) == 0 {
			return fmt.Errorf("%w: register without data", ErrBadFrame)
		}
	case TypePeers:
		if len(m.Data) == 0 {
			return fmt.Errorf("%w: peers without data", ErrBadFrame)
		}
	case TypeJob:
		if m.ID == 0 || len(m.Data) == 0 {
			return fmt.Errorf("%w: job without an id or data", ErrBadFrame)
		}
	case TypeJobDone:
		if m.ID == 0 {
			return fmt.Errorf("%w: job_done without an id", ErrBadFrame)
		}
	case TypeError:
		if m.Code == "" {
			return fmt.Errorf("%w: error without a code", ErrBadFrame)
		}
	case "":
		return fmt.Errorf("%w: no type", ErrBadFrame)
	default:
		if !knownTypes[m.Type] {
			return fmt.Errorf("%w: unknown type %q", ErrBadFrame, m.Type)
		}
	}
	return nil
}

// mac computes the auth MAC of nonce (hex, as in hello) with token. The token
// itself never leaves this end.
func mac(token string, nonce []byte) string {
	h := hmac.New(sha256.New, []byte(token))
	h.Write(nonce)
	return hex.EncodeToString(h.Sum(nil))
}

// checkMAC tells whether got (hex) is the MAC of nonce with token.
func checkMAC(token string, nonce []byte, got string) bool {
	b, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	h := hmac.New(sha256.New, []byte(token))
	h.Write(nonce)
	return hmac.Equal(b, h.Sum(nil))
}
