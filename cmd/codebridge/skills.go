package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/codebridge/codebridge/internal/principal"
	"github.com/codebridge/codebridge/internal/skills"
	"github.com/codebridge/codebridge/internal/termtext"
	"github.com/spf13/cobra"
)

// skillsCommand lists, shows and deletes the skills agents saved.
func (c *cli) skillsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills [list|show NAME|rm NAME|publish NAME]",
		Short: "List, show or delete the skills saved with runtime.save_skill",
		Long: `List, show or delete the skills saved with runtime.save_skill. Each is a
readable .py file in the skills directory of the state directory; every new
sandbox gets them all. "codebridge skills" alone lists them.

Each principal has skills of its own: yours (stdio, exec) are in skills/;
those of each HTTP token holder in principals/<key>/skills/, which
--principal NAME shows and changes, and those of each OAuth subject, which
--oauth-principal SUBJECT@ISSUER (as the audit names it) does. "publish NAME" copies one of yours (or
of --principal's) into the team's skills (team/skills/), which every
principal's sessions can use and none can change; --team lists, shows and
removes those.`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 || len(args) == 1 && args[0] == "list":
				return nil
			case len(args) == 2 && (args[0] == "show" || args[0] == "rm" || args[0] == "publish"):
				return nil
			}
			return usageError{"give list, show NAME, rm NAME or publish NAME"}
		},
	}
	var asJSON, team bool
	var owner, oauthOwner string
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&owner, "principal", "", "the skills of the HTTP token with this name (from --token-file) instead of your own")
	cmd.Flags().StringVar(&oauthOwner, "oauth-principal", "", "the skills of this OAuth subject, SUBJECT@ISSUER as the audit names it after oauth:, instead of your own")
	cmd.MarkFlagsMutuallyExclusive("principal", "oauth-principal")
	cmd.Flags().BoolVar(&team, "team", false, "the team's skills (published for every principal) instead of your own")
	var s struct {
		State stateFlags
		Log   logFlags
	}
	return c.settingsCommand(cmd, &s, slices.Concat(flagsOf[stateFlags](), flagsOf[logFlags]()), commandLogLevel, func(args []string) error {
		root := skills.Open(s.State.dir())
		store := root
		if cmd.Flags().Changed("principal") {
			store = root.Of(principal.Token(owner))
		}
		if cmd.Flags().Changed("oauth-principal") {
			p, err := principal.ParseOAuth(oauthOwner)
			if err != nil {
				return usageError{err.Error()}
			}
			store = root.Of(p)
		}
		if len(args) > 0 && args[0] == "publish" {
			return c.publishSkill(store, root.Team(), args[1])
		}
		if team {
			store = root.Team()
		}
		if len(args) == 0 || args[0] == "list" {
			return c.listSkills(store, asJSON)
		}
		if args[0] == "show" {
			return c.showSkill(store, args[1], asJSON)
		}
		sk, err := store.Delete(args[1])
		if err != nil {
			return failure{where: "rm", err: err}
		}
		fmt.Fprintf(c.stdout, "deleted skill %s\n", sk.Name)
		return nil
	})
}

func (c *cli) listSkills(store *skills.Store, asJSON bool) error {
	list, err := store.List()
	if err != nil {
		fmt.Fprintf(c.stderr, "codebridge skills: %v\n", err)
	}
	if asJSON {
		out := []any{}
		for _, sk := range list {
			out = append(out, sk.Info())
		}
		if perr := printJSON(c.stdout, out); perr != nil {
			return perr
		}
	} else if len(list) == 0 {
		fmt.Fprintf(c.stdout, "no skills saved (in %s); save one from the sandbox with runtime.save_skill(name, function)\n", store.Dir())
	}
	for _, sk := range list {
		if !asJSON {
			desc, _, _ := strings.Cut(sk.Description, "\n")
			fmt.Fprintf(c.stdout, "%-24s %s\n", sk.Name, termtext.Line(desc))
		}
	}
	if err != nil {
		return errReported
	}
	return nil
}

func (c *cli) showSkill(store *skills.Store, name string, asJSON bool) error {
	sk, err := store.Get(name)
	if err != nil {
		return failure{where: "show", err: err}
	}
	if asJSON {
		return printJSON(c.stdout, map[string]any{"name": sk.Name, "description": sk.Description, "source": sk.Source, "file": string(sk.File())})
	}
	// Exactly the file every new sandbox runs, with what a terminal would
	// act on escaped: no line of it can hide another.
	fmt.Fprint(c.stdout, termtext.Text(string(sk.File())))
	return nil
}

// publishSkill copies a skill of from into the team's store, where every
// principal's sessions find it and none can change it.
func (c *cli) publishSkill(from, team *skills.Store, name string) error {
	sk, err := from.Get(name)
	if err == nil {
		sk, err = team.Save(sk.Name, sk.Source, sk.Description)
	}
	if err != nil {
		return failure{where: "publish", err: err}
	}
	fmt.Fprintf(c.stdout, "published skill %s for every principal (in %s); `codebridge skills rm --team %s` withdraws it\n", sk.Name, team.Dir(), sk.Name)
	return nil
}
