// Package plot draws rdmabench results documents ([report.Document]) as
// SVG charts on one self-contained HTML page, as `rdmabench plot FILE...`
// writes it ([Write]): no script, no network, viewable offline and
// attachable to a CI run. It depends on the model (pkg/report), which does
// not import it. It is pure Go and builds with CGO_ENABLED=0.
//
// The charts, in page order (their kinds are the data-kind attribute of each
// chart, listed in [Kinds]):
//   - [MeshHeatmap]: each matrix of a mesh document (`rdmabench mesh`) as an
//     N×N heatmap, rows the client rank, columns the server rank, each cell
//     coloured by how much worse than the median of all links it is; past
//     [report.MeshAggregateRanks] ranks also, and past
//     [report.MeshRankMatrixRanks] (a summary without rank matrices)
//     instead, the mesh's aggregate: the host matrix and the NIC grid
//     ([HeatmapHosts], [HeatmapRails]);
//   - [StepBandwidth], [StepShare], [StepFairness], [StepLatency]: the
//     steps of a load pattern mesh (`rdmabench mesh --pattern`), one dot
//     per step and receiver (ranks filled, hosts open): the receivers'
//     aggregate, its share of the nominal rate where the devices say it,
//     Jain's index, and the probe's p50 and p99 under the load;
//   - [Spectrum]: the latency percentile spectrum of each test and size,
//     decoded from the results' HdrHistograms;
//   - [LatencyBySize], [BandwidthBySize], [MsgRateBySize]: p50 and p99,
//     Gbit/s and Mmsg/s against message size, for each test run at two
//     sizes or more;
//   - [LatencyByTest], [BandwidthByTest], [MsgRateByTest]: each figure
//     `compare` reads that no chart above draws, one dot per test, size and
//     document, at the median of its runs with its confidence interval;
//   - [BandwidthIntervals], [LatencyIntervals]: bandwidth and latency over
//     time, for each duration-mode (-D) result.
//
// Several documents are overlaid, one colour each; what cannot be drawn is
// listed under the charts with the reason. Every chart and line carries
// data- attributes saying what it shows, so that tests and scripts can
// check a page without reading pixels.
//
// The files: plot.go the page, the charts of figures and their axes;
// heatmap.go the heatmaps of a mesh's rank matrices, their colour scale and
// legend; heatmap_aggregate.go those of its aggregate (the NIC grid, and a
// host matrix of many hosts, drawn as an embedded image); steps.go the
// charts of a load pattern's steps.
package plot
