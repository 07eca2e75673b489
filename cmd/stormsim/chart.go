package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chartFormats are the formats every chart is written in: PNG to look at,
// SVG to zoom into.
var chartFormats = []string{"png", "svg"}

// writeStormChart draws, for run 0 of each strategy without a budget, the
// arrivals at the server per window over time: one panel per strategy,
// stacked on a shared time axis and a shared count axis, with the server's
// capacity as a line. Synchronized retries show as tall spikes far above
// it; spread retries as low grass beneath it.
func writeStormChart(dir string, cfg stormConfig, rows []stormRow) error {
	var panels []stormRow
	var end time.Duration
	for _, r := range rows {
		if !r.Budget {
			panels = append(panels, r)
			end = max(end, r.Sample.Done)
		}
	}
	end += cfg.Window + end/50
	plots := make([][]*plot.Plot, len(panels))
	for i, r := range panels {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: peak %d per window, all done at %s", r.Strategy, r.Sample.Peak, seconds(r.Sample.Done))
		p.Y.Label.Text = fmt.Sprintf("arrivals per %v", cfg.Window)
		p.X.Min, p.X.Max = 0, end.Seconds()
		p.Y.Min, p.Y.Max = 0, float64(cfg.Clients)
		if i == len(panels)-1 {
			p.X.Label.Text = "time since the network went down (s)"
		}
		p.Add(plotter.NewGrid())

		steps, err := plotter.NewLine(arrivalSteps(r.Sample.Arrivals, cfg.Window))
		if err != nil {
			return err
		}
		steps.StepStyle = plotter.PostStep
		steps.Color = plotutil.Color(i)
		steps.FillColor = plotutil.Color(i)
		capacity := plotter.NewFunction(func(float64) float64 { return float64(cfg.Capacity) })
		capacity.Color = color.RGBA{R: 200, A: 255}
		capacity.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		capacity.Width = vg.Points(1)
		outage, err := plotter.NewPolygon(plotter.XYs{
			{X: 0, Y: 0}, {X: cfg.Outage.Seconds(), Y: 0},
			{X: cfg.Outage.Seconds(), Y: float64(cfg.Clients)}, {X: 0, Y: float64(cfg.Clients)},
		})
		if err != nil {
			return err
		}
		outage.Color = color.Gray{Y: 225}
		outage.LineStyle.Width = 0
		p.Add(outage, steps, capacity)
		if i == 0 {
			p.Legend.Add("network down: attempts fail before reaching the server", outage)
			p.Legend.Add("arrivals at the server per window", steps)
			p.Legend.Add(fmt.Sprintf("server capacity: %d per window, the rest fail", cfg.Capacity), capacity)
			p.Legend.Top = true
		}
		plots[i] = []*plot.Plot{p}
	}

	title := fmt.Sprintf("Scenario A: %d clients fail together at t=0, the network returns at %v (run 0, no budget)",
		cfg.Clients, cfg.Outage)
	w, h := 24*vg.Centimeter, vg.Length(len(panels))*5*vg.Centimeter+vg.Centimeter
	return saveStacked(filepath.Join(dir, "storm_arrivals"), w, h, title, plots)
}

// arrivalSteps turns counts per window into the corners of a step line
// that drops back to zero after the last window.
func arrivalSteps(arrivals []int, window time.Duration) plotter.XYs {
	xys := make(plotter.XYs, 0, len(arrivals)+1)
	for w, n := range arrivals {
		xys = append(xys, plotter.XY{X: (time.Duration(w) * window).Seconds(), Y: float64(n)})
	}
	return append(xys, plotter.XY{X: (time.Duration(len(arrivals)) * window).Seconds()})
}

