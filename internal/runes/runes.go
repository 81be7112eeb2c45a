// Package runes cuts text for messages that a model or a person reads,
// on rune boundaries, so a cut never leaves invalid UTF-8 behind.
package runes

import "unicode/utf8"

// Truncate cuts s to at most n bytes, on a rune boundary, and marks the
// cut with "…".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
