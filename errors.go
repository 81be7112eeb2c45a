package agent

import (
	"errors"
	"fmt"
	"strings"

	"github.com/augceo/agent/provider"
)

// Sentinel errors.
var (
	// ErrNoProvider reports a Config without a Provider.
	ErrNoProvider = errors.New("agent: no provider")
	// ErrUnknownType reports a message type no handler is registered for.
	ErrUnknownType = errors.New("agent: no handler for message type")
	// ErrUnknownTool reports a reference to a tool that is not defined.
	ErrUnknownTool = errors.New("agent: unknown tool")
	// ErrRendering reports a Rendering that is not one of the renderings.
	ErrRendering = errors.New("unknown rendering")
	// ErrDuplicate reports a registration under a name that is taken (see
	// [Func]).
	ErrDuplicate = errors.New("agent: already registered")
)

// Plan errors. A *PlanError lists its problems; errors.Is finds these
// sentinels through it.
var (
	// ErrCycle reports calls that depend on each other's output (012:
	// a plan must be acyclic). The problem's Err is a *CycleError.
	ErrCycle = errors.New("agent: dependency cycle")
	// ErrUnsatisfiable reports a reference that no call of the plan writes
	// and the context has no value for.
	ErrUnsatisfiable = errors.New("agent: unsatisfiable reference")
	// ErrInvalidCall reports a call that is not a JSON object with a
	// _tool, or whose literal parameters do not fit the tool.
	ErrInvalidCall = errors.New("agent: invalid call")
	// ErrNeverReady reports a call of an executed plan whose references
	// never resolved: the branch it reads was not taken, or a call it
	// depends on failed.
	ErrNeverReady = errors.New("agent: call never became ready")
	// ErrNoInstances reports an instanced execution over a context whose
	// data messages carry no _instance.
	ErrNoInstances = errors.New("agent: no instances in the context")
)

// errGoexit is why a call whose code called runtime.Goexit failed.
var errGoexit = errors.New("the activity called runtime.Goexit and did not return")

// ErrAnswerCut reports an invalid answer that the provider ended at the
// output token limit (finish reason "length", "max_tokens" or Gemini's
// "continuation"): it was cut off before it was whole. An *InvalidError
// wraps it; raise Config.MaxTokens, or ask for less in one answer.
var ErrAnswerCut = errors.New("agent: the answer reached the output token limit")

// InvalidError reports a solution that stayed invalid after every repair
// attempt. Raw is the model's last answer, as it was.
type InvalidError struct {
	Index    int    // which solution
	Attempts int    // how many answers were tried
	Raw      string // the last answer
	// Err is why it is invalid: JSON syntax or *schema.ValidationError. In
	// the Repair event of a solution the provider stopped (see Config.N),
	// it is the provider.SolutionError; of one a failed provider call cut
	// before it arrived whole, that call's error.
	Err error
	// Usage sums the requests that produced it, repairs included; with
	// Config.N > 1, those of the Request until then, as its first request
	// answered every solution.
	Usage provider.Usage
}

func (e *InvalidError) Error() string { return "agent: " + e.what() }

// what is the error's text without the package.
func (e *InvalidError) what() string {
	return fmt.Sprintf("solution %d invalid after %d attempts: %s", e.Index, e.Attempts, inner(e.Err))
}

func (e *InvalidError) Unwrap() error { return e.Err }

// UndecodedError reports solutions of [RequestAs] whose output conforms
// to the schema of T but does not decode into a T. RequestAs returns it
// with the solutions that decoded.
type UndecodedError struct {
	// Indexes are the solutions that did not decode, as
	// Response.Solutions numbers them, in increasing order.
	Indexes []int
	// Errs says why each did not, in the same order: a
	// *schema.DecodeError, which names the exact place.
	Errs []error
}

