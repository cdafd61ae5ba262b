package table

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure size: 16 cm × 20 cm (605×756 pixels in PNG at 96 dpi). From the
// top: a title naming the machine, the GFLOPS panel, the speed-up panel
// (both on one N axis), and the legend in a strip below them.
const (
	PlotWidth  = 16 * vg.Centimeter
	PlotHeight = 20 * vg.Centimeter
)

// Fig3 draws the paper's Fig. 3 for t in two panels that share the N axis
// (log₂, one tick per measured size): above, the GFLOPS of the naive CPU
// loop, of gonum's Sgemm and of each GPU kernel; below, each kernel's
// speed-up over the naive CPU loop. With ComparePaper the published curves
// join both panels, over the measured sizes only. What this machine
// measured is drawn solid with filled markers, what the paper published
// dashed with open markers, so the two stay apart in grey print. format is
// "png" or "svg".
func (t *Table) Fig3(w io.Writer, format string) error {
	f, err := t.newFig3()
	if err != nil {
		return err
	}
	c, err := draw.NewFormattedCanvas(PlotWidth, PlotHeight, format)
	if err != nil {
		return fmt.Errorf("table: plot format %q: %w", format, err)
	}
	f.draw(draw.New(c))
	_, err = c.WriteTo(w)
	return err
}

// Line and marker sizes, and the one dash pattern of the figure: only the
// paper's curves are dashed.
var (
	curveWidth  = vg.Points(1.3)
	glyphRadius = vg.Points(2.8)
	paperDashes = []vg.Length{vg.Points(5), vg.Points(3)}
)

// Colours. A kernel's colour is the same in both panels; the paper's GPU
// takes tiled32's colour (it is the paper's kernel) and the paper's CPU the
// naive loop's, so that each published curve sits beside its counterpart.
var (
	kernelPalette = []color.Color{
		color.RGBA{31, 119, 180, 255}, color.RGBA{214, 39, 40, 255}, color.RGBA{44, 160, 44, 255},
		color.RGBA{148, 103, 189, 255}, color.RGBA{255, 127, 14, 255},
	}
	paperGPUColor = color.RGBA{140, 86, 75, 255} // when no tiled32 was measured
	gonumColor    = color.Gray{Y: 120}
	gridColor     = color.Gray{Y: 225}
)

// kernelGlyphs mark the GPU kernels, in order, repeating; past the second
// kernel only the colour tells kernels apart.
var kernelGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, diamondGlyph{}}

// curve is one thing measured or published: its GFLOPS and, for a GPU, its
// speed-up over the naive CPU loop of the same machine, drawn in one style
// in both panels and named once in the legend.
type curve struct {
	name            string
	gflops, speedup plotter.XYs
	color           color.Color
	// glyph marks the points: filled for ours, outlined for the paper's.
	glyph draw.GlyphDrawer
	// published curves are dashed; measured ones solid.
	published bool
}

// fig3 is the figure before it is drawn: title lines, both panels, and the
// curves for the legend.
type fig3 struct {
	title, subtitle []string
	gflops, speedup *plot.Plot
	// yLabels name the panels' y axes; fig3 draws them itself (see
	// drawYLabel).
	yLabels [2]string
	// noSpeedup, when set, is written across the empty speed-up panel.
	noSpeedup   string
	ours, paper []curve
}

