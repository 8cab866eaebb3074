package workloads

// perftest's BW peak, from checkpoints. perftest timestamps every post and
// every completion and takes, over every pair of a post i and a later
// completion j, the fastest (j-i+1 messages over tcompleted[j] -
// tposted[i]); it gives up past 20000 iterations and in duration mode. An
// RDMA sender's timed loop here takes a checkpoint instead after a poll
// that reaped completions, at least 10 µs after the last one, 256 at most
// (thinned as the run grows): when it was, how many messages its QPs had
// posted and how many had completed (verbs.Loop.Checkpoints). Between two
// checkpoints a and b, the messages posted after a and complete by b moved
// in b.at - a.at at most, so every stretch is one of perftest's, or
// slower: the peak reads at or below perftest's for the same run, never
// above.

// checkpoint is where a bandwidth sender stood at one moment of its timed
// loop.
type checkpoint struct {
	at        uint64 // ns, on the loops' clock
	posted    uint64 // work requests posted, all QPs
	completed uint64 // of them, complete
}

// peakRate is the most messages per second over the stretches between
// checkpoints (each from one to a later one: a few hundred checkpoints,
// some ten thousand stretches): the messages posted after its start and
// complete by its end, over its length. 0 with fewer than two checkpoints
// or no stretch that moved a message.
func peakRate(cps []checkpoint) float64 {
	best := 0.0
	for b := 1; b < len(cps); b++ {
		for a := range b {
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
