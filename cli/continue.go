package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/augceo/agent"
	"github.com/augceo/agent/message"
	"github.com/augceo/agent/platform"
	"github.com/augceo/agent/store"
)

var continueCommand = &command{
	name:     "continue",
	synopsis: []string{"continue RUN [--message TEXT|@FILE]... [--messages JSON|@FILE]... [flags]"},
	summary:  "take the next turn of a finished loop run's conversation",
	doc: `
Takes the next turn of the conversation an agent loop run holds: the run's
answer is appended as an assistant message, then the messages given, and
the loop goes on in the same run, which keeps its id. Each --message is a
user text message; --messages adds protocol messages (a JSON object, a
JSON array, or JSON lines), such as data with an _instance. They are
appended in the order given; @FILE reads a file (its last newline
dropped from a text), @- standard input. At least one is needed.

Only a loop run that is done goes on: a failed or interrupted run is
resumed first (acts resume RUN), and a plan run has no conversation. The
run's model, endpoint and settings are used unless --model or --base-url
say otherwise (which is said on standard error), and the MCP servers of
its Idea are started again. A run held by another process fails, naming
the holder. Messages the turn's first request cannot be made with (a
type, tool or preset nothing registers) are refused before anything is
written, naming the message. The turn has the limits of a run of its
own. Exit statuses and the summary are those of run; its steps, usage
and messages count every turn, its calls and output are this turn's.`,
	setup: func(fs *flag.FlagSet) func(context.Context, *Env, []string) error {
		var rf runFlags
		var said []turnMessage
		fs.Func("message", "a user text message, `TEXT` or @FILE (@- reads standard input); repeatable", func(s string) error {
			said = append(said, turnMessage{spec: s})
			return nil
		})
		fs.Func("messages", "protocol messages, `JSON` or @FILE: an object, an array or JSON lines; repeatable", func(s string) error {
			said = append(said, turnMessage{spec: s, protocol: true})
			return nil
		})
		rf.register(fs)
		return func(ctx context.Context, env *Env, pos []string) error {
			return continueRun(ctx, env, &rf, said, pos)
		}
	},
}

// turnMessage is one --message or --messages, in command-line order.
type turnMessage struct {
	spec     string
	protocol bool
}

// continueRun takes the next turn of a loop run: acts continue RUN.
func continueRun(ctx context.Context, env *Env, rf *runFlags, said []turnMessage, pos []string) error {
	if len(pos) != 1 {
		return fmt.Errorf("%w: continue takes RUN", errUsage)
	}
	if len(said) == 0 {
		return fmt.Errorf("%w: continue needs a message: --message TEXT|@FILE or --messages JSON|@FILE", errUsage)
	}
	if err := rf.check(); err != nil {
		return err
	}
	msgs, err := readTurn(env.Stdin, said)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, rf.store, false)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.Load(ctx, pos[0])
	if err != nil {
		return err // the store's error names the run
	}
	// What Continue would refuse, refused before a model or an MCP
	// server is started for nothing.
	if err := run.Lease.Yield(run.ID, "", platform.Now(ctx)); err != nil {
		return fmt.Errorf("continue %s: %w", run.ID, err)
	}
	switch {
	case run.Kind != "loop":
		return fmt.Errorf("continue %s: %w: it is a %s run, which has no conversation to go on with", run.ID, agent.ErrNotLoop, run.Kind)
	case run.Status != store.Done:
		return fmt.Errorf("continue %s: %w: it is %s; resume it first: %s resume %s", run.ID, agent.ErrUnfinished, run.Status, env.name(), run.ID)
	}
	cfg, saved, err := rf.reopenConfig(ctx, env, st, run, true)
	if err != nil {
		return err
	}
	if saved != nil {
		// The turn's calls may use the tools of the Idea's MCP servers,
		// which the run's context offers.
		_, closeMCP, err := connectMCP(ctx, env, "run "+run.ID, saved.MCP)
		if err != nil {
			return err
		}
		defer closeMCP()
	}
	events := sayFirst(agent.ContinueEvents(ctx, cfg, run.ID, msgs...), func() { sayEndpoint(env.Stderr, "continuing", run.ID, &cfg) })
	return drive(ctx, env, rf, run.ID, events, 0)
}

// readTurn reads the messages of --message and --messages, in order.
// Standard input is read once, by the first @-.
func readTurn(stdin io.Reader, said []turnMessage) ([]message.Message, error) {
	var msgs []message.Message
	stdinRead := false
	for i, s := range said {
		name := "--message"
		if s.protocol {
			name = "--messages"
		}
		data := []byte(s.spec)
		file, fromFile := strings.CutPrefix(s.spec, "@")
		if fromFile {
			name += " " + s.spec
			if file == "-" && stdinRead {
				return nil, fmt.Errorf("%w: %s: standard input is read once, by the first @-", errUsage, name)
			}
			stdinRead = stdinRead || file == "-"
			var err error
			if data, err = readFile(stdin, file); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
		if s.protocol {
			ms, err := parseMessages(name, data)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, ms...)
			continue
		}
		text := string(data)
		if fromFile {
			// A file, or what a pipe brings, ends with a newline that is
			// not part of what was said.
			text = strings.TrimSuffix(strings.TrimSuffix(text, "\n"), "\r")
		}
		if strings.TrimSpace(text) == "" {
			err := fmt.Errorf("%s: the message is empty (message %d)", name, i+1)
			if !fromFile {
				err = fmt.Errorf("%w: %w", errUsage, err)
			}
			return nil, err
		}
		msgs = append(msgs, message.Text(text))
	}
	return msgs, nil
}

// parseMessages reads protocol messages: one JSON object, a JSON array,
// or JSON lines, as --input reads its inputs.
func parseMessages(name string, data []byte) ([]message.Message, error) {
	data = bytes.TrimSpace(data)
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("%s: no messages", name)
	case data[0] == '[':
		msgs, err := message.ParseContext(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(msgs) == 0 {
			return nil, fmt.Errorf("%s: no messages", name)
		}
		return msgs, nil
	case json.Valid(data):
		m, err := message.Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return []message.Message{m}, nil
	}
	var msgs []message.Message
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		m, err := message.Parse(line)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, n, err)
		}
		msgs = append(msgs, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return msgs, nil
}