// newFig3 builds the figure for t; it fails when t has no GFLOPS figure.
func (t *Table) newFig3() (*fig3, error) {
	ours, paper := t.fig3Curves()
	unmeasured := func(c curve) bool { return len(c.gflops) == 0 && len(c.speedup) == 0 }
	ours = slices.DeleteFunc(ours, unmeasured) // the naive CPU when -cpu-max skipped it everywhere
	all := slices.Concat(ours, paper)
	gmin, gmax := extent(all, func(c curve) plotter.XYs { return c.gflops })
	if gmin <= 0 {
		return nil, fmt.Errorf("table: nothing to plot")
	}
	f := &fig3{ours: ours, paper: paper, yLabels: [2]string{"GFLOPS", "speed-up over naive CPU"}}
	f.title, f.subtitle = t.fig3Title()
	xticks, xmin, xmax := t.fig3SizeAxis()

	f.gflops = newPanel("(a) Throughput: 2N³ floating-point operations / time", "", xticks, xmin, xmax)
	f.gflops.Y.Min, f.gflops.Y.Max = decades(gmin, gmax)
	f.gflops.Y.Tick.Marker = decadeTicks{}
	for _, c := range all {
		addCurve(f.gflops, c, c.gflops)
	}

	f.speedup = newPanel("(b) Speed-up of each GPU over the naive CPU loop of its own machine",
		"N (N×N matrices, log2 scale)", xticks, xmin, xmax)
	f.speedup.Y.Tick.Marker = decadeTicks{suffix: "×"}
	smin, smax := extent(all, func(c curve) plotter.XYs { return c.speedup })
	if smin <= 0 {
		f.noSpeedup = "no speed-ups: the naive CPU loop was not run (-cpu-max)"
		f.speedup.Y.Min, f.speedup.Y.Max = 1, 10
		return f, nil
	}
	f.speedup.Y.Min, f.speedup.Y.Max = decades(smin, smax)
	if f.speedup.Y.Min < 1 && 1 < f.speedup.Y.Max {
		evenLine := plotter.NewFunction(func(float64) float64 { return 1 })
		evenLine.LineStyle = draw.LineStyle{Color: color.Gray{Y: 90}, Width: vg.Points(0.8)}
		f.speedup.Add(evenLine) // break-even: below it the GPU is slower
	}
	for _, c := range all {
		addCurve(f.speedup, c, c.speedup)
	}
	return f, nil
}

// fig3Curves returns this machine's curves (the two CPU baselines, then the
// GPU kernels) and, with ComparePaper, the paper's (its GPU, its CPU) over
// the range of measured sizes.
func (t *Table) fig3Curves() (ours, paper []curve) {
	cpu := curve{name: "CPU: naive loop, 1 thread (the paper's Algorithm 3)", color: color.Black, glyph: draw.BoxGlyph{}}
	gon := curve{name: "CPU: gonum " + t.Gemm() + ", all threads", color: gonumColor, glyph: draw.PyramidGlyph{}}
	for _, r := range t.Rows {
		n := float64(r.N)
		if r.CPUGFLOPS > 0 {
			cpu.gflops = append(cpu.gflops, plotter.XY{X: n, Y: r.CPUGFLOPS})
		}
		if r.GonumGFLOPS > 0 {
			gon.gflops = append(gon.gflops, plotter.XY{X: n, Y: r.GonumGFLOPS})
		}
	}
	ours = append(ours, cpu, gon)
	var gpuColor color.Color = paperGPUColor
	for i, k := range t.kernels() {
		name := "GPU: kernel " + k
		if d := t.devices(k); d != "" {
			name = fmt.Sprintf("GPU: %s on EGL %s, end to end", k, d)
		}
		c := curve{name: name, color: kernelPalette[i%len(kernelPalette)], glyph: kernelGlyphs[i%len(kernelGlyphs)]}
		if k == "tiled32" {
			gpuColor = c.color
		}
		for _, r := range t.Rows {
			res, ok := r.gpu(k)
			if !ok || res.GFLOPS <= 0 {
				continue
			}
			c.gflops = append(c.gflops, plotter.XY{X: float64(r.N), Y: res.GFLOPS})
			if v := r.SpeedupNaive(res); v > 0 {
				c.speedup = append(c.speedup, plotter.XY{X: float64(r.N), Y: v})
			}
		}
		ours = append(ours, c)
	}
	if !t.ComparePaper {
		return ours, nil
	}
	pg := curve{name: "GPU: Quadro 4000, the paper's tiled kernel", color: gpuColor, glyph: outlineGlyph{circle: true}, published: true}
	pc := curve{name: "CPU: naive loop (Algorithm 3)", color: color.Black, glyph: outlineGlyph{}, published: true}
	lo, hi := t.sizeRange()
	for _, r := range PaperRows() {
		if r.N < lo || r.N > hi {
			continue // the axis spans what was measured; the table compares only there
		}
		n := float64(r.N)
		pg.gflops = append(pg.gflops, plotter.XY{X: n, Y: r.GPUGF})
		// From the paper's times, as ours are (its published CPU GFLOPS
		// and speed-ups carry a factor of 2: paper_table1.csv's note).
		pg.speedup = append(pg.speedup, plotter.XY{X: n, Y: r.SpeedupFromTimes()})
		pc.gflops = append(pc.gflops, plotter.XY{X: n, Y: r.CPUGFLOPSFromTime()})
	}
	if len(pg.gflops) == 0 {
		return ours, nil
	}
	return ours, []curve{pg, pc}
}

