// Package blame says, from one figure of every link of a mesh (rdmabench
// mesh's, or an agent's links to its peers: Judge), which links are bad
// and whose fault that is: one end's (a rank slow with most of its peers),
// the link's own, or a busy moment's (a round slow as a whole).
// The rules, with no fixed cut-off but the multiplier:
//
//   - The fleet is every measured link, seen from each rank: a rank's
//     median is that of its links (both directions), the fleet median the
//     median of the ranks' medians, and the spread the median of the
//     ranks' median absolute deviations (of the logarithms of their links'
//     figures from the fleet median) times 1.4826: a standard deviation for
//     normal noise, as a fraction of the figure; at least
//     log(1+MinSpread) and, with MaxSpread, at most log(1+MaxSpread).
//     Ranks whose median is worse than the fleet median by a spread are
//     suspects: when at least 3 ranks are left without them, median and
//     spread are those of the links of the rest. So one slow rank of
//     four, half of the links, moves neither, though a quarter of its
//     peers' links are its.
//   - A link is bad when its figure is worse than its baseline (above it
//     for a latency, below for a bandwidth) by more than Multiplier
//     spreads. The baseline is the fleet median, or its round's median
//     when its round was slow as a whole.
//   - A round is slow as a whole when the median of its links is bad
//     against the fleet's. Its links of ranks at fault (below) are left out
//     of that median, and it is judged only with links of at least 3
//     pairs: a round of one or two pairs is its pairs.
//   - A rank is at fault when its links are bad with at least half of its
//     measured peers, and with at least 2 of them. Its bad links are its
//     verdict, not the links'. A bad link neither of whose ends is at fault
//     is the link's.
//   - Retested suspects (Verdicts.Suspects, retested by the caller, pkg/mesh
//     in rounds of their own, then Verdicts.Retested) that measure good
//     against the fleet are flaky, not bad: a link whose retest is good, a
//     rank more than half of whose retests are.
//   - With the switches over each rank (Input.Switches, from the
//     operator's topology), links are grouped by the switches they cross:
//     a switch's cross-switch links have one end under it (they go
//     through its uplinks), its inner links both. A switch is at fault
//     when more than half of its cross-switch links are bad, from at
//     least 2 of its hosts and most of those, while fewer than half of
//     its inner links are, and fewer than half of the links that do not
//     go through it: its hosts are good inside it, the rest of the fabric
//     is good, its uplinks are not. Switches are found one at a time, the
//     worst first; a switch's cross-switch links are its verdict, and the
//     ranks, rounds and switches after it are judged without them. Two
//     switches whose cross-switch links are the same links (two leaves
//     under one spine) are one verdict naming both: the links cannot tell
//     them apart. One slow host makes a share of its leaf's uplinks' links
//     bad, never most of its hosts': it is the host's.
//   - With Options.FleetCheck, a fleet that cannot be judged is said to be
//     so (Verdicts.Unjudged) and gets no verdict: too noisy (its spread
//     past Noisy, 100%, unless MaxSpread bounds it), split in two clusters
//     (a gap of at least 2× and past Multiplier spreads, each side a
//     quarter of the links) whose slow side no rank, switch or slow round
//     explains, or, when the caller knows the figures measure something
//     else (Input.Crowded: more spinning ranks than cores on a host), any
//     verdict at all. A fleet of 2 ranks is never said to be: no link of
//     it can stand out, whatever the noise.
//
// Figures that are not positive, NaN or infinite are not judged: a link
// that failed is the mesh's failure, not a figure.
package blame
