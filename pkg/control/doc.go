// Package control is the out-of-band TCP protocol between an rdmabench
// client (`rdmabench <test> HOST`) and a persistent server (`rdmabench
// serve`): the client sends the whole test spec, the server runs the test's
// server end through an injected [Handler], and the two ends exchange the
// workloads package's messages (endpoints, barriers, results) as opaque
// "exchange" frames. The package does not import pkg/workloads: a spec travels
// as json.RawMessage and a [Session] (client side) or [Transport] (server
// side) carries the exchange messages, so workloads.NewLink(session) is the
// test's Link. It is pure Go and builds with CGO_ENABLED=0.
//
// # Wire format
//
// Every frame is a 4-byte big-endian length followed by that many bytes of a
// JSON object whose "type" names the message ([Message]). A frame longer
// than the reader's limit (default [DefaultMaxFrame], 1 MiB) is refused
// ([ErrFrameTooLarge]) before its body is read; a zero length, a body that is
// not a JSON object, or an unknown type is [ErrBadFrame]. Every read and
// write has a deadline.
//
// A connection goes:
//
//	client -> server  {"type":"hello","protocol":2,"version":"v1.3.0","timeout_ms":10000}
//	server -> client  {"type":"hello","protocol":2,"version":"v1.3.0","hostname":"node2","nonce":"<64 hex>","token_required":true,"features":["kept"],"timeout_ms":10000}
//	client -> server  {"type":"auth","mac":"<hex HMAC-SHA256(key=token, msg=nonce bytes)>"}   (only if token_required)
//	server -> client  {"type":"accepted"}  or  {"type":"error","code":"version"|"auth"|"protocol"|"limit","message":"..."} and close
//
// The server sends its hello as soon as it accepts the connection, and
// reads the client's after it; the client sends its hello as soon as it
// connects, before it reads the server's (earlier clients waited for it:
// to a server, both are the same stream). The client's hello
// ends with a newline, inside the frame (JSON skips it), so that a server
// of another protocol that waits for its client's first line, as HTTP
// servers do, answers at once. The client reads the server's first bytes
// as a frame: bytes that cannot begin one (the first 4 bytes of any text
// declare a length over the limit) mean the server is no rdmabench server,
// and the client says so with what it answered ([NotServerError],
// [ErrNotServer]): `10.0.0.2:80 is not an rdmabench server: it answered
// "HTTP/1.1 400 Bad Request" (an HTTP server?)`. A server that accepts but
// says nothing is one too, found at the timeout.
//
// then, any number of times:
//
//	client -> server  {"type":"run","test":"write-bw","spec":{...}}
//	server -> client  {"type":"accepted"}  or  {"type":"error","code":"busy"|"spec"|"limit","message":"..."} (the connection stays usable)
//	both ways         {"type":"exchange","body":"<base64 of the workloads envelope>"}
//	server -> client  {"type":"done"}  or  {"type":"done","error":"..."} when the server's end of the test returned
//
// A kept probe session is a run that stays open: its spec says
// "keep":true (workloads.Spec.Keep). For tcp-lat, the server's end sends
// one exchange (its TCP port and a token), accepts the client's one
// connection and echoes each message on it until the client closes it;
// between the two the control connection carries only pings, and the
// client times bursts of ping-pongs on the kept socket whenever it likes
// (pkg/watch: one burst a probe). For an RDMA latency test over RC, the
// two ends exchange their QPs' endpoints once; the client then announces
// each burst of write-lat or send-lat in an exchange, for the server's end
// to run its half, while a burst of read-lat or atomic-lat is the client's
// alone. Either way the server says done when the session ends, as after
// any test. A server keeps such sessions only when its hello names the
// test's feature ("kept" for tcp-lat, "kept-write-lat" and so on:
// workloads.KeptFeatureOf; hello's "features", absent from older servers
// of the same version, which would ignore the spec's field and run an
// ordinary test): a client asks no other. pkg/remote names them only on a
// server of several tests at once (an agent's), since one kept session
// would hold a server of one test at a time.
//
// and, on a server that keeps a registry (ServerOptions.Registry: an agent
// started with --registry), any number of times:
//
//	client -> server  {"type":"register","data":{"host":"node2","addr":"10.0.0.2:19515"}}
//	server -> client  {"type":"peers","data":{"self":"10.0.0.2:19515","expiry_ms":30000,"peers":[...]}}  or  {"type":"error","code":"spec"|"limit","message":"..."} (the connection stays usable)
//
// and finally client -> server {"type":"bye"} (the server says bye too when
// it shuts down). After the handshake both ends send {"type":"ping"} every
// keepalive interval (default 1s; an agent's, 4s) and each end fails the
// connection when nothing arrived for its timeout (default 10s):
// [ErrPeerSilent]. Each hello says its sender's timeout (timeout_ms), and
// the other end pings at least twice within it, whatever its own
// keepalive (an older end says none, and is pinged every second at least,
// as before). The client
// also gives up on a server that keeps pinging but does not answer a run
// within twice the timeout (ErrPeerSilent too). A server that sends garbage,
// an oversize frame or a message out of order fails the client's call with
// [ErrBadFrame], [ErrFrameTooLarge] or [ErrProtocol], naming the server; the
// client is then unusable and every later call returns that error. A client
// that disconnects, goes silent or misbehaves during a test makes the server
// cancel the test's context and wait for the handler to return; the server
// runs one test at a time (ServerOptions.MaxTests: several) and answers a
// run beyond them with "busy".
// An "error" frame with code "protocol", "version" or "auth" is followed by
// the sender closing the connection.
//
// # Versions
//
// The hello's protocol is buildinfo.ProtocolVersion (`rdmabench version`
// prints it); two ends of different versions refuse each other by name
// ([VersionError]). Version 2 changed the spec a run carries: warmup,
// inline and gid_index are left out for "the test's default", where
// version 1 sent -1. The registry's peers frame came later in version 2
// and changes no earlier message: only a server with a registry sends it,
// only in answer to a register, which a server without one (of any
// release) answers with a "protocol" error, as before; so the version
// stayed 2, and an agent registering with an older or a registry-less
// agent is told so by name. The hello's features came later too, and
// the kept session with them: an older server sends none, and is never
// asked for one, so the version stayed 2 again. So did the hellos'
// timeout_ms: an older end ignores it and pings every second, as it
// always did, and an end that gets none pings it every second too.
package control
