package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/augceo/agent/message"
	"github.com/augceo/agent/ref"
)

func resolveCmd(_ context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	instance := fs.String("instance", "", "resolve as a call targeting this instance")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("%w: resolve takes CONTEXT.json and EXPR", errUsage)
	}
	file, expr := pos[0], pos[1]
	var data []byte
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	msgs, err := message.ParseContext(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	log, err := message.NewLog(msgs...)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var src ref.Source = log
	if *instance != "" {
		src = log.Instance(*instance)
	}
	v, err := ref.EvalString(src, expr)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, indentJSON(v))
	return err
}

func indentJSON(v json.RawMessage) string {
	var out bytes.Buffer
	if err := json.Indent(&out, v, "", "  "); err != nil {
		return string(v)
	}
	return out.String()
}
