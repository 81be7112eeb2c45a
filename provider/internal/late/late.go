// Package late says how an adapter whose API takes system instructions
// apart from the conversation (Anthropic's system, Gemini's
// systemInstruction) sends a system message that comes after the
// conversation began: a late one.
//
// Such a message stays where it stands, as a user message: moved to the
// front, it would change the start of a prefix the model has already read,
// and every later request would miss the prompt cache from there on. The
// tags tell the model the text is an instruction, not the user's words.
package late

import "strings"

// System returns the text of a late system message as it is sent in place:
// text between <system> tags, with every closing tag inside it escaped
// (see Escape).
func System(text string) string { return "<system>\n" + Escape(text) + "\n</system>" }

// Escape writes the "<" of each closing system tag in text as "&lt;", in
// any case and with any spaces after "</" ("</system>", "</ SYSTEM"), so
// that only the tag System adds ends the message: text quoting the tag,
// or a tool's output that carries one, would otherwise end it early, and
// what follows would read as the user's words. Only "<" of those tags is
// touched: the text stays as written elsewhere, and "&lt;" is what the
// model knows from XML for a "<" that opens nothing.
func Escape(text string) string {
	var b strings.Builder
	rest := text
	for {
		i := closing(rest)
		if i < 0 {
			break
		}
		if b.Len() == 0 {
			b.Grow(len(text) + 3)
		}
		b.WriteString(rest[:i])
		b.WriteString("&lt;")
		rest = rest[i+1:]
	}
	if b.Len() == 0 {
		return text
	}
	b.WriteString(rest)
	return b.String()
}

// closing returns the index of the first closing system tag in s, "</",
// optional spaces and "system" in any case, or -1.
func closing(s string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], "</")
		if i < 0 {
			return -1
		}
		at := off + i
		name := strings.TrimLeft(s[at+2:], " \t\r\n")
		if len(name) >= len("system") && strings.EqualFold(name[:len("system")], "system") {
			return at
		}
		off = at + 2
	}
}
