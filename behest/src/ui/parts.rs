//! A model turn's stream read as parts that open, grow and close: text,
//! reasoning and tool calls. Both protocols show a turn this way; each
//! names the pieces in its own chunks.

use std::collections::HashMap;

use crate::conversation::ModelDelta;

/// One step of a part's life.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Piece<'a> {
    /// The turn's text begins.
    TextStart,
    /// More of it.
    Text(&'a str),
    /// It ended.
    TextEnd,
    /// The turn's reasoning begins.
    ReasoningStart,
    /// More of it.
    Reasoning(&'a str),
    /// It ended.
    ReasoningEnd,
    /// A tool call begins.
    CallStart { id: &'a str, name: &'a str },
    /// More of the arguments' JSON text of the call at `index` of the
    /// turn ([`Parts::call_id`] names it).
    CallArguments { index: usize, arguments: &'a str },
    /// What streamed is void: the turn is asked for again.
    Restart,
    /// A retry or a fallback, told as it happens.
    Notice(&'a ModelDelta),
}

/// The parts of the turn streaming now.
#[derive(Debug, Default)]
pub(super) struct Parts {
    text: bool,
    reasoning: bool,
    /// The calls that streamed, by their index in the turn: id and tool.
    calls: HashMap<usize, (String, String)>,
    /// Whether any text came as deltas (the whole message then repeats it).
    streamed_text: bool,
}

impl Parts {
    /// The pieces `delta` makes, in order: at most three (the part it
    /// closes, the part it opens, what it adds).
    pub fn delta<'a>(&mut self, delta: &'a ModelDelta) -> impl Iterator<Item = Piece<'a>> {
        let mut pieces: [Option<Piece<'a>>; 3] = [None; 3];
        match delta {
            ModelDelta::Text(text) => {
                pieces[0] = self.end_reasoning();
                if !std::mem::replace(&mut self.text, true) {
                    pieces[1] = Some(Piece::TextStart);
                }
                self.streamed_text = true;
                pieces[2] = Some(Piece::Text(text));
            }
            ModelDelta::Reasoning(text) => {
                pieces[0] = self.end_text();
                if !std::mem::replace(&mut self.reasoning, true) {
                    pieces[1] = Some(Piece::ReasoningStart);
                }
                pieces[2] = Some(Piece::Reasoning(text));
            }
            ModelDelta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                // A call ends the text or the reasoning before it (one of
                // them at most is open).
                pieces[0] = self.end_text().or_else(|| self.end_reasoning());
                if let (false, Some(id), Some(name)) = (self.calls.contains_key(index), id, name) {
                    self.calls.insert(*index, (id.clone(), name.clone()));
                    pieces[1] = Some(Piece::CallStart { id, name });
                }
                // Arguments of a call whose start never came are not shown:
                // the whole message gives the call.
                if self.calls.contains_key(index) && !arguments.is_empty() {
                    pieces[2] = Some(Piece::CallArguments {
                        index: *index,
                        arguments,
                    });
                }
            }
            ModelDelta::Restart => pieces[0] = Some(Piece::Restart),
            notice => pieces[0] = Some(Piece::Notice(notice)),
        }
        pieces.into_iter().flatten()
    }

    /// The id of the streaming call at `index` (empty if none started
    /// there: no piece names such a call).
    pub fn call_id(&self, index: usize) -> &str {
        self.calls.get(&index).map_or("", |(id, _)| id.as_str())
    }

    /// Ends the open text or reasoning.
    pub fn close(&mut self) -> impl Iterator<Item = Piece<'static>> {
        [self.end_text(), self.end_reasoning()]
            .into_iter()
            .flatten()
    }

    /// Whether the turn's text came as deltas.
    pub fn streamed_text(&self) -> bool {
        self.streamed_text
    }

    /// The calls that streamed, in the turn's order, forgotten here.
    pub fn take_calls(&mut self) -> Vec<(String, String)> {
        let mut calls: Vec<(usize, (String, String))> = self.calls.drain().collect();
        calls.sort_unstable_by_key(|(index, _)| *index);
        calls.into_iter().map(|(_, call)| call).collect()
    }

    /// Forgets the turn: a new one begins, or this one is asked again.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    fn end_text(&mut self) -> Option<Piece<'static>> {
        std::mem::take(&mut self.text).then_some(Piece::TextEnd)
    }

    fn end_reasoning(&mut self) -> Option<Piece<'static>> {
        std::mem::take(&mut self.reasoning).then_some(Piece::ReasoningEnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(parts: &mut Parts, deltas: &[ModelDelta]) -> Vec<String> {
        let mut out = Vec::new();
        for delta in deltas {
            for piece in parts.delta(delta) {
                out.push(match piece {
                    Piece::CallArguments { index, arguments } => {
                        format!("args {} {arguments}", parts.call_id(index))
                    }
                    other => format!("{other:?}"),
                });
            }
        }
        out.extend(parts.close().map(|piece| format!("{piece:?}")));
        out
    }

    #[test]
    fn parts_open_grow_and_close_in_order() {
        let call = |index, id: Option<&str>, arguments: &str| ModelDelta::ToolCall {
            index,
            id: id.map(str::to_owned),
            name: id.map(|_| "look_up".to_owned()),
            arguments: arguments.to_owned(),
        };
        let mut parts = Parts::default();
        let seen = pieces(
            &mut parts,
            &[
                ModelDelta::Reasoning("hm".into()),
                ModelDelta::Text("Hi".into()),
                ModelDelta::Text("!".into()),
                call(0, Some("c1"), "{\"a\":"),
                call(0, None, "1}"),
                // Arguments of a call never started are not shown.
                call(1, None, "{}"),
            ],
        );
        assert_eq!(
            seen,
            [
                "ReasoningStart",
                "Reasoning(\"hm\")",
                "ReasoningEnd",
                "TextStart",
                "Text(\"Hi\")",
                "Text(\"!\")",
                "TextEnd",
                "CallStart { id: \"c1\", name: \"look_up\" }",
                "args c1 {\"a\":",
                "args c1 1}",
            ]
        );
        assert!(parts.streamed_text());
        assert_eq!(
            parts.take_calls(),
            [("c1".to_owned(), "look_up".to_owned())]
        );
        assert_eq!(parts.call_id(0), "");
    }
}
