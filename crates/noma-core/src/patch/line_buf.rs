//! The source as editable lines, shared by every op: a mutable view that
//! keeps each line's own terminator (so CRLF, LF and CR lines outside an
//! edit come back byte-identical) and holds only the edited window.

/// The source as editable lines. Line `i` is followed by its own terminator
/// (empty for the last line), mirroring JavaScript's `split("\n")` /
/// `join("\n")` while remembering which terminator each line really had.
///
/// Every op builds one over the whole document but edits a few lines, so
/// it is lazy: only a *window* of lines around the edits is held as slots;
/// the lines before and after it are the source's own bytes, reached
/// through a sparse index (the start of every [`CHECKPOINT`]-th line) and a
/// cursor for sequential reads. [`LineBuf::finish`] copies the source
/// before and after the window with one `memcpy` each.
pub(super) struct LineBuf<'a> {
    src: &'a str,
    /// Byte offset of original line `k * CHECKPOINT`, for every `k`.
    checkpoints: Vec<usize>,
    /// Number of original lines (a trailing terminator yields a final empty line).
    total: usize,
    /// Current lines `head..head + window.len()` are `window`; lines before
    /// it are original lines `0..head`, lines after it original lines `tail..`.
    head: usize,
    window: Vec<Slot>,
    tail: usize,
    /// Texts of edited and inserted lines, indexed by [`Text::Owned`].
    owned: Vec<String>,
    /// Terminator for new lines: the first one the file uses, else `\n`.
    default_sep: Sep,
    /// The last original line looked up outside the window: (index, start byte).
    cursor: std::cell::Cell<(usize, usize)>,
}

/// One line in [`CHECKPOINT`] has its start offset indexed.
const CHECKPOINT: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sep {
    None,
    Lf,
    CrLf,
    Cr,
}

impl Sep {
    fn as_str(self) -> &'static str {
        match self {
            Sep::None => "",
            Sep::Lf => "\n",
            Sep::CrLf => "\r\n",
            Sep::Cr => "\r",
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Text {
    /// `src[start..end]`.
    Orig { start: usize, end: usize },
    /// `owned[i]`.
    Owned(usize),
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    text: Text,
    sep: Sep,
}

/// The terminator at byte `at` of `bytes` (`\n`, `\r\n` or a lone `\r`).
fn sep_at(bytes: &[u8], at: usize) -> Sep {
    if bytes[at] == b'\n' {
        Sep::Lf
    } else if bytes.get(at + 1) == Some(&b'\n') {
        Sep::CrLf
    } else {
        Sep::Cr
    }
}

/// The original line starting at byte `start`: its slot and the next line's start.
fn line_from(src: &str, start: usize) -> (Slot, usize) {
    let bytes = src.as_bytes();
    match memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
        Some(off) => {
            let at = start + off;
            let sep = sep_at(bytes, at);
            let slot = Slot {
                text: Text::Orig { start, end: at },
                sep,
            };
            (slot, at + sep.as_str().len())
        }
        None => {
            let slot = Slot {
                text: Text::Orig {
                    start,
                    end: src.len(),
                },
                sep: Sep::None,
            };
            (slot, src.len())
        }
    }
}

#[allow(clippy::len_without_is_empty)]
impl<'a> LineBuf<'a> {
    /// Splits `src` (BOM already removed) into lines.
    pub(super) fn new(src: &'a str) -> Self {
        let bytes = src.as_bytes();
        let mut checkpoints = vec![0];
        let mut total = 1;
        let mut record = |next_start: usize| {
            if total % CHECKPOINT == 0 {
                checkpoints.push(next_start);
            }
            total += 1;
        };
        if memchr::memchr(b'\r', bytes).is_none() {
            // LF-only text (the common case): one needle is markedly cheaper.
            for at in memchr::memchr_iter(b'\n', bytes) {
                record(at + 1);
            }
        } else {
            for at in memchr::memchr2_iter(b'\n', b'\r', bytes) {
                if at > 0 && bytes[at] == b'\n' && bytes[at - 1] == b'\r' {
                    continue; // the `\n` of a `\r\n` pair
                }
                record(at + sep_at(bytes, at).as_str().len());
            }
        }
        let default_sep =
            memchr::memchr2(b'\n', b'\r', bytes).map_or(Sep::Lf, |at| sep_at(bytes, at));
        LineBuf {
            src,
            checkpoints,
            total,
            head: 0,
            window: Vec::new(),
            tail: 0,
            owned: Vec::new(),
            default_sep,
            cursor: std::cell::Cell::new((0, 0)),
        }
    }