// sizeRange returns the smallest and largest N of t's rows.
func (t *Table) sizeRange() (lo, hi int) {
	for i, r := range t.Rows {
		if i == 0 || r.N < lo {
			lo = r.N
		}
		if r.N > hi {
			hi = r.N
		}
	}
	return lo, hi
}

// fig3SizeAxis returns the N axis: a tick at each measured size, and a range
// a little wider than the sizes so that the end markers clear the frame.
func (t *Table) fig3SizeAxis() (ticks plot.ConstantTicks, min, max float64) {
	var ns []int
	for _, r := range t.Rows {
		ns = append(ns, r.N)
	}
	slices.Sort(ns) // the same table gives the same SVG
	for _, n := range slices.Compact(ns) {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: strconv.Itoa(n)})
	}
	lo, hi := t.sizeRange()
	margin := math.Pow(2, 0.25)
	return ticks, float64(lo) / margin, float64(hi) * margin
}

// fig3Title returns the figure's title and the lines under it that name
// the machine: the GL renderer and version from Device ("vendor | renderer
// | version"), the CPU, and how the GPU was timed.
func (t *Table) fig3Title() (title, subtitle []string) {
	title = []string{"CPU vs GPU matrix multiplication in " + t.ElemType() + ": the paper's Fig. 3 on this machine"}
	if parts := strings.Split(t.Device, " | "); len(parts) == 3 {
		subtitle = append(subtitle, "GPU: "+parts[1]+" ("+parts[2]+")")
	} else if t.Device != "" {
		subtitle = append(subtitle, "GPU: "+t.Device)
	}
	cpu := ""
	if t.CPU != "" {
		cpu = "CPU: " + t.CPU + ";  "
	}
	subtitle = append(subtitle, cpu+"GPU time: "+t.timing())
	if t.Interrupted {
		subtitle = append(subtitle, "interrupted: sizes after the last one were not measured")
	}
	return title, subtitle
}

// timing says how the GPU times were taken: the mean of Reps runs, by GL
// timer queries or by the wall clock.
func (t *Table) timing() string {
	sources := map[string]bool{}
	for _, r := range t.Rows {
		for _, g := range r.GPU {
			sources[g.TimingSource] = true
		}
	}
	how := "mean of " + strconv.Itoa(t.Reps) + " runs"
	switch {
	case len(sources) != 1:
	case sources["gl-timer"]:
		how += ", GL timer queries"
	case sources["wall"]:
		how += ", wall clock after glFinish"
	}
	return how
}

// newPanel makes one panel: its title, its N label (none when xLabel is
// empty), log scales, grid, and the N axis's ticks and range.
func newPanel(title, xLabel string, xticks plot.ConstantTicks, xmin, xmax float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.Title.Padding = vg.Points(4)
	p.X.Label.Text = xLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Scale = plot.LogScale{}
		a.Label.TextStyle.Font.Size = vg.Points(10)
		a.Tick.Label.Font.Size = vg.Points(8.5)
	}
	p.X.Tick.Marker = xticks
	p.X.Min, p.X.Max = xmin, xmax
	grid := plotter.NewGrid()
	grid.Vertical = draw.LineStyle{Color: gridColor, Width: vg.Points(0.5)}
	grid.Horizontal = grid.Vertical
	p.Add(grid)
	return p
}

// addCurve adds pts to p as a line with markers in c's style; no points, no
// curve.
func addCurve(p *plot.Plot, c curve, pts plotter.XYs) {
	if len(pts) == 0 {
		return
	}
	line, marks := c.plotters(pts)
	p.Add(line, marks)
}

// plotters returns the line and the markers that draw pts in c's style.
func (c curve) plotters(pts plotter.XYs) (*plotter.Line, *plotter.Scatter) {
	line := &plotter.Line{XYs: pts, LineStyle: draw.LineStyle{Color: c.color, Width: curveWidth}}
	if c.published {
		line.Dashes = paperDashes
	}
	marks := &plotter.Scatter{XYs: pts, GlyphStyle: draw.GlyphStyle{Color: c.color, Radius: glyphRadius, Shape: c.glyph}}
	return line, marks
}

