package workloads

// perftest's BW peak, from checkpoints. perftest timestamps every post and
// every completion and takes, over every pair of a post i and a later
// completion j, the fastest (j-i+1 messages over tcompleted[j] -
// tposted[i]); it gives up past 20000 iterations and in duration mode. An
// RDMA sender here takes a checkpoint between calls of its timed loop
// instead (a few per size, none inside the loop): when it was, how many
// messages its QPs had posted and how many had completed. Between two
// checkpoints a and b, the messages posted after a and complete by b moved
// in b.at - a.at at most, so every stretch is one of perftest's, or
// slower: the peak reads at or below perftest's for the same run, never
// above.

// checkpoint is where a bandwidth sender stood between two calls of its
// timed loop.
type checkpoint struct {
	at        uint64 // ns, on the loops' clock
	posted    uint64 // work requests posted, all QPs, since the loop was made
	completed uint64 // of them, completed
}

// peakSpan is how many checkpoints back a stretch may start: stretches
// longer than that (in a long duration run) are as fast as the run's
// average, which the peak never falls below anyway.
const peakSpan = 256

// peakCheckpoints is how many checkpoints a sender takes over a size's
// measured messages in iterations mode, at most; peakStep the fewest
// completions between two, so that a checkpoint (a return from the loop
// and a call into it, while the QPs' queues stay full) costs the stream
// nothing it could measure.
const (
	peakCheckpoints = 128
	peakStep        = 256
)

// peakRate is the most messages per second over the stretches between
// checkpoints (each ends at a later checkpoint than it starts, within
// peakSpan of it): the messages posted after its start and complete by
// its end, over its length. 0 with fewer than two checkpoints or no
// stretch that moved a message.
func peakRate(cps []checkpoint) float64 {
	best := 0.0
	for b := 1; b < len(cps); b++ {
		for a := max(0, b-peakSpan); a < b; a++ {
			if cps[b].at <= cps[a].at || cps[b].completed <= cps[a].posted {
				continue
			}
			r := float64(cps[b].completed-cps[a].posted) / (float64(cps[b].at-cps[a].at) / 1e9)
			best = max(best, r)
		}
	}
	return best
}

// peakStream is a stream that takes checkpoints (see peakRate).
type peakStream interface {
	// peak is the most messages per second of the stretches of its
	// measured messages; ok false where it took too few checkpoints.
	peak() (msgsPerS float64, ok bool)
}
