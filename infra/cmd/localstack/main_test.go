package main

import (
	"net"
	"strings"
	"testing"
)

// A port in use is refused before anything starts, with the way out.
func TestPortFree(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := portFree(l.Addr().String()); err == nil || !strings.Contains(err.Error(), "WIKI_PORT and TRACKER_PORT") {
		t.Fatalf("a port in use: %v", err)
	}
	free := l.Addr().String()
	l.Close()
	if err := portFree(free); err != nil {
		t.Fatalf("a free port: %v", err)
	}
}

// A wrong FN names the template's functions before anything starts.
func TestKnownFunction(t *testing.T) {
	if err := knownFunction("Sync"); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	err := knownFunction("Nope")
	if err == nil || !strings.Contains(err.Error(), "WikiContent") || !strings.Contains(err.Error(), "TrackerApiFunction") {
		t.Fatalf("a wrong name: %v", err)
	}
}
