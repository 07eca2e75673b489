package main

import (
	"fmt"
	"image/color"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writeOutageChart draws the hard outage: for each control, the attempts
// that reach the backend per second and the calls that succeed per
// second, on a shared time axis, with the outage shaded.
func writeOutageChart(dir string, l load, runs []guardRun) error {
	title := fmt.Sprintf("Hard outage: %d callers, %.0f calls/s, 3 attempts per call; the backend fails everything for %.0f s, then heals",
		l.Clients, float64(l.Clients)/l.Every.Seconds(), l.DownUntil.Seconds())
	return writePanels(filepath.Join(dir, "outage"), title, l, runs, 0, func(b bucket) (float64, float64) {
		return float64(b.Sent), float64(b.Succeeded)
	}, "attempts reaching the backend per second", "calls that succeed per second")
}

// writeOverloadChart draws the overload: for each control, the attempts
// that reach the backend and those it serves, per second, with its
// capacity.
func writeOverloadChart(dir string, l load, runs []guardRun) error {
	title := fmt.Sprintf("Overload: the backend serves C = %d attempts/s; %d callers offer %.0fC, 3 attempts per call",
		overloadCapacity, l.Clients, float64(l.Clients)/l.Every.Seconds()/overloadCapacity)
	return writePanels(filepath.Join(dir, "overload"), title, l, runs, overloadCapacity, func(b bucket) (float64, float64) {
		return float64(b.Sent), float64(b.Accepted)
	}, "attempts reaching the backend per second", "attempts it serves per second")
}

// writePanels stacks one panel per run on shared axes: two per-second
// series, value gives both, an optional capacity line, and the outage, if
// any, shaded.
func writePanels(base, title string, l load, runs []guardRun, capacity float64, value func(bucket) (float64, float64), first, second string) error {
	series := make([][2]plotter.XYs, len(runs))
	var top float64
	for i, run := range runs {
		for s, b := range perSecond(run, l) {
			a, c := value(b)
			series[i][0] = append(series[i][0], plotter.XY{X: float64(s), Y: a})
			series[i][1] = append(series[i][1], plotter.XY{X: float64(s), Y: c})
			top = max(top, a, c)
		}
	}
	top *= 1.5 // room for the legend above the busiest panel
	plots := make([][]*plot.Plot, len(runs))
	for i, run := range runs {
		p := plot.New()
		p.Title.Text = run.Control.Name
		p.Y.Label.Text = "per second"
		p.X.Min, p.X.Max = 0, l.Length.Seconds()
		p.Y.Min, p.Y.Max = 0, top
		p.Y.Tick.Marker = wholeTicks
		if i == len(runs)-1 {
			p.X.Label.Text = "time (s)"
		}
		p.Add(plotter.NewGrid())
		if l.DownUntil > 0 {
			outage, err := plotter.NewPolygon(plotter.XYs{
				{X: 0, Y: 0}, {X: l.DownUntil.Seconds(), Y: 0}, {X: l.DownUntil.Seconds(), Y: top}, {X: 0, Y: top},
			})
			if err != nil {
				return err
			}
			outage.Color = color.Gray{Y: 225}
			outage.LineStyle.Width = 0
			p.Add(outage)
			if i == 0 {
				p.Legend.Add("backend down", outage)
			}
		}
		for j, xys := range series[i] {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			line.Color = plotutil.Color(j)
			line.Width = vg.Points(1)
			p.Add(line)
			if i == 0 {
				p.Legend.Add([]string{first, second}[j], line)
			}
		}
		if capacity > 0 {
			addCapacity(p, capacity, i == 0)
		}
		p.Legend.Top = true
		plots[i] = []*plot.Plot{p}
	}
	w, h := 24*vg.Centimeter, vg.Length(len(runs))*4.5*vg.Centimeter+vg.Centimeter
	return saveStacked(base, w, h, title, plots)
}

// addCapacity draws a capacity of c per second across p, as a dashed red
// line, in the legend if legend is set.
func addCapacity(p *plot.Plot, c float64, legend bool) {
	f := plotter.NewFunction(func(float64) float64 { return c })
	f.Color = color.RGBA{R: 200, A: 255}
	f.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(f)
	if legend {
		p.Legend.Add(fmt.Sprintf("capacity C = %g/s", c), f)
	}
}
