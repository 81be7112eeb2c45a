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

// System returns the text of a late system message as it is sent in place.
func System(text string) string { return "<system>\n" + text + "\n</system>" }
