package table

import (
	"fmt"
	"image/color"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot size: 16 cm × 14 cm (605×529 pixels in PNG at 96 dpi); the legend
// takes a strip under the axes.
const (
	PlotWidth  = 16 * vg.Centimeter
	PlotHeight = 14 * vg.Centimeter
)

// Fig3 draws the paper's Fig. 3 for t: GFLOPS of the CPU and of each GPU
// kernel on the left axis, the GPU's speed-up over the naive CPU on the
// right, N on a log₂ axis; with ComparePaper, the published curves too.
// format is "png" or "svg".
func (t *Table) Fig3(w io.Writer, format string) error {
	f := &fig3{plot: newFig3Plot(t.Device)}
	f.plot.X.Tick.Marker = t.fig3Ticks()
	f.legend = newFig3Legend()
	gflops, speedups := t.fig3Series()
	if err := f.scaleAxes(gflops, speedups); err != nil {
		return err
	}
	if err := f.addCurves(gflops, speedups); err != nil {
		return err
	}
	return f.encode(w, format)
}

// fig3 is Fig. 3 while it is being built: the plot, its legend, and how
// the speed-up curves map onto the GFLOPS axis.
type fig3 struct {
	plot   *plot.Plot
	legend plot.Legend
	// entries counts the legend's curves; it sets the legend strip's height.
	entries int
	// speedupMin and speedupMax span the right axis in whole decades;
	// speedupMin is 0 when there are no speed-ups to draw.
	speedupMin, speedupMax float64
	// toLeft maps a speed-up onto the GFLOPS axis's coordinates.
	toLeft func(float64) float64
}

// kernelPalette colours the GPU kernels' curves, in order, repeating.
var kernelPalette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{148, 103, 189, 255}, color.RGBA{255, 127, 14, 255},
}

// newFig3Plot makes the empty figure: its title naming device, the axis
// labels, and the log scales of both axes.
func newFig3Plot(device string) *plot.Plot {
	p := plot.New()
	if _, rest, ok := strings.Cut(device, " | "); ok {
		device = rest // the renderer names the GPU; the vendor adds width only
	}
	p.Title.Text = "CPU vs GPU matrix multiplication (the paper's Fig. 3)\n" + strings.ReplaceAll(device, " | ", ", ")
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.Text = "N (N×N matrices)"
	p.Y.Label.Text = "GFLOPS"
	p.X.Scale = plot.LogScale{}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	return p
}

// fig3Ticks returns one N-axis tick per matrix size in t's rows and, with
// ComparePaper, in the paper's rows.
func (t *Table) fig3Ticks() plot.ConstantTicks {
	ns := map[int]bool{}
	for _, r := range t.Rows {
		ns[r.N] = true
	}
	if t.ComparePaper {
		for _, r := range PaperRows() {
			ns[r.N] = true
		}
	}
	var ticks []plot.Tick
	for _, n := range slices.Sorted(maps.Keys(ns)) { // sorted: the same table gives the same SVG
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: strconv.Itoa(n)})
	}
	return plot.ConstantTicks(ticks)
}

// newFig3Legend makes the empty legend, its entries anchored top left.
func newFig3Legend() plot.Legend {
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(8)
	return legend
}

// fig3Series returns the figure's curves: those in GFLOPS (left axis) and
// the speed-ups over the naive CPU (right axis), in legend order.
func (t *Table) fig3Series() (gflops, speedups []series) {
	gflops = t.cpuSeries()
	kernelGFLOPS, kernelSpeedups := t.kernelSeries()
	gflops = append(gflops, kernelGFLOPS...)
	speedups = append(speedups, kernelSpeedups...)
	if t.ComparePaper {
		paperGFLOPS, paperSpeedup := paperSeries()
		gflops = append(gflops, paperGFLOPS...)
		speedups = append(speedups, paperSpeedup)
	}
	return gflops, speedups
}

