package main

import (
	"fmt"
	"math"
	"sort"
)

// sample is a set of measurements of one quantity.
type sample []float64

func (s sample) sorted() sample {
	c := append(sample(nil), s...)
	sort.Float64s(c)
	return c
}

// quantile returns the q-quantile (0..1) with linear interpolation between
// closest ranks.
func (s sample) quantile(q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := s.sorted()
	pos := q * float64(len(c)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	return c[lo] + (c[hi]-c[lo])*(pos-float64(lo))
}

func (s sample) median() float64 { return s.quantile(0.5) }
func (s sample) p99() float64    { return s.quantile(0.99) }
func (s sample) min() float64    { return s.quantile(0) }
func (s sample) max() float64    { return s.quantile(1) }

// fmtSeconds formats seconds with a unit that keeps three significant
// digits readable (µs, ms or s).
func fmtSeconds(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v < 1e-3:
		return trim(v*1e6) + " µs"
	case v < 1:
		return trim(v*1e3) + " ms"
	default:
		return trim(v) + " s"
	}
}

// fmtBytes formats a byte count in MB (10^6, as the targets are written).
func fmtBytes(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return trim(v/1e6) + " MB"
}

func fmtRate(v float64) string { return commas(int(math.Round(v))) + " calls/s" }

// trim prints v with three significant digits for small values and no
// decimals for large ones.
func trim(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// spread formats the min–max range of s with f.
func spread(s sample, f func(float64) string) string {
	if len(s) < 2 {
		return "single run"
	}
	return f(s.min()) + " – " + f(s.max())
}
