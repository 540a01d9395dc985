//! The numeric formula language of `::computed_metric` / `::computed_plot`:
//! a tokenizer and a recursive-descent parser with a nesting limit.
//!
//! Grammar (loosest binding first), as in the reference implementation:
//!
//! ```text
//! comparison := additive ( ( ">" | ">=" | "<" | "<=" | "==" | "!=" ) additive )?
//! additive   := multiplicative ( ( "+" | "-" ) multiplicative )*
//! multiplicative := power ( ( "*" | "/" ) power )*
//! power      := unary ( "^" power )?            -- right-associative
//! unary      := ( "+" | "-" ) unary | primary
//! primary    := number | identifier | call | "(" comparison ")"
//! call       := FUNCTION "(" ( comparison ( "," comparison )* )? ")"
//! ```
//!
//! Identifiers are `[A-Za-z_][A-Za-z0-9_.-]*`, so `tax-rate` is one name;
//! write `a - b` with spaces to subtract. Only the allow-listed functions may
//! be called; arity is checked at evaluation time, not here.

use crate::doc::slug::is_js_space;

/// Functions a formula may call.
pub const FUNCTIONS: &[&str] = &["pow", "min", "max", "clamp", "round", "abs", "if"];

/// Nesting deeper than this (parentheses, calls, unary signs, `^` chains) is
/// a parse error, so hostile input cannot exhaust the stack.
pub const MAX_DEPTH: usize = 128;

