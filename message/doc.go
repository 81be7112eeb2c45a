// Package message defines the messages of an Acts context and the
// append-only Log that holds them.
//
// A context is a list of messages. Conversational messages carry a role and
// text; the others carry a type: data (005) and its kinds input (006) and
// state (009), tool (002), plan (012), meta (016), advisor (017) and error
// (010). Output messages (008) are data messages with hidden metadata
// (_call, _date, _outputMethod, _outputPath) that the LLM never sees.
//
// [Text], [System], [Input], [Data] and [Tool] build the common messages
// without writing JSON:
//
//	msgs := []message.Message{
//		message.System("You plan trips."),
//		message.Tool("weather"), // offers the registered tool weather
//		message.Text("Where is it warmest this weekend?"),
//	}
//
// # Spellings
//
// Parsing accepts every spelling the protocol pages use and normalises it;
// marshalling writes one canonical form. These three are the same message:
//
//	{"type":"data","kind":"state","data":{"x":1}}
//	{"type":"state","state":{"x":1}}
//	{"type":"state","x":1}
//
// In the inline form the payload is every field except type, kind, schema,
// description and fields starting with '_'; those names are reserved.
// A data message without a kind has kind "data". {"type":"system",
// "message":"..."} and {"role":"user","content":"..."} become text messages.
//
// # The log
//
// A [Log] is the single source of truth of a run: every view (the value of
// a variable, what the LLM is shown) is derived from it. It keeps an
// incremental index per data identity (kind and _instance), so resolving a
// reference costs the same whatever the length of the history.
package message
