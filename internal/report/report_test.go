package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/validate"
)

func TestMeanMedian(t *testing.T) {
	ds := []time.Duration{5, 1, 3, 100}
	if Mean(ds) != 27 || Median(ds) != 4 || Median(ds[:3]) != 3 {
		t.Fatalf("mean %v, median %v / %v", Mean(ds), Median(ds), Median(ds[:3]))
	}
	if ds[0] != 5 {
		t.Fatal("Median reordered its input")
	}
}

func TestSummarizePrefersTheGLTimer(t *testing.T) {
	r := Run{M: 1000, K: 1000, N: 1000, Timings: glcompute.Timings{
		Upload: time.Second, Readback: time.Second,
		Compute: []time.Duration{2 * time.Second, 2 * time.Second},
		GPU:     []time.Duration{time.Second, time.Second},
	}}
	r.Summarize()
	s := r.Summary
	// 2·10⁹ flop in 1 s of GPU time; end to end 1 + 2 + 1 s (wall compute).
	if s.TimingSource != "gl-timer" || s.GFLOPSMean != 2 || s.GFLOPSEndToEnd != 0.5 || s.WallMeanMS != 2000 {
		t.Fatalf("%+v", s)
	}
	r.Timings.GPU = nil
	r.Summarize()
	if r.Summary.TimingSource != "wall" || r.Summary.GFLOPSMean != 1 {
		t.Fatalf("%+v", r.Summary)
	}
}

func TestFormats(t *testing.T) {
	r := Run{M: 3, K: 4, N: 5, Kernel: "tiled32", Timings: glcompute.Timings{
		Upload: time.Millisecond, Readback: time.Millisecond, Compute: []time.Duration{time.Millisecond}},
		Validation: validate.Result{Mode: validate.Full, OK: true}}
	r.Summarize()
	var b bytes.Buffer
	if err := r.Write(&b, CSV); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) != 2 || len(recs[1]) != len(CSVHeader) || recs[1][0] != "3" {
		t.Fatalf("CSV %v %v", err, recs)
	}
	b.Reset()
	r.Write(&b, Text)
	if !strings.Contains(b.String(), "A 3×4, B 4×5") || !strings.Contains(b.String(), "wall clock after glFinish") {
		t.Fatalf("text:\n%s", b.String())
	}
	if FormatGFLOPS(0.4849) != "0.485" || FormatGFLOPS(11) != "11.00" || FormatGFLOPS(39616.54) != "39616.5" {
		t.Fatal(FormatGFLOPS(0.4849), FormatGFLOPS(11), FormatGFLOPS(39616.54))
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Fatal("ParseFormat(xml): no error")
	}
}
