package sweep

import (
	"fmt"
	"testing"
)

// fakeRates is a sweep's measuring function over made-up candidates: each
// spec has a true rate, the first measurement of some is low (a GPU still
// at idle clocks), and one fails validation on its second measurement.
type fakeRates struct {
	truth    map[string]float64
	firstLow map[string]bool
	failOn2  string
	calls    map[string]int
}

func (f *fakeRates) measure(spec string) Candidate {
	f.calls[spec]++
	r := f.truth[spec]
	if f.calls[spec] == 1 && f.firstLow[spec] {
		r /= 3
	}
	if spec == f.failOn2 && f.calls[spec] == 2 {
		return Candidate{Kernel: spec, GFLOPS: r, Error: "validation failed"}
	}
	if r == 0 {
		return Candidate{Kernel: spec, Error: "does not fit"}
	}
	return Candidate{Kernel: spec, GFLOPS: r, Valid: true}
}

func TestSweepRemeasuresLeadersAndRanks(t *testing.T) {
	var specs []string
	f := &fakeRates{truth: map[string]float64{}, firstLow: map[string]bool{}, calls: map[string]int{}}
	for i := 0; i < 12; i++ {
		s := fmt.Sprintf("fast:c%d", i)
		specs = append(specs, s)
		f.truth[s] = float64(100 + i)
	}
	f.truth["fast:c0"] = 0        // does not fit: invalid, never re-measured
	f.firstLow["fast:c10"] = true // 110 measured as 36.7 first: drops out of the finalists
	f.firstLow["fast:c7"] = true  // 107 → 35.7: also out
	f.failOn2 = "fast:c11"        // the fastest fails its re-measurement
	var seen []string
	got := Sweep(specs, f.measure, 4, 3, func(i int, c Candidate) { seen = append(seen, c.Kernel) })

	if len(seen) != len(specs) {
		t.Fatalf("progress saw %d specs, want %d", len(seen), len(specs))
	}
	// First pass ranks c11 (111), c9, c8, c6 as the finalists.
	for spec, want := range map[string]int{"fast:c11": 2, "fast:c9": 4, "fast:c8": 4, "fast:c6": 4, "fast:c5": 1, "fast:c10": 1, "fast:c0": 1} {
		if f.calls[spec] != want {
			t.Errorf("%s measured %d times, want %d", spec, f.calls[spec], want)
		}
	}
	if got[0].Kernel != "fast:c9" || got[0].GFLOPS != 109 {
		t.Errorf("winner %+v, want fast:c9 at 109", got[0])
	}
	last := got[len(got)-1]
	if last.Valid || (last.Kernel != "fast:c11" && last.Kernel != "fast:c0") {
		t.Errorf("the invalid should rank last: %+v", got[len(got)-2:])
	}
	for i := 1; i < len(got); i++ {
		if got[i].Valid && (!got[i-1].Valid || got[i-1].GFLOPS < got[i].GFLOPS) {
			t.Fatalf("not ranked at %d: %+v", i, got)
		}
	}
}

// TestSweepKeeps: a keep spec that the noisy first pass ranked low is
// re-measured with the finalists (and wins here), and one not among the
// specs is added.
func TestSweepKeeps(t *testing.T) {
	f := &fakeRates{truth: map[string]float64{"fast:a": 100, "fast:b": 101, "fast:c": 102, "fast:builtin": 150, "fast:extra": 90},
		firstLow: map[string]bool{"fast:builtin": true}, calls: map[string]int{}}
	got := Sweep([]string{"fast:a", "fast:b", "fast:c", "fast:builtin"}, f.measure, 2, 3, nil, "fast:builtin", "fast:extra")
	if len(got) != 5 || got[0].Kernel != "fast:builtin" || got[0].GFLOPS != 150 {
		t.Fatalf("%+v: want the kept built-in re-measured to the top, and fast:extra added", got)
	}
	if f.calls["fast:builtin"] != 4 || f.calls["fast:extra"] != 4 || f.calls["fast:a"] != 1 {
		t.Errorf("calls %v: the kept specs 1+3 times, the rest once unless finalists", f.calls)
	}
}

func TestSweepOfNothing(t *testing.T) {
	if got := Sweep(nil, func(string) Candidate { panic("called") }, Finalists, Rounds, nil); len(got) != 0 {
		t.Fatal(got)
	}
}
