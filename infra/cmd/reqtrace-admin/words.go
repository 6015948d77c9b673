package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
)

// words runs the words commands: the spaces' word index marks, and the
// job that gives older spaces the word index.
func words(ctx context.Context, wiki *wikitable.WikiStore, args []string, out io.Writer) error {
	switch {
	case len(args) == 2 && args[0] == "status":
		status, err := wiki.WordIndexStatus(ctx, args[1])
		if err != nil {
			return err
		}
		if len(status) == 0 {
			fmt.Fprintf(out, "tenant %s has no registered space\n", args[1])
		}
		for _, sp := range status {
			state := "searches use the word index"
			if !sp.Words {
				state = "no word index: word searches scan the space (reqtrace-admin words index " + args[1] + ")"
			}
			fmt.Fprintf(out, "%s\t%s\n", sp.Space, state)
		}
		return nil
	case len(args) >= 2 && args[0] == "index":
		fs := flag.NewFlagSet("words index", flag.ContinueOnError)
		space := fs.String("space", "", "only this space (default: every space without the word index)")
		from := fs.String("from", "", "with -space: continue from this key (the last key a run reported)")
		if err := fs.Parse(args[2:]); err != nil {
			return err
		}
		if *from != "" && *space == "" {
			return errors.New("-from needs -space")
		}
		return indexWords(ctx, wiki, args[1], *space, *from, out)
	}
	return errUsage
}

// indexWords gives one space, or every space of tenant without it, the word
// index, reporting each chunk done so that an interrupted run can go on.
func indexWords(ctx context.Context, wiki *wikitable.WikiStore, tenant, space, from string, out io.Writer) error {
	spaces := []string{space}
	if space == "" {
		status, err := wiki.WordIndexStatus(ctx, tenant)
		if err != nil {
			return err
		}
		spaces = nil
		for _, sp := range status {
			if !sp.Words {
				spaces = append(spaces, sp.Space)
			}
		}
		if len(spaces) == 0 {
			fmt.Fprintf(out, "every space of tenant %s has the word index\n", tenant)
			return nil
		}
	}
	for _, sp := range spaces {
		rows, err := wiki.IndexWords(ctx, tenant, sp, from, func(key string) {
			fmt.Fprintf(out, "%s: rows up to %s written (to continue: words index %s -space %s -from %s)\n", sp, key, tenant, sp, key)
		})
		if err != nil {
			return fmt.Errorf("space %s: %w", sp, err)
		}
		fmt.Fprintf(out, "%s: word items written for the %d rows read; searches of the space now use the word index\n", sp, rows)
	}
	return nil
}