    /// Byte offset where original line `j` starts (`src.len()` past the end).
    fn orig_start(&self, j: usize) -> usize {
        if j >= self.total {
            return self.src.len();
        }
        let (cj, cstart) = self.cursor.get();
        let (mut at, mut start) = if cj <= j && j - cj < CHECKPOINT {
            (cj, cstart)
        } else {
            let k = j / CHECKPOINT;
            (k * CHECKPOINT, self.checkpoints[k])
        };
        while at < j {
            start = line_from(self.src, start).1;
            at += 1;
        }
        self.cursor.set((j, start));
        start
    }

    /// Original line `j`.
    fn orig(&self, j: usize) -> Slot {
        line_from(self.src, self.orig_start(j)).0
    }

    /// Number of lines (a trailing newline yields a final empty line).
    pub(super) fn len(&self) -> usize {
        self.head + self.window.len() + (self.total - self.tail)
    }

    fn text(&self, slot: &Slot) -> &str {
        match slot.text {
            Text::Orig { start, end } => self.src.get(start..end).unwrap_or(""),
            Text::Owned(i) => self.owned.get(i).map_or("", String::as_str),
        }
    }

    /// The slot of current line `i`, if it exists.
    fn slot(&self, i: usize) -> Option<Slot> {
        if i < self.head {
            return Some(self.orig(i));
        }
        if let Some(slot) = self.window.get(i - self.head) {
            return Some(*slot);
        }
        let j = i - self.head - self.window.len() + self.tail;
        (j < self.total).then(|| self.orig(j))
    }

    /// Line `i` (0-based) without its terminator; `""` when out of range,
    /// like `lines[i] ?? ""`.
    pub(super) fn get(&self, i: usize) -> &str {
        match self.slot(i) {
            Some(Slot {
                text: Text::Orig { start, end },
                ..
            }) => self.src.get(start..end).unwrap_or(""),
            Some(Slot {
                text: Text::Owned(k),
                ..
            }) => self.owned.get(k).map_or("", String::as_str),
            None => "",
        }
    }

    /// Whether line `i` exists and is exactly empty (`lines[i] === ""`).
    pub(super) fn is_empty_line(&self, i: usize) -> bool {
        i < self.len() && self.get(i).is_empty()
    }

    /// Makes current lines `from..to` (clamped to the text) part of the window.
    fn widen(&mut self, from: usize, to: usize) {
        let to = to.min(self.len());
        let from = from.min(to);
        if self.window.is_empty() && self.head == self.tail {
            // Nothing edited yet: move the empty window to `from`.
            self.head = from;
            self.tail = from;
        }
        if from < self.head {
            let mut start = self.orig_start(from);
            let mut front = Vec::with_capacity(self.head - from);
            for _ in from..self.head {
                let (slot, next) = line_from(self.src, start);
                front.push(slot);
                start = next;
            }
            self.window.splice(0..0, front);
            self.head = from;
        }
        let end = self.head + self.window.len();
        if to > end {
            let mut start = self.orig_start(self.tail);
            for _ in end..to {
                let (slot, next) = line_from(self.src, start);
                self.window.push(slot);
                start = next;
                self.tail += 1;
            }
        }
    }

    fn own(&mut self, text: String) -> Text {
        self.owned.push(text);
        Text::Owned(self.owned.len() - 1)
    }

    /// Replaces the text of line `i`, keeping its terminator.
    pub(super) fn set(&mut self, i: usize, text: String) {
        if i < self.len() {
            self.widen(i, i + 1);
            let t = self.own(text);
            if let Some(slot) = self.window.get_mut(i - self.head) {
                slot.text = t;
            }
        }
    }

