package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Data that reaches the terminal as text (what users, models and tools
// wrote) goes through one of these first, so that it cannot move the
// cursor, clear the screen, overwrite a line or reorder text: control
// characters (C0, DEL, C1), Unicode bidirectional controls and invalid
// UTF-8 become visible escapes. Backslashes are left alone, so escaping
// twice changes nothing. --json output needs none of this: encoding/json
// escapes what it writes.

// escapeLine escapes s for a field on one line: newlines, carriage returns
// and tabs are escaped too (\n, \r, \t), other control characters as \x1b
// or \u009b, invalid bytes as \xff.
func escapeLine(s string) string { return escape(s, false, false) }

// escapeText is escapeLine for text of several lines: it keeps newlines
// and tabs.
func escapeText(s string) string { return escape(s, true, false) }

// escapeJSON escapes JSON text (compact or indented) with JSON's own
// escapes, \u001b, so that it stays valid JSON with the same value; an
// invalid byte becomes \ufffd, as encoding/json decodes it. It keeps
// newlines, which valid JSON has only between tokens.
func escapeJSON(s string) string { return escape(s, true, true) }

func escape(s string, keepLines, asJSON bool) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size, keepLines) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !needsEscape(r, size, keepLines) {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		switch {
		case r == utf8.RuneError && size == 1 && asJSON:
			b.WriteString(`\ufffd`)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case asJSON:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether the rune r, size bytes long, is escaped.
func needsEscape(r rune, size int, keepLines bool) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true // an invalid byte
	case r == '\n' || r == '\t':
		return !keepLines
	case r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0:
		return true // C0, DEL, C1
	case r == '\u2028' || r == '\u2029':
		return !keepLines // line and paragraph separators
	}
	return unicode.Is(unicode.Bidi_Control, r)
}
