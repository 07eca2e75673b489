package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// writeShedCharts draws the charted runs of the shed scenario, one chart
// each for the overload (no shedding, the adaptive Limiter, and it with
// priorities) and the outage (no shedding, the adaptive Limiter): per
// second, the attempts that reach the server and its goodput, with its
// capacity C and, for the outage, the time its work stops shaded.
func writeShedCharts(dir string, res shedResults) error {
	c := res.Config
	rate := c.base(3).rate()
	s := shedSeries(res)
	title := fmt.Sprintf("Shedding at 3C: a server of C = %.0f requests/s and %d clients that honour Retry-After", rate, c.Clients)
	if err := writeShedPanels(filepath.Join(dir, "shed_overload"), title, rate, c.Length, nil, s[0], s[1], s[3]); err != nil {
		return err
	}
	o := c.outage()
	title = fmt.Sprintf("The server's work stops for %.0f s under %.1fC, then resumes; %d clients that honour Retry-After", o.Hang.Seconds(), outageOffered, c.Clients)
	hang := [2]float64{o.HangFrom.Seconds(), (o.HangFrom + o.Hang).Seconds()}
	return writeShedPanels(filepath.Join(dir, "shed_outage"), title, rate, o.Length, &hang, s[4], s[2])
}

func writeShedPanels(base, title string, rate float64, length time.Duration, hang *[2]float64, runs ...series) error {
	end := int(length / time.Second) // calls that ran past the end are left out
	top := 0.0
	for _, r := range runs {
		for _, b := range r.rec.Seconds[:min(end, len(r.rec.Seconds))] {
			top = max(top, float64(b.Arrivals), float64(b.Good))
		}
	}
	top *= 1.4 // room for the legend
	if hang != nil {
		top *= 1.3 // and its fourth line
	}
	plots := make([][]*plot.Plot, len(runs))
	for i, r := range runs {
		p := plot.New()
		p.Title.Text = r.name
		p.Y.Label.Text = "per second"
		p.X.Min, p.X.Max = 0, length.Seconds()
		p.Y.Min, p.Y.Max = 0, top
		p.Y.Tick.Marker = wholeTicks
		if i == len(runs)-1 {
			p.X.Label.Text = "time (s)"
		}
		p.Add(plotter.NewGrid())
		if hang != nil {
			poly, err := plotter.NewPolygon(plotter.XYs{{X: hang[0]}, {X: hang[1]}, {X: hang[1], Y: top}, {X: hang[0], Y: top}})
			if err != nil {
				return err
			}
			poly.Color, poly.LineStyle.Width = color.Gray{Y: 225}, 0
			p.Add(poly)
			if i == 0 {
				p.Legend.Add("server's work stopped", poly)
			}
		}
		var arrivals, good plotter.XYs
		for s, b := range r.rec.Seconds[:min(end, len(r.rec.Seconds))] {
			arrivals = append(arrivals, plotter.XY{X: float64(s), Y: float64(b.Arrivals)})
			good = append(good, plotter.XY{X: float64(s), Y: float64(b.Good)})
		}
		for j, xys := range []plotter.XYs{arrivals, good} {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			line.Color, line.Width = plotutil.Color(j), vg.Points(1)
			p.Add(line)
			if i == 0 {
				p.Legend.Add([]string{"attempts reaching the server", "goodput: served to a client still waiting"}[j], line)
			}
		}
		addCapacity(p, rate, i == 0)
		p.Legend.Top = true
		plots[i] = []*plot.Plot{p}
	}
	w, h := 24*vg.Centimeter, vg.Length(max(len(runs), 2))*5*vg.Centimeter+vg.Centimeter
	return saveStacked(base, w, h, title, plots)
}
