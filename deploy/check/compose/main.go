// Command compose-check loads compose files the way `docker compose` does (the same
// loader, github.com/compose-spec/compose-go/v2: merge, !reset, interpolation) and
// checks a production deployment:
//
//   - only the gateway publishes a port (and no service shares the host's network), or
//     the services named with -also-publish besides it (the opt-in doors for remote peers);
//   - no image floats (a digest, a full x.y.z version, or a tag the deployer must set);
//   - every credential comes from the environment or a secret: a required variable
//     (${VAR:?message}), an empty value, or a /run/secrets/ file, never a literal.
//
// The shell's environment is ignored: the files alone decide. A variable the merged
// model requires (${VAR:?...}) is set to a placeholder, so the check needs no real
// secrets; any other variable takes its default, as on a machine where it is unset.
//
//	compose-check -f docker-compose.yml -f docker-compose.prod.yml [-gateway gateway]
//	    [-also-publish rabbitmq] [-dump merged.json]
//
// -dump writes the merged, interpolated model as JSON (what `docker compose config`
// would print), for tests that look at more than these checks.
//
// Exit status: 0 when every check passes, 1 with one line per problem, 2 when the
// files do not load.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"

	"peertrain/deploy/check/rules"
)

const placeholder = "from-env-"

type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var paths files
	flag.Var(&paths, "f", "a compose file (repeat, in order)")
	var also files
	gateway := flag.String("gateway", "gateway", "the one service allowed to publish ports")
	flag.Var(&also, "also-publish", "another service allowed to publish ports (repeat)")
	dump := flag.String("dump", "", "write the merged model as JSON to this file")
	flag.Parse()
	if len(paths) == 0 {
		fmt.Fprintln(os.Stderr, "compose-check: no -f file given")
		os.Exit(2)
	}
	project, err := load(context.Background(), paths)
	if err != nil {
		fmt.Fprintf(os.Stderr, "compose-check: %v\n", err)
		os.Exit(2)
	}
	if *dump != "" {
		if err := writeJSON(project, *dump); err != nil {
			fmt.Fprintf(os.Stderr, "compose-check: %v\n", err)
			os.Exit(2)
		}
	}
	publishers := append([]string{*gateway}, also...)
	problems := check(project, publishers)
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "compose-check: %d problem(s) in %s\n", len(problems), paths.String())
		os.Exit(1)
	}
	var open []string
	for _, name := range publishers {
		var ports []string
		for _, p := range project.Services[name].Ports {
			ports = append(ports, fmt.Sprintf("%s:%d/%s", orAny(p.Published), p.Target, p.Protocol))
		}
		if len(publishers) > 1 {
			ports = append([]string{name}, ports...)
		}
		open = append(open, strings.Join(ports, " "))
	}
	fmt.Printf("compose-check: ok: %d services; only %s publish%s: %s\n", len(project.Services),
		strings.Join(publishers, ", "), map[bool]string{true: "", false: "es"}[len(publishers) > 1],
		strings.Join(open, "; "))
}

func writeJSON(project *types.Project, path string) error {
	data, err := project.MarshalJSON()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// load sets a placeholder for every variable some file requires (compose interpolates
// each file before merging them, so a requirement counts even where a later file
// overrides the value), then loads the files as `docker compose` would.
func load(ctx context.Context, paths []string) (*types.Project, error) {
	var env []string // the files alone decide, not the shell the check runs in
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		found := template.ExtractVariables(map[string]any{"file": string(text)}, template.DefaultPattern)
		for name, v := range found {
			if v.Required {
				env = append(env, name+"="+placeholder+name)
			}
		}
	}
	opts, err := cli.NewProjectOptions(paths, cli.WithEnv(env), cli.WithName("peertrain"))
	if err != nil {
		return nil, err
	}
	return opts.LoadProject(ctx)
}

func fromEnv(v string) bool { return strings.HasPrefix(v, placeholder) }

func check(project *types.Project, publishers []string) []string {
	var problems []string
	names := make([]string, 0, len(project.Services))
	for name := range project.Services {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		svc := project.Services[name]
		if !slices.Contains(publishers, name) {
			for _, p := range svc.Ports {
				problems = append(problems, fmt.Sprintf("%s: publishes %s:%d/%s (only %s may publish a port)",
					name, orAny(p.Published), p.Target, p.Protocol, strings.Join(publishers, ", ")))
			}
			if svc.NetworkMode == "host" {
				problems = append(problems, fmt.Sprintf("%s: network_mode host opens every port it listens on", name))
			}
		}
		if why := rules.FloatingImage(svc.Image, fromEnv); why != "" {
			problems = append(problems, fmt.Sprintf("%s: image %q floats: %s", name, svc.Image, why))
		}
		keys := make([]string, 0, len(svc.Environment))
		for k := range svc.Environment {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := svc.Environment[k]
			if v == nil {
				continue // taken from the environment compose runs in
			}
			if why := rules.CredentialProblem(k, *v, fromEnv); why != "" {
				problems = append(problems, fmt.Sprintf("%s: %s is not from the environment or a secret: %s", name, k, why))
			}
		}
	}
	return problems
}

func orAny(published string) string {
	if published == "" {
		return "(any)"
	}
	return published
}
