package main

import (
	"math"
	"slices"
)

// Summary is a figure over its repetitions.
type Summary struct {
	N      int       `json:"n"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"`
}

func summarize(vs []float64) *Summary {
	var ok []float64
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	s := slices.Clone(ok)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &Summary{N: len(s), Median: med, Min: s[0], Max: s[len(s)-1], Values: ok}
}

// Limit is the protocol limit of a figure: the least time the protocol allows, and how it was
// derived from the broker's settings and the round trips measured in the run.
type Limit struct {
	Value      float64 `json:"value"`
	Derivation string  `json:"derivation"`
}

// Figure is one row of the table.
type Figure struct {
	ID          string   `json:"id"`
	Phase       string   `json:"phase"`
	Name        string   `json:"name"`
	Unit        string   `json:"unit"`
	Go          *Summary `json:"go,omitempty"`
	Java        *Summary `json:"java,omitempty"`
	GoOverJava  float64  `json:"go_over_java,omitempty"`
	Limit       *Limit   `json:"limit,omitempty"`
	GoOverLimit float64  `json:"go_over_limit,omitempty"`
	Note        string   `json:"note,omitempty"`
	Failures    []string `json:"failures,omitempty"`
}

func (f *Figure) finish() {
	if f.Go != nil && f.Java != nil && f.Java.Median != 0 {
		f.GoOverJava = f.Go.Median / f.Java.Median
	}
	if f.Go != nil && f.Limit != nil && f.Limit.Value > 0 {
		f.GoOverLimit = f.Go.Median / f.Limit.Value
	}
}

func median(vs []float64) float64 {
	s := summarize(vs)
	if s == nil {
		return math.NaN()
	}
	return s.Median
}
