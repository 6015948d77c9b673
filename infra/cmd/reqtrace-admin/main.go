// Command reqtrace-admin creates tenants and tokens and sets tenants' rate
// limits against any reqtrace stack (deployed or local). It talks to the
// AuthTable named by -auth-table (or AUTH_TABLE) with the standard AWS
// configuration: credentials, region and, for a local stack,
// AWS_ENDPOINT_URL_DYNAMODB.
//
//	reqtrace-admin tenant create <tenant> [-name NAME]
//	reqtrace-admin tenant list
//	reqtrace-admin tenant delete <tenant>   (its record, own rate and tokens; not its data)
//	reqtrace-admin tenant limit <tenant> [<requests-per-second>|default]
//	reqtrace-admin token create -tenant T -app wiki|tracker -user NAME [-admin]
//	reqtrace-admin token list <tenant>      (hashes and principals; tokens are never stored)
//	reqtrace-admin token revoke <token>
//	reqtrace-admin token revoke-hash <hash> (a token listed by token list)
//	reqtrace-admin seed-dev            (local stacks only: the development tokens)
//	reqtrace-admin words status <tenant>  (spaces and whether searches use their word index)
//	reqtrace-admin words index <tenant> [-space S [-from KEY]]
//
// The words commands work on the WikiTable named by -wiki-table (or
// WIKI_TABLE): "words index" gives spaces saved before the word index
// existed their word index items (docs/operations.md, "Word index of older
// spaces"), every space without it or the one named, from a key to
// continue an interrupted run.
//
// Without -auth-table, AUTH_TABLE, -wiki-table and WIKI_TABLE, it uses the
// stack `make run` is running (recorded in .build/localstack.json), so
// `make admin ARGS=...` needs no environment.
//
// A created token is printed once on stdout; only its hash is stored.
// "tenant limit" with a number gives the tenant its own rate (requests per
// second to each application, across every function instance), with
// "default" puts it back on the functions' TENANT_RATE, and alone shows
// which applies; warm functions pick a change up within AUTH_CACHE_TTL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/devseed"
	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/ratelimit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "reqtrace-admin:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New(`usage:
  reqtrace-admin [-auth-table NAME] tenant create <tenant> [-name NAME]
  reqtrace-admin [-auth-table NAME] tenant list
  reqtrace-admin [-auth-table NAME] tenant delete <tenant>
  reqtrace-admin [-auth-table NAME] tenant limit <tenant> [<requests-per-second>|default]
  reqtrace-admin [-auth-table NAME] token create -tenant T -app wiki|tracker -user NAME [-admin]
  reqtrace-admin [-auth-table NAME] token list <tenant>
  reqtrace-admin [-auth-table NAME] token revoke <token>
  reqtrace-admin [-auth-table NAME] token revoke-hash <hash>
  reqtrace-admin [-auth-table NAME] seed-dev
  reqtrace-admin [-wiki-table NAME] words status <tenant>
  reqtrace-admin [-wiki-table NAME] words index <tenant> [-space SPACE [-from KEY]]`)

func run(ctx context.Context, args []string, out io.Writer) error {
	global := flag.NewFlagSet("reqtrace-admin", flag.ContinueOnError)
	authTable := global.String("auth-table", os.Getenv("AUTH_TABLE"), "AuthTable name (default $AUTH_TABLE)")
	wikiTable := global.String("wiki-table", os.Getenv("WIKI_TABLE"), "WikiTable name, for the words commands (default $WIKI_TABLE)")
	if err := global.Parse(args); err != nil {
		return err
	}
	args = global.Args()
	if len(args) == 0 {
		return errUsage
	}
	if *authTable == "" && *wikiTable == "" {
		// No table named: the stack make run is running, if there is one.
		st, ok := localstack.Running(filepath.Join(localstackRoot(), ".build"))
		if !ok {
			return errors.New("no table: pass -auth-table or set AUTH_TABLE (stack output AuthTableName), -wiki-table or WIKI_TABLE (stack output WikiTableName) for the words commands, or start make run to use the local stack")
		}
		cfg, err := localaws.AWSConfig(ctx, st.DynamoDB, st.SQS)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "using the local stack (make run): DynamoDB %s, tables %s-AuthTable and %s-WikiTable\n", st.DynamoDB, st.Prefix, st.Prefix)
		return dispatch(ctx, openStores(dynamodb.NewFromConfig(cfg), st.Prefix+"-AuthTable", st.Prefix+"-WikiTable"), args, out)
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS config: %w", err)
	}
	return dispatch(ctx, openStores(dynamodb.NewFromConfig(cfg), *authTable, *wikiTable), args, out)
}

// localstackRoot is the module root when found (make admin runs from it),
// else the working directory.
func localstackRoot() string {
	if root, err := localaws.ModuleRoot(); err == nil {
		return root
	}
	return "."
}

// stores are the stores the commands use: the AuthTable's, and the
// WikiTable's (nil when no WikiTable is named).
type stores struct {
	db    authtable.Scanner
	table string
	auth  *authtable.AuthStore
	rates *authtable.RateStore
	wiki  *wikitable.WikiStore
}

func openStores(db *dynamodb.Client, authTable, wikiTable string) stores {
	st := stores{db: db, table: authTable, auth: authtable.NewAuthStore(db, authTable), rates: authtable.NewRateStore(db, authTable)}
	if wikiTable != "" {
		st.wiki = wikitable.NewWikiStore(db, wikiTable)
	}
	return st
}

func dispatch(ctx context.Context, st stores, args []string, out io.Writer) error {
	if args[0] == "words" {
		if st.wiki == nil {
			return errors.New("no WikiTable: pass -wiki-table or set WIKI_TABLE (stack output WikiTableName)")
		}
		return words(ctx, st.wiki, args[1:], out)
	}
	if st.table == "" {
		return errors.New("no AuthTable: pass -auth-table or set AUTH_TABLE (stack output AuthTableName)")
	}
	store := st.auth
	switch {
	case (len(args) == 3 || len(args) == 4) && args[0] == "tenant" && args[1] == "limit":
		return tenantLimit(ctx, st, args[2], args[3:], out)
	case len(args) >= 3 && args[0] == "tenant" && args[1] == "create":
		fs := flag.NewFlagSet("tenant create", flag.ContinueOnError)
		name := fs.String("name", "", "display name")
		if err := fs.Parse(args[3:]); err != nil {
			return err
		}
		if err := store.CreateTenant(ctx, args[2], *name); err != nil {
			return err
		}
		fmt.Fprintf(out, "tenant %s created\n", args[2])
		return nil
	case len(args) == 2 && args[0] == "tenant" && args[1] == "list":
		tenants, err := authtable.ListTenants(ctx, st.db, st.table)
		if err != nil {
			return err
		}
		for _, t := range tenants {
			fmt.Fprintf(out, "%s\t%s\t%s\n", t.ID, t.Name, t.CreatedAt)
		}
		return nil
	case len(args) == 3 && args[0] == "tenant" && args[1] == "delete":
		n, err := authtable.DeleteTenant(ctx, st.db, st.table, args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "tenant %s deleted with its %d token(s); its pages, requirements and links stay until erased by their key prefix T#%s# (docs/operations.md, Data)\n", args[2], n, args[2])
		return nil
	case len(args) == 3 && args[0] == "token" && args[1] == "list":
		tokens, err := authtable.ListTokens(ctx, st.db, st.table, args[2])
		if err != nil {
			return err
		}
		for _, t := range tokens {
			p := t.Principal
			role := "user"
			if p.Admin {
				role = "admin"
			}
			if p.Kind == auth.Link {
				role = "link " + p.Scope
			}
			fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%s\n", t.Hash, p.App, role, p.User, t.CreatedAt)
		}
		return nil
	case len(args) == 3 && args[0] == "token" && args[1] == "revoke-hash":
		if err := store.RevokeToken(ctx, args[2]); err != nil {
			return err
		}
		fmt.Fprintln(out, "token revoked (warm functions may accept it for up to AUTH_CACHE_TTL)")
		return nil
	case len(args) >= 2 && args[0] == "token" && args[1] == "create":
		return createToken(ctx, store, args[2:], out)
	case len(args) == 3 && args[0] == "token" && args[1] == "revoke":
		if err := store.RevokeToken(ctx, auth.HashToken(args[2])); err != nil {
			return err
		}
		fmt.Fprintln(out, "token revoked (warm functions may accept it for up to AUTH_CACHE_TTL)")
		return nil
	case len(args) == 1 && args[0] == "seed-dev":
		if err := devseed.Seed(ctx, store); err != nil {
			return err
		}
		fmt.Fprintln(out, "development tenants demo and acme and their tokens are seeded")
		return nil
	}
	return errUsage
}

func createToken(ctx context.Context, store *authtable.AuthStore, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant id")
	app := fs.String("app", "", "wiki or tracker")
	user := fs.String("user", "", "user name")
	admin := fs.Bool("admin", false, "administrator of the application")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *app != string(auth.Wiki) && *app != string(auth.Tracker) {
		return fmt.Errorf("-app must be wiki or tracker, got %q", *app)
	}
	if *user == "" {
		return errors.New("-user is required")
	}
	exists, err := store.TenantExists(ctx, *tenant)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("tenant %q does not exist: create it first", *tenant)
	}
	token := auth.NewToken()
	p := auth.Principal{Tenant: *tenant, App: auth.App(*app), Kind: auth.User, User: *user, Admin: *admin}
	if err := store.PutToken(ctx, auth.HashToken(token), p); err != nil {
		return err
	}
	fmt.Fprintln(out, token)
	return nil
}

// tenantLimit shows, sets or clears a tenant's own rate.
func tenantLimit(ctx context.Context, st stores, tenant string, value []string, out io.Writer) error {
	exists, err := st.auth.TenantExists(ctx, tenant)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("tenant %q does not exist: create it first", tenant)
	}
	switch {
	case len(value) == 0:
		rps, err := st.rates.TenantRate(ctx, tenant)
		if err != nil {
			return err
		}
		if rps == 0 {
			fmt.Fprintf(out, "tenant %s: the default rate (the functions' TENANT_RATE)\n", tenant)
		} else {
			fmt.Fprintf(out, "tenant %s: %d requests per second to each application (its own rate)\n", tenant, rps)
		}
		return nil
	case value[0] == "default":
		if err := st.rates.ClearTenantRate(ctx, tenant); err != nil {
			return err
		}
		fmt.Fprintf(out, "tenant %s: back on the default rate (TENANT_RATE); warm functions apply it within AUTH_CACHE_TTL\n", tenant)
		return nil
	}
	rps, err := strconv.Atoi(value[0])
	if err != nil || !ratelimit.ValidRate(rps) {
		return fmt.Errorf("requests per second: want a whole number from 1 to %d, or default; got %q", ratelimit.MaxRate, value[0])
	}
	if err := st.rates.SetTenantRate(ctx, tenant, rps); err != nil {
		return err
	}
	fmt.Fprintf(out, "tenant %s: %d requests per second to each application; warm functions apply it within AUTH_CACHE_TTL\n", tenant, rps)
	return nil
}
