package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Tools, as the TSV names them.
const (
	perftest  = "perftest"
	rdmabench = "rdmabench"
)

// Figures of one run, in TSV column order.
const (
	figMin = iota // latency min, µs (perftest t_min)
	figP50        // latency median, µs (perftest t_typical)
	figMiB        // bandwidth, MiB/s (perftest "BW average[MB/sec]")
	figMsg        // message rate, millions/s (perftest MsgRate[Mpps])
	nFigs
)

// settingKeys are the settings the script records for each run, in the
// order they are shown, with their column titles.
var settingKeys = []struct{ key, title string }{
	{"n", "iterations"},
	{"warmup", "warm-up"},
	{"tx_depth", "TX depth"},
	{"rx_depth", "RX depth"},
	{"cq_mod", "CQ mod"},
	{"post_list", "post list"},
	{"inline", "inline"},
	{"mtu", "MTU"},
	{"rd_atomic", "rd/atomic"},
	{"qps", "QPs"},
	{"rdma_cm", "rdma_cm"},
}

// measurement is one line of results.tsv: one tool's run in one pair of a row.
type measurement struct {
	Test     string
	Size     int
	Topology string
	Pair     int
	Pos      int
	Tool     string
	OK       bool
	Figs     [nFigs]float64 // NaN: not reported
	Settings string         // as written: key=value,...
	Flags    string
}

var resultColumns = []string{"test", "size", "topology", "pair", "pos", "tool", "status",
	"min_us", "p50_us", "mibps", "mpps", "settings", "flags", "log"}

// parseRuns reads results.tsv.
func parseRuns(r io.Reader) ([]measurement, error) {
	var runs []measurement
	err := eachLine(r, resultColumns, func(f []string) error {
		var x measurement
		var err error
		x.Test, x.Topology, x.Tool = f[0], f[2], f[5]
		if x.Size, err = atoi("size", f[1]); err != nil {
			return err
		}
		if x.Pair, err = atoi("pair", f[3]); err != nil {
			return err
		}
		if x.Pos, err = atoi("pos", f[4]); err != nil {
			return err
		}
		if x.Tool != perftest && x.Tool != rdmabench {
			return fmt.Errorf("tool %q: want %s or %s", x.Tool, perftest, rdmabench)
		}
		if x.OK, err = status(f[6]); err != nil {
			return err
		}
		for i := range nFigs {
			if x.Figs[i], err = figure(resultColumns[7+i], f[7+i]); err != nil {
				return err
			}
		}
		x.Settings, x.Flags = dash(f[11]), dash(f[12])
		runs = append(runs, x)
		return nil
	})
	return runs, err
}

// timeRun is one line of time.tsv: one whole sequence (rdmabench's suite
// or the loop of perftest pairs) and its wall time.
type timeRun struct {
	Pair  int
	Pos   int
	Tool  string
	OK    bool
	WallS float64
}

var timeColumns = []string{"pair", "pos", "tool", "status", "wall_s", "log"}

// parseTimes reads time.tsv.
func parseTimes(r io.Reader) ([]timeRun, error) {
	var runs []timeRun
	err := eachLine(r, timeColumns, func(f []string) error {
		var x timeRun
		var err error
		if x.Pair, err = atoi("pair", f[0]); err != nil {
			return err
		}
		if x.Pos, err = atoi("pos", f[1]); err != nil {
			return err
		}
		x.Tool = f[2]
		if x.Tool != perftest && x.Tool != rdmabench {
			return fmt.Errorf("tool %q: want %s or %s", x.Tool, perftest, rdmabench)
		}
		if x.OK, err = status(f[3]); err != nil {
			return err
		}
		if x.WallS, err = figure("wall_s", f[4]); err != nil {
			return err
		}
		runs = append(runs, x)
		return nil
	})
	return runs, err
}

// eachLine checks the header line against columns, then calls fn with the
// fields of every other line. Empty lines and lines starting with # are
// skipped.
func eachLine(r io.Reader, columns []string, fn func([]string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line, header := 0, false
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Split(text, "\t")
		if !header {
			if strings.Join(f, "\t") != strings.Join(columns, "\t") {
				return fmt.Errorf("line %d: header %q, want %q", line, text, strings.Join(columns, "\t"))
			}
			header = true
			continue
		}
		if len(f) != len(columns) {
			return fmt.Errorf("line %d: %d fields, want %d", line, len(f), len(columns))
		}
		if err := fn(f); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !header {
		return fmt.Errorf("no header line (%s)", strings.Join(columns, " "))
	}
	return nil
}

func atoi(name, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q: want a whole number", name, s)
	}
	return n, nil
}

func status(s string) (bool, error) {
	switch s {
	case "ok":
		return true, nil
	case "fail":
		return false, nil
	}
	return false, fmt.Errorf("status %q: want ok or fail", s)
}

// figure parses a figure; "-" (or empty) is NaN, not reported.
func figure(name, s string) (float64, error) {
	if s == "-" || s == "" {
		return math.NaN(), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
		return 0, fmt.Errorf("%s %q: want a number", name, s)
	}
	return v, nil
}

func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// parseSettings splits key=value,... into a map.
func parseSettings(s string) map[string]string {
	m := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}