    /// `Array.prototype.splice(at, del, ...new)` on the lines. Replaced lines
    /// hand their terminators to the new ones (the last new line inherits the
    /// last removed line's terminator, so end-of-file state is kept); other
    /// new lines use the file's default terminator.
    pub(super) fn splice(&mut self, at: usize, del: usize, new: Vec<String>) {
        let len = self.len();
        let at = at.min(len);
        let del = del.min(len - at);
        // The line before `at` may lose or gain a terminator at the end.
        self.widen(at.saturating_sub(1), at + del);
        let w = at - self.head;
        let removed: Vec<Sep> = self.window.drain(w..w + del).map(|l| l.sep).collect();
        let at_end = at == self.len();
        let k = new.len();
        if k == 0 {
            if at_end && at > 0 {
                // The line before the cut became the last line.
                if let Some(last) = self.window.last_mut() {
                    last.sep = Sep::None;
                }
            }
            return;
        }
        let appending_at_end = del == 0 && at_end;
        let sep_default = self.default_sep;
        let mut items = Vec::with_capacity(k);
        for (j, text) in new.into_iter().enumerate() {
            let sep = if del > 0 && j + 1 == k {
                removed[del - 1]
            } else if j + 1 < del {
                removed[j]
            } else if appending_at_end && j + 1 == k {
                Sep::None
            } else {
                sep_default
            };
            let text = self.own(text);
            items.push(Slot { text, sep });
        }
        if appending_at_end && at > 0 {
            if let Some(prev) = w.checked_sub(1).and_then(|p| self.window.get_mut(p)) {
                prev.sep = sep_default;
            }
        }
        self.window.splice(w..w, items);
    }

    /// Joins the lines back into text (after `prefix`, e.g. a BOM).
    pub(super) fn finish_with(self, prefix: &str) -> String {
        let before = &self.src[..self.orig_start(self.head)];
        let after = &self.src[self.orig_start(self.tail)..];
        let cap = prefix.len()
            + before.len()
            + after.len()
            + self
                .window
                .iter()
                .map(|l| self.text(l).len() + 2)
                .sum::<usize>();
        let mut out = String::with_capacity(cap);
        out.push_str(prefix);
        out.push_str(before);
        // A run of untouched lines whose terminators are the source's own
        // bytes is one contiguous source slice.
        let mut run: Option<(usize, usize)> = None;
        for l in &self.window {
            let sep = l.sep.as_str();
            if let Text::Orig { start, end } = l.text {
                let own_bytes = self.src.get(end..end + sep.len()) == Some(sep);
                if own_bytes {
                    run = match run {
                        Some((s, e)) if e == start => Some((s, end + sep.len())),
                        Some((s, e)) => {
                            out.push_str(self.src.get(s..e).unwrap_or(""));
                            Some((start, end + sep.len()))
                        }
                        None => Some((start, end + sep.len())),
                    };
                    continue;
                }
            }
            if let Some((s, e)) = run.take() {
                out.push_str(self.src.get(s..e).unwrap_or(""));
            }
            out.push_str(self.text(l));
            out.push_str(sep);
        }
        if let Some((s, e)) = run {
            out.push_str(self.src.get(s..e).unwrap_or(""));
        }
        out.push_str(after);
        out
    }

