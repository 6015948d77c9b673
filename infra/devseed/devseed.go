// Package devseed creates the development tenants and fixed tokens of
// the local stack (demo and acme; README). It is used only by the local stack and
// tests; it refuses to seed a DynamoDB endpoint that is not on loopback, so
// the well-known tokens can never reach a deployed stack.
package devseed

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
)

// Tenants are the development tenants.
var Tenants = []string{"demo", "acme"}

// Token is one development token and its principal.
type Token struct {
	Token     string
	Principal auth.Principal
}

// Tokens returns the fixed development tokens: <tenant>-wiki-admin,
// <tenant>-wiki-user, <tenant>-tracker-admin, <tenant>-tracker-user.
func Tokens() []Token {
	var out []Token
	for _, t := range Tenants {
		for _, app := range []auth.App{auth.Wiki, auth.Tracker} {
			for _, admin := range []bool{true, false} {
				role := "user"
				if admin {
					role = "admin"
				}
				name := fmt.Sprintf("%s-%s-%s", t, app, role)
				out = append(out, Token{Token: name, Principal: auth.Principal{
					Tenant: t, App: app, Kind: auth.User, User: name, Admin: admin,
				}})
			}
		}
	}
	return out
}

// Seed writes the development tenants and tokens into the AuthTable.
func Seed(ctx context.Context, store *authtable.AuthStore) error {
	if ep := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"); ep != "" && !loopback(ep) {
		return fmt.Errorf("refusing to seed development tokens into %s: not a loopback endpoint", ep)
	}
	for _, t := range Tenants {
		if err := store.PutTenant(ctx, t, t); err != nil {
			return fmt.Errorf("seed tenant %s: %w", t, err)
		}
	}
	for _, tok := range Tokens() {
		if err := store.PutToken(ctx, auth.HashToken(tok.Token), tok.Principal); err != nil {
			return fmt.Errorf("seed token: %w", err)
		}
	}
	return nil
}

// RequireLoopback fails unless endpoint is an http URL on a loopback address.
func RequireLoopback(endpoint string) error {
	if !loopback(endpoint) {
		return fmt.Errorf("refusing to seed development tokens into %q: not a loopback endpoint", endpoint)
	}
	return nil
}

func loopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
