package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPercentileAndMedian(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) Durations {
		d := make(Durations, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	tests := []struct {
		name          string
		in            Durations
		p             float64
		wantP, wantMd time.Duration
	}{
		{"empty", nil, 95, 0, 0},
		{"one", ms(7), 50, 7 * time.Millisecond, 7 * time.Millisecond},
		{"unsorted odd", ms(9, 1, 5), 50, 5 * time.Millisecond, 5 * time.Millisecond},
		{"even median is the mean of the middle two", ms(4, 1, 3, 2), 50, 2 * time.Millisecond, 2500 * time.Microsecond},
		// Nearest rank: p95 of 30 values is the 29th smallest.
		{"p95 of 30", ms(30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 95,
			29 * time.Millisecond, 15500 * time.Microsecond},
		{"p100 is the max", ms(3, 8, 1), 100, 8 * time.Millisecond, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.Percentile(tt.p); got != tt.wantP {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.wantP)
			}
			if got := tt.in.Median(); got != tt.wantMd {
				t.Errorf("Median = %v, want %v", got, tt.wantMd)
			}
		})
	}
}

func TestRowVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		verdicts []Verdict
		err      error
		want     Verdict
	}{
		{"nothing measured", nil, nil, NotMeasured},
		{"only figures without target", []Verdict{Info}, nil, NotMeasured},
		{"all meet", []Verdict{Meets, Info, Meets}, nil, Meets},
		{"one miss wins", []Verdict{Meets, Misses, NotMeasured}, nil, Misses},
		{"partly measured still meets", []Verdict{Meets, NotMeasured}, nil, Meets},
		{"an error is not measured", []Verdict{Meets}, errors.New("boom"), NotMeasured},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Row{Err: tt.err}
			for _, v := range tt.verdicts {
				r.add("m", "", "", v)
			}
			if got := r.Verdict(); got != tt.want {
				t.Errorf("Verdict() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMeasureRecoversAndBounds(t *testing.T) {
	t.Parallel()
	r := &Row{}
	Measure(t.Context(), r, time.Minute, func(ctx context.Context, row *Row) error { panic("broken service") })
	if r.Err == nil || !strings.Contains(r.Err.Error(), "broken service") {
		t.Errorf("Err = %v, want the panic", r.Err)
	}
	r = &Row{}
	Measure(t.Context(), r, time.Millisecond, func(ctx context.Context, row *Row) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("Err = %v, want the limit's deadline", r.Err)
	}
}

func TestReportKeepsHandWrittenPart(t *testing.T) {
	t.Parallel()
	row := &Row{What: "GET requirement", Target: "1 read", Anchor: "one round trip"}
	row.add("calls", "exactly 1", "1 | 2", Meets)
	rep := &Report{Command: "make bench", Rows: []*Row{row}, Kept: "## Analysis\n\nkept text\n"}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| GET requirement | 1 read | one round trip | calls: 1 \\| 2 (meets) | meets |", KeepMarker + "\n\n## Analysis"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if got := KeptPart(out); got != rep.Kept {
		t.Errorf("KeptPart = %q, want %q", got, rep.Kept)
	}
	if got := KeptPart("no marker"); got != "" {
		t.Errorf("KeptPart without marker = %q", got)
	}
}
