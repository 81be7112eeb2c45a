package agent

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrNoProvider reports a Config without a Provider.
	ErrNoProvider = errors.New("agent: no provider")
	// ErrUnknownType reports a message type no handler is registered for.
	ErrUnknownType = errors.New("agent: no handler for message type")
	// ErrUnknownTool reports a reference to a tool that is not defined.
	ErrUnknownTool = errors.New("agent: unknown tool")
)

// InvalidError reports a solution that stayed invalid after every repair
// attempt. Raw is the model's last answer, as it was.
type InvalidError struct {
	Index    int    // which solution
	Attempts int    // how many answers were tried
	Raw      string // the last answer
	Err      error  // why it is invalid: JSON syntax or *schema.ValidationError
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("agent: solution %d invalid after %d attempts: %v", e.Index, e.Attempts, e.Err)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// MessageError reports a context message a handler could not use.
type MessageError struct {
	Index int    // position in the context
	Type  string // the message type
	Err   error
}

func (e *MessageError) Error() string {
	return fmt.Sprintf("agent: message %d (%s): %v", e.Index, e.Type, e.Err)
}

func (e *MessageError) Unwrap() error { return e.Err }