// Layout of the page around the panels.
var (
	pageMargin  = vg.Points(8)
	titleSize   = vg.Points(11)
	textSize    = vg.Points(8.5)
	legendSize  = vg.Points(8.5)
	labelSize   = vg.Points(10) // axis labels
	legendEntry = vg.Points(12) // the height of one legend line
	// legendThumbnail is the width of a legend line, enough to show dashes.
	legendThumbnail = vg.Points(30)
	panelGap        = vg.Points(8)
)

// fig3Layout is where the parts of the figure go on a page.
type fig3Layout struct {
	// panels are the canvases the two panels draw into, GFLOPS first.
	panels [2]draw.Canvas
	// legend is the strip under the panels; its columns start at
	// legendLeft (ours) and legendMid (the paper's).
	legend                vg.Rectangle
	legendLeft, legendMid vg.Length
}

// layout places the title on top of dc, the legend strip at the bottom,
// and the two panels between them, their data areas of one size and one
// above the other (plot.Align), whatever their titles and labels take.
func (f *fig3) layout(dc draw.Canvas) fig3Layout {
	rows := len(f.ours)
	if len(f.paper) > 0 {
		rows = max(rows, len(f.paper)) + 1 // a heading over each column
	}
	titleH := titleSize*1.3 + vg.Length(len(f.subtitle))*textSize*1.3 + 2*pageMargin
	legendH := vg.Length(rows)*legendEntry + 2*pageMargin
	middle := draw.Crop(dc, pageMargin+f.textStyle(labelSize).Height("Mg"), -pageMargin, legendH, -titleH)
	tiles := plot.Align([][]*plot.Plot{{f.gflops}, {f.speedup}}, draw.Tiles{Rows: 2, Cols: 1, PadY: panelGap}, middle)
	l := fig3Layout{panels: [2]draw.Canvas{tiles[0][0], tiles[1][0]}}
	l.legend = vg.Rectangle{Min: vg.Point{X: dc.Min.X + pageMargin, Y: dc.Min.Y + pageMargin},
		Max: vg.Point{X: dc.Max.X - pageMargin, Y: dc.Min.Y + legendH - pageMargin}}
	l.legendLeft = f.speedup.DataCanvas(l.panels[1]).Min.X - vg.Points(24)
	sty := f.textStyle(legendSize)
	widest := sty.Width("measured here (solid, filled):")
	for _, c := range f.ours {
		widest = max(widest, legendThumbnail+sty.Width(" "+c.name))
	}
	l.legendMid = max((l.legendLeft+l.legend.Max.X)/2, l.legendLeft+widest+vg.Points(12))
	return l
}

// draw draws the figure on dc.
func (f *fig3) draw(dc draw.Canvas) {
	l := f.layout(dc)
	f.drawTitle(dc)
	for i, p := range []*plot.Plot{f.gflops, f.speedup} {
		p.Draw(l.panels[i])
		f.drawYLabel(dc, p.DataCanvas(l.panels[i]), f.yLabels[i])
	}
	if f.noSpeedup != "" {
		da := f.speedup.DataCanvas(l.panels[1])
		sty := f.textStyle(textSize)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(sty, da.Center(), f.noSpeedup)
	}
	if len(f.paper) == 0 {
		drawLegendColumn(dc, f.textStyle(legendSize), l.legendLeft, l.legend.Max.Y, "", f.ours)
		return
	}
	drawLegendColumn(dc, f.textStyle(legendSize), l.legendLeft, l.legend.Max.Y, "measured here (solid, filled):", f.ours)
	drawLegendColumn(dc, f.textStyle(legendSize), l.legendMid, l.legend.Max.Y, "the paper's Table 1, from its times (dashed, open):", f.paper)
}

// drawYLabel writes label up the left margin of dc, centred on the data
// area da. gonum's own y label would do, but on a log axis it reserves
// room as if the label sat at the arithmetic mean of the axis's range, near
// the top, and so pushes the data area down, and plot.Align with it
// (gonum.org/v1/plot v0.17.0, verticalAxis.GlyphBoxes).
func (f *fig3) drawYLabel(dc, da draw.Canvas, label string) {
	sty := f.textStyle(labelSize)
	sty.Rotation = math.Pi / 2
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	dc.FillText(sty, vg.Point{X: dc.Min.X + pageMargin, Y: da.Center().Y}, label)
}