// cpuSeries returns the GFLOPS curves of the naive CPU product and of
// gonum's Sgemm, over the rows where each was measured.
func (t *Table) cpuSeries() []series {
	cpu := series{name: "CPU naive (Algorithm 3), GFLOPS", color: color.Black, shape: draw.BoxGlyph{}}
	gon := series{name: "CPU gonum Sgemm, all cores, GFLOPS", color: color.Gray{110}, shape: draw.PyramidGlyph{}}
	for _, r := range t.Rows {
		if r.CPUGFLOPS > 0 {
			cpu.pts = append(cpu.pts, plotter.XY{X: float64(r.N), Y: r.CPUGFLOPS})
		}
		if r.GonumGFLOPS > 0 {
			gon.pts = append(gon.pts, plotter.XY{X: float64(r.N), Y: r.GonumGFLOPS})
		}
	}
	return []series{cpu, gon}
}

// kernelSeries returns, for each GPU kernel of t, its GFLOPS curve and its
// speed-up over the naive CPU, over the rows where it ran.
func (t *Table) kernelSeries() (gflops, speedups []series) {
	for i, k := range t.kernels() {
		g := series{name: "GPU " + k + ", GFLOPS", color: kernelPalette[i%len(kernelPalette)], shape: draw.CircleGlyph{}}
		s := series{name: "speed-up of " + k + " over naive CPU (right axis)", color: kernelPalette[i%len(kernelPalette)],
			dashes: []vg.Length{vg.Points(4), vg.Points(2)}, shape: draw.CrossGlyph{}}
		for _, r := range t.Rows {
			res, ok := r.gpu(k)
			if !ok || res.GFLOPS <= 0 {
				continue
			}
			g.pts = append(g.pts, plotter.XY{X: float64(r.N), Y: res.GFLOPS})
			if v := r.SpeedupNaive(res); v > 0 {
				s.pts = append(s.pts, plotter.XY{X: float64(r.N), Y: v})
			}
		}
		gflops = append(gflops, g)
		speedups = append(speedups, s)
	}
	return gflops, speedups
}

// paperSeries returns the published curves: the paper's GPU and CPU
// GFLOPS, and its speed-up.
func paperSeries() (gflops []series, speedup series) {
	pg := series{name: "paper GPU (Quadro 4000), GFLOPS", color: color.RGBA{140, 86, 75, 255}, dashes: []vg.Length{vg.Points(1), vg.Points(2)}, shape: draw.RingGlyph{}}
	pc := series{name: "paper CPU, GFLOPS", color: color.RGBA{140, 140, 140, 255}, dashes: []vg.Length{vg.Points(1), vg.Points(2)}, shape: draw.SquareGlyph{}}
	ps := series{name: "paper speed-up (right axis)", color: color.RGBA{140, 86, 75, 255}, dashes: []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)}, shape: draw.CrossGlyph{}}
	for _, r := range PaperRows() {
		pg.pts = append(pg.pts, plotter.XY{X: float64(r.N), Y: r.GPUGF})
		pc.pts = append(pc.pts, plotter.XY{X: float64(r.N), Y: r.CPUGFLOPS})
		ps.pts = append(ps.pts, plotter.XY{X: float64(r.N), Y: r.Speedup})
	}
	return []series{pg, pc}, ps
}

// scaleAxes sets the GFLOPS axis to whole decades around gflops and maps
// the decades around speedups log-linearly onto the same range. It fails
// when there is no GFLOPS figure to plot.
func (f *fig3) scaleAxes(gflops, speedups []series) error {
	gmin, gmax := extent(gflops)
	smin, smax := extent(speedups)
	if gmin <= 0 {
		return fmt.Errorf("table: nothing to plot")
	}
	gmin, gmax = decades(gmin, gmax)
	f.plot.Y.Min, f.plot.Y.Max = gmin, gmax
	f.toLeft = func(v float64) float64 { return v } // identity until speed-ups exist
	if smin > 0 {
		smin, smax = decades(smin, smax)
		a := (math.Log(gmax) - math.Log(gmin)) / (math.Log(smax) - math.Log(smin))
		f.toLeft = func(v float64) float64 { return math.Exp(math.Log(gmin) + a*(math.Log(v)-math.Log(smin))) }
	}
	f.speedupMin, f.speedupMax = smin, smax
	return nil
}

