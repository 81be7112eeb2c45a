// Package ref parses and evaluates the data wiring of the Acts protocol:
// variable references (007), output paths (008) and expressions (011).
//
// A reference is a string †kind.path: kind names a data identity (state,
// input, data, ...), path is dot notation where numeric segments index arrays.
// An expression joins references with && and ||, && binding tighter:
//
//	†state.userInput || †state.default        // input: first that resolves
//	†state.userProfile && †state.permissions  // input: all must exist, value of the last
//	†state.receipt || †state.error            // output: branch (success, error)
//	†data.user.summary && †data.audit.summary // output: fan-out to both
//
// A string parameter is an expression when it starts with the dagger "†".
// To write a literal string that starts with a dagger, double it: "††x" is
// the literal "†x" (see [Literal]).
//
// The package is pure: it parses, folds writes ([Apply]) and substitutes
// references into call parameters ([Substitute]) against any [Source]; it
// does no I/O and keeps no state. The message package's Log is the Source
// used at run time.
//
// # Resolution
//
// The value of †k.p is defined by the writes to kind k read newest to
// oldest: a write at path w is relevant when w is a prefix of p or p a prefix
// of w. The scan stops at the first relevant set at w ⊑ p; the collected
// writes are folded oldest to newest with their [Method] and p is extracted.
// Sources may compute this incrementally but must agree with that scan.
package ref
