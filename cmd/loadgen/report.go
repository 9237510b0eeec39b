package main

import (
	"fmt"
	"image/color"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// report is the measured run plus the ceiling and the memory figures.
type report struct {
	When         time.Time
	Machine      string
	Config       runConfig
	Run          *result
	Ceiling      pgbenchResult
	ListRows     int
	ListBytes    int64
	ListGrowthKB int64
	WorkerPeakKB int64
	WorkerConc   int
}

type target struct {
	name, measured, goal string
	ok                   bool
}

func (r *report) targets() []target {
	e2eRatio := r.Run.EndToEndRate / r.Ceiling.AccountTPS
	stageRatio := r.Run.StageRate / r.Ceiling.StageTPS
	return []target{
		{"End-to-end accounts/s ÷ pgbench (same writes)", fmt.Sprintf("%.1f ÷ %.1f = **%.2f**", r.Run.EndToEndRate, r.Ceiling.AccountTPS, e2eRatio), "≥ 0.5", e2eRatio >= 0.5},
		{"Staging requests/s ÷ pgbench (same upsert)", fmt.Sprintf("%.1f ÷ %.1f = **%.2f**", r.Run.StageRate, r.Ceiling.StageTPS, stageRatio), "≥ 0.5", stageRatio >= 0.5},
		{fmt.Sprintf("Status p99 at %d reads/s during creation", r.Config.StatusRate), fmt.Sprintf("p50 %s, **p99 %s**, max %s (%d reads, %d errors)", ms(r.Run.StatusP50), ms(r.Run.StatusP99), ms(r.Run.StatusMax), len(r.Run.StatusLatencies), r.Run.StatusErrors), "p99 ≤ 10 ms", r.Run.StatusP99 <= 10*time.Millisecond && len(r.Run.StatusLatencies) > 0},
		{fmt.Sprintf("Status p99 at %d reads/s: status reads of accounts being created (open-loop)", r.Config.StatusRate), fmt.Sprintf("p50 %s, **p99 %s**, max %s (%d reads, %d errors, %d ticks with none in flight)", ms(r.Run.StatusInFlight.P50), ms(r.Run.StatusInFlight.P99), ms(r.Run.StatusInFlight.Max), r.Run.StatusInFlight.Count, r.Run.StatusInFlight.Errors, r.Run.StatusInFlight.Skipped), "p99 ≤ 10 ms", r.Run.StatusInFlight.P99 <= 10*time.Millisecond && r.Run.StatusInFlight.Count > 0},
		{fmt.Sprintf("API RSS growth listing %d accounts in one call", r.ListRows), fmt.Sprintf("**%.1f MB** for a %.1f MB body", float64(r.ListGrowthKB)/1024, float64(r.ListBytes)/1e6), "< 50 MB", r.ListGrowthKB < 50*1024 && r.ListBytes > 0},
		{fmt.Sprintf("Worker peak RSS at WORKER_CONCURRENCY=%d", r.WorkerConc), fmt.Sprintf("**%.1f MB**", float64(r.WorkerPeakKB)/1024), "< 150 MB", r.WorkerPeakKB > 0 && r.WorkerPeakKB < 150*1024},
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func (r *report) markdown(chart string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark %s\n\n", r.When.Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %s. One `make bench` run: %d accounts (2 customers, 1 supply address, 2 meter points with agreements, 2 notes, 5 opening transactions each), %d parallel partner clients; status read %d times a second throughout creation by each of two open-loop readers (one reads random accounts, the other accounts whose creation is under way: create sent, not COMPLETED yet); then 2 notes and 5 transactions per account after creation (post-import, not part of end-to-end). The ceiling is `pgbench` running the same SQL writes on the same database right after; each measurement starts from a fresh `CHECKPOINT`. The worker runs at `nice 10` with `WORKER_DB_WRITERS` at its default (one per core), as `make run` starts it.\n\n",
		r.Machine, r.Run.Accounts, r.Config.Parallel, r.Config.StatusRate)
	b.WriteString("| target | measured | goal | met |\n|---|---|---|---|\n")
	for _, t := range r.targets() {
		met := "yes"
		if !t.ok {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.name, t.measured, t.goal, met)
	}
	fmt.Fprintf(&b, "\nRun detail: staging %.1f s, creation %.1f s, %d completed, %d failed, %d answers 429; post-import %.1f s (%.0f requests/s), %d post-import errors.\n",
		r.Run.StageSeconds, r.Run.CreateSeconds, r.Run.Completed, r.Run.Failed, r.Run.Throttled, r.Run.PostImportSeconds, r.Run.PostImportRate, r.Run.PostImportErrors)
	fmt.Fprintf(&b, "\n![accounts completed and status latency](%s)\n", chart)
	return b.String()
}

// chart draws accounts completed over time and status-read latency
// percentiles per second.
func (r *report) chart(path string) error {
	done := plot.New()
	done.Title.Text = "Accounts completed"
	done.X.Label.Text = "seconds into creation"
	done.Y.Label.Text = "accounts"
	at := append([]float64(nil), r.Run.CompletedAt...)
	sort.Float64s(at)
	pts := make(plotter.XYs, len(at))
	for i, t := range at {
		pts[i] = plotter.XY{X: t, Y: float64(i + 1)}
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	done.Add(line)

	lat := plot.New()
	lat.Title.Text = "Status-read latency"
	lat.Y.Label.Text = "ms"
	ps := []float64{0.5, 0.9, 0.95, 0.99, 0.999, 1}
	labels := make([]string, len(ps))
	for i, p := range ps {
		labels[i] = fmt.Sprintf("p%g", p*100)
	}
	labels[len(labels)-1] = "max"
	for k, s := range []struct {
		name string
		lat  []time.Duration
		c    color.Color
	}{
		{"random accounts", r.Run.StatusLatencies, color.RGBA{R: 60, G: 120, B: 200, A: 255}},
		{"accounts being created", r.Run.StatusInFlight.Latencies, color.RGBA{R: 220, G: 120, B: 40, A: 255}},
	} {
		bars := make(plotter.Values, len(ps))
		for i, p := range ps {
			bars[i] = float64(percentile(s.lat, p).Microseconds()) / 1000
		}
		bc, err := plotter.NewBarChart(bars, vg.Points(14))
		if err != nil {
			return err
		}
		bc.Color = s.c
		bc.Offset = vg.Points(float64(14*k - 7))
		lat.Add(bc)
		lat.Legend.Add(s.name, bc)
	}
	lat.Legend.Top, lat.Legend.Left = true, true
	lat.NominalX(labels...)

	return writeSideBySide(path, 900, done, lat)
}

// writeSideBySide draws two plots side by side, width points wide, as PNG.
func writeSideBySide(path string, width vg.Length, left, right *plot.Plot) error {
	img := vgimg.New(vg.Points(float64(width)), vg.Points(350))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadY: vg.Points(10), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	canvases := plot.Align([][]*plot.Plot{{left, right}}, tiles, dc)
	left.Draw(canvases[0][0])
	right.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}

func machine() string {
	host, _ := os.Hostname()
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores (%s), %s", host, runtime.NumCPU(), model, runtime.Version())
}
