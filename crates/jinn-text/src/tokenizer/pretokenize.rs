//! Pre-tokenisation: cut text into pieces that are encoded independently (and cached).
//!
//! Rules (GPT-2-like, no look-ahead regex needed, so hand-written over `char` classes; the
//! `regex` crate has no look-ahead for GPT-2's `\s+(?!\S)`):
//! - a piece is an optional single leading space `' '` followed by a maximal run of one class:
//!   letters (`char::is_alphabetic`), digits (`char::is_numeric`) or other non-space characters;
//! - a run of whitespace is its own piece, except that a final `' '` directly before a
//!   non-space character is left to start the next piece.
//!
//! Concatenating the pieces gives back the text exactly.

/// What a piece holds after its optional leading space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PieceKind {
    /// Letters: a word, segmented into morphs.
    Word,
    /// Digits, punctuation/symbols, or whitespace: never segmented into morphs.
    Other,
}

/// One piece of text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece<'a> {
    /// The piece, leading space included.
    pub text: &'a str,
    /// Byte length of the leading space (0 or 1).
    pub lead: usize,
    /// Its kind.
    pub kind: PieceKind,
}

impl<'a> Piece<'a> {
    /// The piece without its leading space (the word for [`PieceKind::Word`]).
    pub fn body(&self) -> &'a str {
        &self.text[self.lead..]
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    Space,
    Other,
}

fn class(c: char) -> Class {
    if c.is_alphabetic() {
        Class::Letter
    } else if c.is_numeric() {
        Class::Digit
    } else if c.is_whitespace() {
        Class::Space
    } else {
        Class::Other
    }
}

/// Iterator over the pieces of a text; see the module documentation for the rules.
pub struct Pieces<'a> {
    text: &'a str,
    pos: usize,
}

/// Cut `text` into pieces.
pub fn pieces(text: &str) -> Pieces<'_> {
    Pieces { text, pos: 0 }
}

impl<'a> Iterator for Pieces<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        let rest = &self.text[self.pos..];
        let mut chars = rest.char_indices().peekable();
        let (_, first) = chars.next()?;
        let start = self.pos;
        let (lead, body_class, body_start) = match class(first) {
            Class::Space => {
                // Whitespace run.
                let mut end = rest.len();
                let mut last_ws = (0, first);
                for (i, c) in rest.char_indices() {
                    if class(c) != Class::Space {
                        end = i;
                        break;
                    }
                    last_ws = (i, c);
                }
                let followed = end < rest.len();
                if followed && last_ws.1 == ' ' {
                    if last_ws.0 > 0 {
                        // Leave the final space for the next piece.
                        self.pos += last_ws.0;
                        return Some(Piece { text: &rest[..last_ws.0], lead: 0, kind: PieceKind::Other });
                    }
                    // A single space then a non-space: the space leads the next piece.
                    let (_, c) = rest[1..].char_indices().next().expect("followed by a char");
                    (1, class(c), 1)
                } else {
                    self.pos += end;
                    return Some(Piece { text: &rest[..end], lead: 0, kind: PieceKind::Other });
                }
            }
            c => (0, c, 0),
        };
        let body = &rest[body_start..];
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            if class(c) != body_class {
                end = i;
                break;
            }
        }
        let len = body_start + end;
        self.pos = start + len;
        let kind = if body_class == Class::Letter { PieceKind::Word } else { PieceKind::Other };
        Some(Piece { text: &rest[..len], lead, kind })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(s: &str) -> Vec<&str> {
        pieces(s).map(|p| p.text).collect()
    }

    #[test]
    fn pieces_follow_the_rules_and_concatenate_back() {
        assert_eq!(
            cut("Hello  world, 42x!\n\n  ok"),
            ["Hello", " ", " world", ",", " 42", "x", "!", "\n\n ", " ok"]
        );
        assert_eq!(cut("  "), ["  "]);
        assert_eq!(cut(" a"), [" a"]);
        assert_eq!(cut("a \u{1F600}b"), ["a", " \u{1F600}", "b"]);
        for s in ["", " ", "\t x", "héllo wörld ", "日本語 テキスト"] {
            assert_eq!(cut(s).concat(), s);
        }
        let p: Vec<_> = pieces(" unhappy.").collect();
        assert_eq!((p[0].kind, p[0].body()), (PieceKind::Word, "unhappy"));
        assert_eq!(p[1].kind, PieceKind::Other);
    }
}
