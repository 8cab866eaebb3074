package report

// Validation is the outcome of a size's data check (--validate), made
// after its measured loop and never inside it. A validation pass moves
// Rounds messages per QP and direction with the test's own operation,
// QPs and size, each filled with a pattern of its own (a function of a
// per-size seed, the direction, the QP, the round and the byte offset),
// and the receiving side compares every byte; an atomic test's pass
// chains compare-and-swaps or fetch-and-adds through one target word per
// QP, and both the target's final value and each fetched value are
// checked. A FETCH_AND_ADD test's measured run is checked too: its
// targets must hold the count of adds that reached them.
type Validation struct {
	// Rounds is the messages per QP and direction of the pass.
	Rounds int `json:"rounds"`
	// Messages and Bytes count what the pass checked: messages, and
	// payload bytes compared.
	Messages int    `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// Counters is the number of FETCH_AND_ADD target words of the measured
	// run that were checked.
	Counters int `json:"counters,omitempty"`
	// OK: every check agreed.
	OK bool `json:"ok"`
	// Mismatch is the first disagreement found.
	Mismatch *Mismatch `json:"mismatch,omitempty"`
}

// Mismatch is the first place where checked data differed from what was
// sent.
type Mismatch struct {
	// Check is "pass" (a message of the validation pass), "target" (an
	// atomic's target word after a round of the pass), "fetched" (the
	// value an atomic of the pass returned) or "counters" (the targets of
	// the measured run's FETCH_AND_ADDs).
	Check string `json:"check"`
	// Direction is where the data went: "client to server" or "server to
	// client"; Checker the end that found the difference.
	Direction string `json:"direction"`
	Checker   string `json:"checker"`
	// QP and Round identify the message of the pass (0-based).
	QP    int `json:"qp"`
	Round int `json:"round"`
	// Offset is the byte offset of the first difference within the
	// message, or within the target area for "counters".
	Offset uint64 `json:"offset"`
	// Expected and Got are the bytes from Offset (at most 8) as
	// hexadecimal, or the 64-bit values of an atomic target.
	Expected string `json:"expected"`
	Got      string `json:"got"`
	// Note says what the bytes found look like, when known: another QP's
	// or an earlier round's data (misplaced, stale), zeros (never written).
	Note string `json:"note,omitempty"`
}

// PortCounters are the changes of each end's port counters over one size.
// In loopback both ends use one device: its counters are the client's.
type PortCounters struct {
	Client *CounterDeltas `json:"client,omitempty"`
	Server *CounterDeltas `json:"server,omitempty"`
}

// CounterDeltas are the changes of one port's error and retransmission
// counters (those of /sys/class/infiniband/DEV/ports/N/hw_counters and
// counters whose names speak of retries, timeouts, sequence errors,
// duplicates, RNR, NAKs, errors, discards, drops or downed links).
type CounterDeltas struct {
	// Watched is how many such counters the port exposes.
	Watched int `json:"watched"`
	// Deltas holds those that changed, by name: how much each grew.
	Deltas map[string]uint64 `json:"deltas,omitempty"`
}
