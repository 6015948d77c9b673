package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"slices"
	"testing"
)

func TestGuard(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+1": "'+1", "-2": "'-2", "@SUM(A1)": "'@SUM(A1)", "\tx": "'\tx", "\r=x": "'\r=x",
		"": "", "plain": "plain", "'=x": "'=x", " =x": " =x", "1-2": "1-2", "a@b": "a@b",
	} {
		if got := Guard(in); got != want {
			t.Errorf("Guard(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWriteCSV(t *testing.T) {
	t.Parallel()
	rows := [][]string{{"a,b", "say \"hi\""}, {"line\nbreak", "=cmd"}}
	tbl := Table{Name: "t", Columns: []string{"x", "-y"}, Rows: func(_ context.Context, emit func([]string) error) error {
		for _, r := range rows {
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}}
	var buf bytes.Buffer
	if err := WriteCSV(context.Background(), &buf, tbl); err != nil {
		t.Fatal(err)
	}
	want := "x,'-y\r\n\"a,b\",\"say \"\"hi\"\"\"\r\n\"line\r\nbreak\",'=cmd\r\n" // a line end in a cell is CRLF too; readers give \n back
	if buf.String() != want {
		t.Fatalf("CSV %q, want %q", buf.String(), want)
	}
	back, err := csv.NewReader(&buf).ReadAll()
	if err != nil || !slices.Equal(back[1], rows[0]) || back[2][0] != "line\nbreak" {
		t.Fatalf("read back %q (%v)", back, err)
	}
	boom := errors.New("boom")
	tbl.Rows = func(context.Context, func([]string) error) error { return boom }
	if err := WriteCSV(context.Background(), &buf, tbl); !errors.Is(err, boom) {
		t.Fatalf("rows error: %v", err)
	}
	tbl.Rows = func(_ context.Context, emit func([]string) error) error { return emit([]string{"one"}) }
	if err := WriteCSV(context.Background(), &buf, tbl); err == nil {
		t.Fatal("a row of the wrong width was written")
	}
}