// Error returns, for example, "agent: solution 1: schema: decode at
// /count/a: json: cannot unmarshal number 1.0 into Go struct field
// tally.count of type int8", the solutions joined by "; ".
func (e *UndecodedError) Error() string {
	var b strings.Builder
	b.WriteString("agent: ")
	for i, index := range e.Indexes {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "solution %d: %s", index, inner(e.Errs[i]))
	}
	return b.String()
}

// Unwrap returns why each solution did not decode.
func (e *UndecodedError) Unwrap() []error { return e.Errs }

// NoSolutionError reports a Request for several solutions (Config.N > 1)
// that ends with none: each one the provider answered was left out (see
// Event.Lost), and the provider gave no other.
type NoSolutionError struct {
	N int // the solutions asked for
	// Lost says why each answered solution was left out, in order; the
	// N - len(Lost) others the provider never gave.
	Lost []*InvalidError
	// Usage sums every request made, repairs included.
	Usage provider.Usage
}

// Error returns, for example, "agent: no good solution of 3: solution 0
// invalid after 3 attempts: at /output: …; solution 2 invalid after 1
// attempts: …; 1 not given".
func (e *NoSolutionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agent: no good solution of %d: ", e.N)
	for i, inv := range e.Lost {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(inv.what())
	}
	if k := e.N - len(e.Lost); k > 0 {
		fmt.Fprintf(&b, "; %d not given", k)
	}
	return b.String()
}

// Unwrap returns the error of each solution left out.
func (e *NoSolutionError) Unwrap() []error {
	errs := make([]error, len(e.Lost))
	for i, inv := range e.Lost {
		errs[i] = inv
	}
	return errs
}

// UsageError is the error of a Request that failed after its provider
// calls used tokens, which the provider may bill all the same: Usage sums
// them, as far as the provider said (see provider.Chunk.Usage: a stream
// cut before OpenAI's last chunk says none), failed calls and repairs
// included. Its text is Err's. [UsageOf] reads the usage of any error of
// a Request.
type UsageError struct {
	Err   error
	Usage provider.Usage
}

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

// withUsage attaches u to err, the error of a Request, when it counts any
// token.
func withUsage(err error, u provider.Usage) error {
	if u == (provider.Usage{}) {
		return err
	}
	return &UsageError{Err: err, Usage: u}
}

// UsageOf returns the tokens that the Request whose error err is (or
// wraps: a run's step, a Plan) used before it failed: those of the
// outermost *UsageError, *InvalidError or *NoSolutionError in err; zero
// for any other error.
func UsageOf(err error) provider.Usage {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e := e.(type) {
		case *UsageError:
			return e.Usage
		case *InvalidError:
			return e.Usage
		case *NoSolutionError:
			return e.Usage
		}
	}
	return provider.Usage{}
}

// MessageError reports a context message a handler could not use.
type MessageError struct {
	Index int    // position in the context
	Type  string // the message type
	Err   error
}

func (e *MessageError) Error() string {
	return fmt.Sprintf("agent: message %d (%s): %s", e.Index, e.Type, inner(e.Err))
}

func (e *MessageError) Unwrap() error { return e.Err }

// prefix starts the text of this package's errors.
const prefix = "agent: "

// errorf is fmt.Errorf for the errors of this package, whose text starts
// with "agent: ": an error of this package it wraps says the prefix no
// more, so that wrapping does not repeat it ("agent: step 2: provider:
// boom", not "agent: step 2: agent: provider: boom"). errors.Is and
// errors.As see the wrapped errors as they were.
func errorf(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok && prefixed(err) {
			args[i] = unprefixed{err}
		}
	}
	return fmt.Errorf(format, args...)
}

// prefixed reports whether err's text starts with the package's prefix.
// An Error method that panics (a typed nil, say) is left to fmt, which
// reports it in the text rather than panicking.
func prefixed(err error) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return strings.HasPrefix(err.Error(), prefix)
}

// unprefixed is an error of this package said inside another one.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return inner(u.err) }
func (u unprefixed) Unwrap() error { return u.err }

// inner is the text of err as another error of this package says it:
// without the package's prefix.
func inner(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), prefix)
}