    /// Joins the lines back into text.
    pub(super) fn finish(self) -> String {
        self.finish_with("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splice_keeps_terminators() {
        let mut b = LineBuf::new("a\r\nb\r\nc\r\n");
        b.splice(1, 1, lines(&["x", "y"]));
        assert_eq!(b.finish(), "a\r\nx\r\ny\r\nc\r\n");
        let mut b = LineBuf::new("a\nb");
        b.splice(2, 0, lines(&["c"]));
        assert_eq!(b.finish(), "a\nb\nc");
        let mut b = LineBuf::new("a\nb\n");
        b.splice(1, 2, vec![]);
        assert_eq!(b.finish(), "a");
    }

    /// The eager model the lazy [`LineBuf`] must agree with: every line
    /// held as (text, terminator), the splice rules applied to the vector.
    struct Model {
        lines: Vec<(String, &'static str)>,
        default_sep: &'static str,
    }

    impl Model {
        fn new(src: &str) -> Model {
            let mut lines = Vec::new();
            let mut cur = String::new();
            let mut chars = src.chars().peekable();
            while let Some(c) = chars.next() {
                let sep = match c {
                    '\n' => "\n",
                    '\r' if chars.peek() == Some(&'\n') => {
                        chars.next();
                        "\r\n"
                    }
                    '\r' => "\r",
                    _ => {
                        cur.push(c);
                        continue;
                    }
                };
                lines.push((std::mem::take(&mut cur), sep));
            }
            lines.push((cur, ""));
            let default_sep = lines
                .iter()
                .map(|l| l.1)
                .find(|s| !s.is_empty())
                .unwrap_or("\n");
            Model { lines, default_sep }
        }

        fn splice(&mut self, at: usize, del: usize, new: Vec<String>) {
            let at = at.min(self.lines.len());
            let del = del.min(self.lines.len() - at);
            let removed: Vec<_> = self.lines.drain(at..at + del).map(|l| l.1).collect();
            let at_end = at == self.lines.len();
            if new.is_empty() {
                if at_end && at > 0 {
                    self.lines[at - 1].1 = "";
                }
                return;
            }
            let k = new.len();
            let appending = del == 0 && at_end;
            let items: Vec<_> = new
                .into_iter()
                .enumerate()
                .map(|(j, t)| {
                    let sep = if del > 0 && j + 1 == k {
                        removed[del - 1]
                    } else if j + 1 < del {
                        removed[j]
                    } else if appending && j + 1 == k {
                        ""
                    } else {
                        self.default_sep
                    };
                    (t, sep)
                })
                .collect();
            if appending && at > 0 {
                self.lines[at - 1].1 = self.default_sep;
            }
            self.lines.splice(at..at, items);
        }

        fn finish(&self) -> String {
            self.lines.iter().map(|(t, s)| format!("{t}{s}")).collect()
        }
    }

    #[derive(Debug, Clone)]
    enum Edit {
        Set(usize, String),
        Splice(usize, usize, Vec<String>),
        Get(usize),
    }

    fn edit() -> impl proptest::strategy::Strategy<Value = Edit> {
        use proptest::prelude::*;
        let text = || "[ab]{0,2}";
        prop_oneof![
            (0usize..300, text()).prop_map(|(i, t)| Edit::Set(i, t)),
            (
                0usize..300,
                0usize..4,
                proptest::collection::vec(text(), 0..4)
            )
                .prop_map(|(a, d, n)| Edit::Splice(a, d, n)),
            (0usize..300).prop_map(Edit::Get),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Windows that start anywhere, grow both ways, and cross the
        /// sparse index's checkpoints agree with the eager model.
        #[test]
        fn the_lazy_line_buffer_agrees_with_the_eager_model(
            src in "([ab]{0,3}(\n|\r\n|\r)){0,200}[ab]{0,2}",
            edits in proptest::collection::vec(edit(), 1..8),
        ) {
            let mut lazy = LineBuf::new(&src);
            let mut model = Model::new(&src);
            for e in edits {
                let n = model.lines.len();
                match e {
                    Edit::Set(i, t) => {
                        let i = i % (n + 1);
                        if i < n {
                            model.lines[i].0 = t.clone();
                        }
                        lazy.set(i, t);
                    }
                    Edit::Splice(at, del, new) => {
                        let at = at % (n + 1);
                        model.splice(at, del, new.clone());
                        lazy.splice(at, del, new);
                    }
                    Edit::Get(i) => {
                        let i = i % (n + 2);
                        let want = model.lines.get(i).map_or("", |l| l.0.as_str());
                        proptest::prop_assert_eq!(lazy.get(i), want);
                        proptest::prop_assert_eq!(lazy.is_empty_line(i), i < n && want.is_empty());
                    }
                }
                proptest::prop_assert_eq!(lazy.len(), model.lines.len());
            }
            proptest::prop_assert_eq!(lazy.finish(), model.finish());
        }
    }
}
