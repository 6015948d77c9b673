// Package fakedns is a DNS resolver for tests: a *net.Resolver whose
// queries never leave the process and are answered from a map of names to
// addresses, so that a test can make a public-looking host name resolve to
// 127.0.0.1 (what DNS rebinding does) and check that shared/outbound
// refuses the connection after resolution.
package fakedns

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// Resolver returns a resolver answering A and AAAA queries for the names of
// hosts (without the trailing dot, any case) with their addresses; any
// other name does not exist.
func Resolver(hosts map[string][]netip.Addr) *net.Resolver {
	zone := make(map[string][]netip.Addr, len(hosts))
	for name, addrs := range hosts {
		zone[strings.ToLower(strings.TrimSuffix(name, "."))+"."] = addrs
	}
	return &net.Resolver{
		PreferGo: true,
		// Each query gets an in-memory stream connection: not a
		// PacketConn, so the resolver frames messages as over TCP.
		Dial: func(context.Context, string, string) (net.Conn, error) {
			client, server := net.Pipe()
			go serve(server, zone)
			return client, nil
		},
	}
}

// serve answers the length-prefixed queries written to conn until it is
// closed.
func serve(conn net.Conn, zone map[string][]netip.Addr) {
	defer conn.Close()
	for {
		var size [2]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		query := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(conn, query); err != nil {
			return
		}
		answer, err := respond(query, zone)
		if err != nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(answer)))
		if _, err := conn.Write(append(out, answer...)); err != nil {
			return
		}
	}
}

// respond builds the answer to one query.
func respond(query []byte, zone map[string][]netip.Addr) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	addrs, known := zone[strings.ToLower(q.Name.String())]
	rcode := dnsmessage.RCodeSuccess
	if !known {
		rcode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: rcode})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}
	for _, a := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && a.Is4():
			err = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		case q.Type == dnsmessage.TypeAAAA && a.Is6():
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	return b.Finish()
}