// writeContentionCharts draws scenario B as the post does: mean write
// calls, and mean completion time, against the number of clients, one line
// per strategy.
func writeContentionCharts(dir string, cfg contentionConfig, points []contentionPoint) error {
	charts := []struct {
		file, title, ylabel string
		log                 bool
		value               func(contentionPoint) float64
	}{
		{"contention_calls", "Scenario B: write calls until every client has written once",
			"write calls (mean)", false, func(p contentionPoint) float64 { return p.Calls }},
		{"contention_time", "Scenario B: time until every client has written once",
			"completion time (time units, mean, log scale)", true, func(p contentionPoint) float64 { return float64(p.Time) / float64(unit) }},
	}
	names, grid := contentionGrid(points)
	for _, c := range charts {
		p := plot.New()
		p.Title.Text = c.title
		p.X.Label.Text = fmt.Sprintf("clients (N); means of %d runs", cfg.Runs)
		p.Y.Label.Text = c.ylabel
		p.X.Tick.Marker = clientTicks(cfg.Clients)
		p.Y.Tick.Marker = wholeTicks
		p.Legend.Top, p.Legend.Left = true, true
		value := c.value
		if c.log {
			// NoJitter takes ten times longer than the rest: on a linear
			// axis the jitters would be one flat line at the bottom. The
			// chart plots log10 on a linear axis with ticks labelled in
			// time units, because gonum's LogScale centres the axis label
			// on the linear midpoint and pushes the plot down.
			value = func(p contentionPoint) float64 { return math.Log10(c.value(p)) }
			p.Y.Tick.Marker = logTicks
			p.Legend.Top, p.Legend.Left = false, false
			p.Legend.YOffs = vg.Points(6)
		} else {
			p.Y.Min = 0
		}
		p.Add(plotter.NewGrid())
		for si, name := range names {
			xys := make(plotter.XYs, len(cfg.Clients))
			for ni, n := range cfg.Clients {
				xys[ni] = plotter.XY{X: float64(n), Y: value(grid[n][si])}
			}
			line, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			line.Color, pts.Color = plotutil.Color(si), plotutil.Color(si)
			line.Dashes = plotutil.Dashes(si)
			pts.Shape = plotutil.Shape(si)
			p.Add(line, pts)
			p.Legend.Add(name, line, pts)
		}
		if err := saveFigure(filepath.Join(dir, c.file), 16*vg.Centimeter, 11*vg.Centimeter, p.Draw); err != nil {
			return err
		}
	}
	return nil
}

// clientTicks marks every N on the axis and labels at most ten of them.
func clientTicks(ns []int) plot.Ticker {
	every := (len(ns) + 9) / 10
	ticks := make(plot.ConstantTicks, len(ns))
	for i, n := range ns {
		ticks[i].Value = float64(n)
		if i%every == 0 {
			ticks[i].Label = strconv.Itoa(n)
		}
	}
	return ticks
}

// wholeTicks label every 1, 2 or 5 times a power of ten, at most six
// labels, with no more decimals than the step has: gonum's default ticks
// would label 1000, 4000, 7000.
var wholeTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'f', -1, 64)}}
	}
	var step float64
	for _, m := range []float64{1, 2, 5, 10, 20, 50} {
		step = math.Pow10(int(math.Floor(math.Log10(hi-lo)))-1) * m
		if (hi-lo)/step <= 5 {
			break
		}
	}
	// A minor tick halfway between labels; counting in half steps keeps
	// the values free of accumulated rounding.
	decimals := max(0, -int(math.Floor(math.Log10(step))))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step * 2); i*step/2 <= hi; i++ {
		t := plot.Tick{Value: i * step / 2}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', decimals, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
})

// logTicks are the ticks of an axis that shows log10 of its values: a
// tick at each whole value, labelled at 1, 2 and 5 times each power of ten.
var logTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for p := math.Pow10(int(math.Floor(lo))); p <= math.Pow10(int(math.Ceil(hi))); p *= 10 {
		for m := 1; m < 10; m++ {
			v := p * float64(m)
			if math.Log10(v) < lo || math.Log10(v) > hi {
				continue
			}
			t := plot.Tick{Value: math.Log10(v)}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
})

// saveFigure draws a w×h figure once per chart format, to base plus the
// format's extension.
func saveFigure(base string, w, h vg.Length, drawFig func(draw.Canvas)) error {
	for _, format := range chartFormats {
		c, err := draw.NewFormattedCanvas(w, h, format)
		if err != nil {
			return err
		}
		drawFig(draw.New(c))
		if err := writeTo(base+"."+format, c); err != nil {
			return err
		}
	}
	return nil
}

func writeTo(path string, c io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// saveStacked saves plots, one column of them, under a title, as
// saveFigure does.
func saveStacked(base string, w, h vg.Length, title string, plots [][]*plot.Plot) error {
	return saveFigure(base, w, h, func(dc draw.Canvas) {
		const titleSpace = 24
		sty := draw.TextStyle{
			Color:   color.Black,
			Font:    font.From(plot.DefaultFont, 12),
			Handler: plot.DefaultTextHandler,
			XAlign:  draw.XCenter,
			YAlign:  draw.YTop,
		}
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - 6}, title)
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(8), PadTop: titleSpace,
			PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
		canvases := plot.Align(plots, tiles, dc)
		for i := range plots {
			plots[i][0].Draw(canvases[i][0])
		}
	})
}