// addCurves adds the GFLOPS curves as they are and the speed-up curves
// mapped onto the GFLOPS axis, each to the plot and to the legend.
func (f *fig3) addCurves(gflops, speedups []series) error {
	for _, s := range gflops {
		if err := f.addCurve(s, func(v float64) float64 { return v }); err != nil {
			return err
		}
	}
	for _, s := range speedups {
		if err := f.addCurve(s, f.toLeft); err != nil {
			return err
		}
	}
	return nil
}

// addCurve adds s, its Y values passed through mapY, to the plot as a line
// with point markers and to the legend; a series with no points is left out.
func (f *fig3) addCurve(s series, mapY func(float64) float64) error {
	if len(s.pts) == 0 {
		return nil
	}
	pts := make(plotter.XYs, len(s.pts))
	for i, xy := range s.pts {
		pts[i] = plotter.XY{X: xy.X, Y: mapY(xy.Y)}
	}
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, l.Dashes, l.Width = s.color, s.dashes, vg.Points(1.2)
	sc.Color, sc.Shape, sc.Radius = s.color, s.shape, vg.Points(2.5)
	f.plot.Add(l, sc)
	f.legend.Add(s.name, l, sc)
	f.entries++
	return nil
}

// encode draws the figure on a PlotWidth × PlotHeight canvas of format
// ("png", "svg", …): the axes above, a margin at the right for the
// speed-up axis, the legend in a strip below; then writes it to w.
func (f *fig3) encode(w io.Writer, format string) error {
	c, err := draw.NewFormattedCanvas(PlotWidth, PlotHeight, format)
	if err != nil {
		return fmt.Errorf("table: plot format %q: %w", format, err)
	}
	dc := draw.New(c)
	right := vg.Centimeter * 1.6
	legendH := vg.Length(f.entries)*vg.Points(10) + vg.Points(6)
	inner := draw.Crop(dc, 0, -right, legendH, 0)
	f.plot.Draw(inner)
	f.legend.Draw(draw.Crop(dc, vg.Centimeter, 0, 0, -(PlotHeight - legendH)))
	if f.speedupMin > 0 {
		drawRightAxis(f.plot, inner, dc, f.speedupMin, f.speedupMax, f.toLeft)
	}
	_, err = c.WriteTo(w)
	return err
}

// drawRightAxis draws the speed-up axis in the right margin of full, beside
// the data area of p drawn in inner.
func drawRightAxis(p *plot.Plot, inner, full draw.Canvas, smin, smax float64, toLeft func(float64) float64) {
	da := p.DataCanvas(inner)
	_, ty := p.Transforms(&da)
	x := da.Max.X
	sty := draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}
	full.StrokeLine2(sty, x, da.Min.Y, x, da.Max.Y)
	txt := p.Y.Tick.Label
	txt.XAlign = draw.XLeft
	txt.YAlign = draw.YCenter
	for v := smin; v <= smax*1.0001; v *= 10 {
		y := ty(toLeft(v))
		full.StrokeLine2(sty, x, y, x+vg.Points(4), y)
		full.FillText(txt, vg.Point{X: x + vg.Points(6), Y: y}, strconv.FormatFloat(v, 'f', -1, 64)+"×")
	}
	lab := p.Y.Label.TextStyle
	lab.Rotation = -math.Pi / 2
	lab.XAlign = draw.XCenter
	lab.YAlign = draw.YCenter
	full.FillText(lab, vg.Point{X: full.Max.X - vg.Points(10), Y: (da.Min.Y + da.Max.Y) / 2}, "speed-up over naive CPU")
}

// series is one curve of the figure.
type series struct {
	name   string
	pts    plotter.XYs
	color  color.Color
	dashes []vg.Length
	shape  draw.GlyphDrawer
}

// extent returns the smallest and largest positive Y of ss (0, 0 if none).
func extent(ss []series) (lo, hi float64) {
	for _, s := range ss {
		for _, p := range s.pts {
			if p.Y <= 0 {
				continue
			}
			if lo == 0 || p.Y < lo {
				lo = p.Y
			}
			if p.Y > hi {
				hi = p.Y
			}
		}
	}
	return lo, hi
}

// decades widens [lo, hi] to whole powers of ten.
func decades(lo, hi float64) (float64, float64) {
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}
