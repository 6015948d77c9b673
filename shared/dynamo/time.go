package dynamo

import "time"

// Time is how items store an instant: RFC 3339 in UTC with nanoseconds, so
// stored instants sort as strings in time order.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseTime reads an instant stored by Time; an empty or malformed value is
// the zero time.
func ParseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}
