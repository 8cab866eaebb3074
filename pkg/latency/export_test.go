package latency

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

// RecorderHistogram is the histogram r records into.
func RecorderHistogram(r *Recorder) *hdrhistogram.Histogram { return r.hist }