// textStyle returns the panels' font at size, left-aligned.
func (f *fig3) textStyle(size vg.Length) text.Style {
	sty := f.gflops.Title.TextStyle
	sty.Font.Size = size
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	return sty
}

// drawTitle writes the title and the lines naming the machine, centred at
// the top of dc.
func (f *fig3) drawTitle(dc draw.Canvas) {
	y := dc.Max.Y - pageMargin
	for i, line := range slices.Concat(f.title, f.subtitle) {
		size := textSize
		if i < len(f.title) {
			size = titleSize
		}
		sty := f.textStyle(size)
		sty.XAlign = draw.XCenter
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: y}, line)
		y -= size * 1.3
	}
}

// drawLegendColumn writes heading (if any) and then one line per curve,
// its line and marker before its name, from (x, top) down.
func drawLegendColumn(dc draw.Canvas, sty text.Style, x, top vg.Length, heading string, curves []curve) {
	if heading != "" {
		dc.FillText(sty, vg.Point{X: x, Y: top}, heading)
		top -= legendEntry
	}
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle = sty
	legend.TextStyle.YAlign = draw.YBottom // what Legend.Draw expects
	legend.ThumbnailWidth = legendThumbnail
	legend.Padding = legendEntry - legend.TextStyle.Rectangle("Mg").Size().Y
	for _, c := range curves {
		line, marks := c.plotters(nil)
		legend.Add(c.name, line, marks)
	}
	legend.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: x, Y: dc.Min.Y}, Max: vg.Point{X: dc.Max.X, Y: top}}})
}

// decadeTicks labels every power of ten in the axis's range, those below 1
// too (gonum's LogTicks truncates the exponent toward zero and so leaves
// 0.1 and below unlabelled), with unlabelled minor ticks at 2…9 times each.
type decadeTicks struct {
	suffix string // after each label: "×" on the speed-up axis
}

// Ticks implements plot.Ticker.
func (d decadeTicks) Ticks(min, max float64) []plot.Tick {
	lo := int(math.Floor(math.Log10(min) + 1e-9))
	hi := int(math.Ceil(math.Log10(max) - 1e-9))
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		v := math.Pow10(e)
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64) + d.suffix})
		for i := 2; i <= 9 && e < hi; i++ {
			ticks = append(ticks, plot.Tick{Value: float64(i) * v})
		}
	}
	return ticks
}

// diamondGlyph is a filled diamond, a second filled marker for GPU kernels
// beside gonum's filled circle.
type diamondGlyph struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (diamondGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius * 1.3
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	c.Fill(p)
}

// outlineGlyph is an open circle or square for the paper's points: filled
// white, so that the dashed line through it does not fill it, and outlined
// 1 pt wide (gonum's RingGlyph and SquareGlyph draw 0.5 pt, which reads as
// filled in small print).
type outlineGlyph struct {
	circle bool // else a square
}

// DrawGlyph implements draw.GlyphDrawer.
func (g outlineGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	var p vg.Path
	if g.circle {
		p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
		p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	} else {
		r := sty.Radius * 0.9
		p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
		p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
		p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
		p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r})
	}
	p.Close()
	c.SetColor(color.White)
	c.Fill(p)
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1)})
	c.Stroke(p)
}

// extent returns the smallest and largest positive Y of the points that
// pts picks from each of cs (0, 0 if none).
func extent(cs []curve, pts func(curve) plotter.XYs) (lo, hi float64) {
	for _, c := range cs {
		for _, p := range pts(c) {
			if p.Y <= 0 {
				continue
			}
			if lo == 0 || p.Y < lo {
				lo = p.Y
			}
			hi = max(hi, p.Y)
		}
	}
	return lo, hi
}

// decades widens [lo, hi] to whole powers of ten, at least one decade.
func decades(lo, hi float64) (float64, float64) {
	lo = math.Pow10(int(math.Floor(math.Log10(lo) + 1e-9)))
	hi = math.Pow10(int(math.Ceil(math.Log10(hi) - 1e-9)))
	if hi <= lo {
		hi = lo * 10
	}
	return lo, hi
}