/// Formulas longer than this many tokens are rejected: it bounds the height
/// of left-leaning operator chains (`1+1+…`), which the depth limit does not.
pub const MAX_TOKENS: usize = 4096;

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A numeric literal.
    Number(f64),
    /// A reference to a control, computed block or domain variable.
    Ident(String),
    /// `+x` or `-x`.
    Unary(char, Box<Expr>),
    /// `a op b`; `op` is one of `+ - * / ^ > >= < <= == !=`.
    Binary(&'static str, Box<Expr>, Box<Expr>),
    /// An allow-listed function call.
    Call(&'static str, Vec<Expr>),
}

impl Expr {
    /// The distinct identifiers the formula references, sorted.
    pub fn identifiers(&self) -> Vec<&str> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            match e {
                Expr::Number(_) => {}
                Expr::Ident(name) => out.push(name.as_str()),
                Expr::Unary(_, x) => stack.push(x),
                Expr::Binary(_, a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                Expr::Call(_, args) => stack.extend(args.iter()),
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Why a formula did not parse.
#[derive(Debug, Clone, PartialEq)]
pub struct FormulaError {
    /// Human-readable reason.
    pub message: String,
    /// Character offset (0-based) where the problem was found.
    pub pos: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok<'a> {
    Number(&'a str),
    Ident(&'a str),
    Op(&'a str),
    LParen,
    RParen,
    Comma,
    Eof,
}

impl Tok<'_> {
    fn describe(&self) -> String {
        match self {
            Tok::Number(s) | Tok::Ident(s) | Tok::Op(s) => format!("\"{s}\""),
            Tok::LParen => "\"(\"".into(),
            Tok::RParen => "\")\"".into(),
            Tok::Comma => "\",\"".into(),
            Tok::Eof => "end of formula".into(),
        }
    }
}

fn tokenize(src: &str) -> Vec<(Tok<'_>, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0usize;
    let mut chars = 0usize; // character offset, for messages
    while i < b.len() {
        let c = b[i];
        let start = i;
        let tok =
            if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
                i = read_number(b, i);
                Tok::Number(&src[start..i])
            } else if c.is_ascii_alphabetic() || c == b'_' {
                i += 1;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'.' | b'-'))
                {
                    i += 1;
                }
                Tok::Ident(&src[start..i])
            } else if c == b'(' {
                i += 1;
                Tok::LParen
            } else if c == b')' {
                i += 1;
                Tok::RParen
            } else if c == b',' {
                i += 1;
                Tok::Comma
            } else if matches!(&b[i..], [b'>' | b'<' | b'=' | b'!', b'=', ..]) {
                i += 2;
                Tok::Op(&src[start..i])
            } else {
                // One whole character: whitespace is skipped, anything else is an
                // operator token the parser will reject if it is not meaningful.
                let ch = src[i..].chars().next().unwrap_or(' ');
                i += ch.len_utf8();
                if is_js_space(ch) {
                    chars += 1;
                    continue;
                }
                Tok::Op(&src[start..i])
            };
        out.push((tok, chars));
        chars += src[start..i].chars().count();
    }
    out.push((Tok::Eof, chars));
    out
}

fn read_number(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let exp_start = i;
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let digits = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == digits {
            return exp_start;
        }
    }
    i
}

struct Parser<'a> {
    toks: Vec<(Tok<'a>, usize)>,
    at: usize,
    depth: usize,
}

type PResult = Result<Expr, FormulaError>;

impl<'a> Parser<'a> {
    fn peek(&self) -> &(Tok<'a>, usize) {
        // The token list always ends with Eof, and `at` never passes it.
        &self.toks[self.at.min(self.toks.len() - 1)]
    }

    fn bump(&mut self) {
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
    }

    fn eat_op(&mut self, ops: &[&'static str]) -> Option<&'static str> {
        if let Tok::Op(s) = self.peek().0 {
            if let Some(op) = ops.iter().find(|o| **o == s) {
                self.bump();
                return Some(op);
            }
        }
        None
    }

    fn error(&self, message: String) -> FormulaError {
        FormulaError {
            message,
            pos: self.peek().1,
        }
    }

    fn enter(&mut self) -> Result<(), FormulaError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(format!("formula nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }

    fn comparison(&mut self) -> PResult {
        let left = self.additive()?;
        if let Some(op) = self.eat_op(&[">=", "<=", "==", "!=", ">", "<"]) {
            let right = self.additive()?;
            return Ok(Expr::Binary(op, Box::new(left), Box::new(right)));
        }
        Ok(left)
    }

    fn additive(&mut self) -> PResult {
        let mut left = self.multiplicative()?;
        while let Some(op) = self.eat_op(&["+", "-"]) {
            let right = self.multiplicative()?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn multiplicative(&mut self) -> PResult {
        let mut left = self.power()?;
        while let Some(op) = self.eat_op(&["*", "/"]) {
            let right = self.power()?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn power(&mut self) -> PResult {
        let left = self.unary()?;
        if self.eat_op(&["^"]).is_some() {
            self.enter()?;
            let right = self.power()?;
            self.depth -= 1;
            return Ok(Expr::Binary("^", Box::new(left), Box::new(right)));
        }
        Ok(left)
    }

    fn unary(&mut self) -> PResult {
        if let Some(op) = self.eat_op(&["+", "-"]) {
            self.enter()?;
            let inner = self.unary()?;
            self.depth -= 1;
            let sign = if op == "-" { '-' } else { '+' };
            return Ok(Expr::Unary(sign, Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> PResult {
        let (tok, _) = self.peek().clone();
        match tok {
            Tok::Number(text) => {
                let value: f64 = text.parse().unwrap_or(f64::NAN);
                if !value.is_finite() {
                    return Err(self.error(format!("invalid number \"{text}\"")));
                }
                self.bump();
                Ok(Expr::Number(value))
            }
            Tok::Ident(name) => {
                let name_err = self.error(String::new());
                self.bump();
                if self.peek().0 != Tok::LParen {
                    return Ok(Expr::Ident(name.to_string()));
                }
                let Some(func) = FUNCTIONS.iter().find(|f| **f == name) else {
                    return Err(FormulaError {
                        message: format!(
                            "unknown function \"{name}\" (allowed: {})",
                            FUNCTIONS.join(", ")
                        ),
                        pos: name_err.pos,
                    });
                };
                self.bump();
                self.enter()?;
                let mut args = Vec::new();
                if self.peek().0 == Tok::RParen {
                    self.bump();
                } else {
                    loop {
                        args.push(self.comparison()?);
                        if self.peek().0 == Tok::Comma {
                            self.bump();
                            continue;
                        }
                        break;
                    }
                    self.expect_rparen("after function arguments")?;
                }
                self.depth -= 1;
                Ok(Expr::Call(func, args))
            }
            Tok::LParen => {
                self.bump();
                self.enter()?;
                let inner = self.comparison()?;
                self.expect_rparen("after expression")?;
                self.depth -= 1;
                Ok(inner)
            }
            other => Err(self.error(format!(
                "expected a number, name, function call or \"(\" but found {}",
                other.describe()
            ))),
        }
    }

    fn expect_rparen(&mut self, context: &str) -> Result<(), FormulaError> {
        if self.peek().0 == Tok::RParen {
            self.bump();
            Ok(())
        } else {
            Err(self.error(format!(
                "expected \")\" {context} but found {}",
                self.peek().0.describe()
            )))
        }
    }
}

/// Parses a formula.
pub fn parse(src: &str) -> Result<Expr, FormulaError> {
    let toks = tokenize(src);
    if toks.len() > MAX_TOKENS {
        return Err(FormulaError {
            message: format!("formula has more than {MAX_TOKENS} tokens"),
            pos: 0,
        });
    }
    let mut p = Parser {
        toks,
        at: 0,
        depth: 0,
    };
    let expr = p.comparison()?;
    match &p.peek().0 {
        Tok::Eof => Ok(expr),
        other => Err(p.error(format!("unexpected {}", other.describe()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(src: &str) -> Vec<String> {
        parse(src)
            .unwrap()
            .identifiers()
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn precedence_and_associativity() {
        use Expr::*;
        let e = parse("1 + 2 * 3 ^ 2 ^ 1").unwrap();
        let expect = Binary(
            "+",
            Box::new(Number(1.0)),
            Box::new(Binary(
                "*",
                Box::new(Number(2.0)),
                Box::new(Binary(
                    "^",
                    Box::new(Number(3.0)),
                    Box::new(Binary("^", Box::new(Number(2.0)), Box::new(Number(1.0)))),
                )),
            )),
        );
        assert_eq!(e, expect);
        assert!(
            matches!(parse("a - b - c").unwrap(), Binary("-", l, _) if matches!(*l, Binary("-", _, _)))
        );
    }

    #[test]
    fn identifiers_are_sorted_unique_and_may_contain_dashes() {
        assert_eq!(
            ids("price * qty + price - tax-rate"),
            ["price", "qty", "tax-rate"]
        );
        assert_eq!(ids("if(a >= 2, clamp(b, 0, 1), -c.d)"), ["a", "b", "c.d"]);
        assert_eq!(ids(".5e3 * 2"), Vec::<String>::new());
    }

    #[test]
    fn rejects_bad_syntax_and_unknown_functions() {
        for bad in [
            "",
            "1 +",
            "(1",
            "1)",
            "a b",
            "sqrt(2)",
            "1 $ 2",
            "min(1,)",
            "1e999",
            "a < b < c",
            ",",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
        let e = parse("x + sqrt(2)").unwrap_err();
        assert!(e.message.contains("sqrt"), "{}", e.message);
        assert_eq!(e.pos, 4);
        for ok in [
            "min()", "pow(1)", "-(-x)", "1 == 2", "+3", "2e-3", "abs(x)^2",
        ] {
            assert!(parse(ok).is_ok(), "{ok:?} should parse");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("{}1{}", "(".repeat(1000), ")".repeat(1000));
        assert!(parse(&deep).unwrap_err().message.contains("nests"));
        let signs = format!("{}1", "-".repeat(2000));
        assert!(parse(&signs).unwrap_err().message.contains("nests"));
        let pow = vec!["2"; 1000].join("^");
        assert!(parse(&pow).unwrap_err().message.contains("nests"));
        let huge = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse(&huge).is_err());
        let chain = vec!["1"; 100_000].join("+");
        assert!(parse(&chain).unwrap_err().message.contains("tokens"));
        let ok = format!("{}1{}", "(".repeat(50), ")".repeat(50));
        assert!(parse(&ok).is_ok());
    }
}
