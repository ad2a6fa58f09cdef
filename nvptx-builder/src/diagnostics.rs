//! A C/C++ compiler's log (gcc or clang) put in the order a reader needs it: the errors
//! first, each with its context (`In file included from`, `In function`, `required from
//! here`), its source line and caret and its notes; the warnings only counted, with the
//! files they come from. A third-party header can print hundreds of lines of warnings
//! before the one error in the user's `.cu`.

/// How a diagnostic line is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Severity {
    Error,
    Warning,
    Note,
}

/// One diagnostic: its context lines, its header (`file:line:col: error: ...`), and the
/// lines that follow it (source line, caret, notes).
#[derive(Debug)]
struct Group<'a> {
    severity: Severity,
    /// The file the header names.
    file: &'a str,
    lines: Vec<&'a str>,
}

/// The severity and file of a header line, `path:12:5: error: text` (also `path:12: error:`,
/// `cc1plus: warning:`), or `None` for any other line.
fn header(line: &str) -> Option<(Severity, &str)> {
    for (marker, severity) in [
        (": fatal error: ", Severity::Error),
        (": error: ", Severity::Error),
        (": warning: ", Severity::Warning),
        (": note: ", Severity::Note),
    ] {
        if let Some(at) = line.find(marker) {
            let place = &line[..at];
            // `path:line:col`, `path:line` or a program name; never leading blanks (those are
            // source lines that happen to contain the marker).
            if place.is_empty() || place.starts_with(char::is_whitespace) {
                return None;
            }
            let file = place
                .split(':')
                .next()
                .filter(|f| !f.is_empty())
                .unwrap_or(place);
            return Some((severity, file));
        }
    }
    None
}

/// `3 warnings and 1 error generated.` (clang's summary).
fn is_summary(line: &str) -> bool {
    line.ends_with(" generated.")
        && line
            .split_whitespace()
            .next()
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
}

/// The log with its errors first; the warnings are left out and counted. `see_all` says how
/// to see the whole log. A log whose errors cannot be told apart is returned as it is.
pub(crate) fn errors_first(log: &str, see_all: &str) -> String {
    let mut groups: Vec<Group<'_>> = Vec::new();
    let mut pending: Vec<&str> = Vec::new();
    let mut other: Vec<&str> = Vec::new();
    for line in log.lines() {
        if let Some((severity, file)) = header(line) {
            let mut lines = std::mem::take(&mut pending);
            lines.push(line);
            match (severity, groups.last_mut()) {
                // A note belongs to the diagnostic before it.
                (Severity::Note, Some(last)) => last.lines.extend(lines),
                _ => groups.push(Group {
                    severity,
                    file,
                    lines,
                }),
            }
        } else if is_summary(line) || line.trim().is_empty() {
            continue;
        } else if line.starts_with(char::is_whitespace)
            && !line.trim_start().starts_with("from ")
            && pending.is_empty()
        {
            // The source line and caret (or a continuation) of the current diagnostic.
            match groups.last_mut() {
                Some(last) => last.lines.push(line),
                None => other.push(line),
            }
        } else {
            // `In file included from`, `f.cu: In function 'int f()':`, `f.cu:5:3:   required
            // from here`: context of the diagnostic that comes next.
            pending.push(line);
        }
    }
    other.extend(pending);
    let errors: Vec<&Group<'_>> = groups
        .iter()
        .filter(|g| g.severity == Severity::Error)
        .collect();
    if errors.is_empty() {
        return log.trim_end().to_owned();
    }
    let mut out: Vec<&str> = errors
        .iter()
        .flat_map(|g| g.lines.iter().copied())
        .collect();
    out.extend(other);
    let mut text = out.join("\n");
    let warnings: Vec<&Group<'_>> = groups
        .iter()
        .filter(|g| g.severity == Severity::Warning)
        .collect();
    if !warnings.is_empty() {
        let mut files: Vec<&str> = Vec::new();
        for w in &warnings {
            if !files.contains(&w.file) {
                files.push(w.file);
            }
        }
        let shown = files.len().min(4);
        let mut list = files[..shown].join(", ");
        if files.len() > shown {
            list.push_str(&format!(" and {} more", files.len() - shown));
        }
        text.push_str(&format!(
            "\nnote: {} warning{} not shown (in {list}); {see_all}",
            warnings.len(),
            if warnings.len() == 1 { "" } else { "s" },
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const GCC: &str = concat!(
        "In file included from e.cu:1:\n",
        "lib/rng.h: In function \u{2018}int unused_fn(int)\u{2019}:\n",
        "lib/rng.h:2:33: warning: unused variable \u{2018}b\u{2019} [-Wunused-variable]\n",
        "    2 | static int unused_fn(int a){int b; return 0;}\n",
        "      |                                 ^\n",
        "lib/rng.h:2:26: warning: unused parameter \u{2018}a\u{2019} [-Wunused-parameter]\n",
        "    2 | static int unused_fn(int a){int b; return 0;}\n",
        "      |                      ~~~~^\n",
        "e.cu: In function \u{2018}int f()\u{2019}:\n",
        "e.cu:3:22: error: expected primary-expression before \u{2018};\u{2019} token\n",
        "    3 | int f() { int x = 1 +; return x; }\n",
        "      |                      ^\n",
        "e.cu: In instantiation of \u{2018}void g(T) [with T = int]\u{2019}:\n",
        "e.cu:5:12:   required from here\n",
        "e.cu:4:34: error: request for member \u{2018}foo\u{2019} in \u{2018}t\u{2019}\n",
        "    4 | template<class T> void g(T t){ t.foo(); }\n",
        "      |                                ~~^~~\n",
    );

    const CLANG: &str = concat!(
        "In file included from e.cu:1:\n",
        "lib/rng.h:2:33: warning: unused variable 'b' [-Wunused-variable]\n",
        "    2 | static int unused_fn(int a){int b; return 0;}\n",
        "      |                                 ^\n",
        "e.cu:3:22: error: expected expression\n",
        "    3 | int f() { int x = 1 +; return x; }\n",
        "      |                      ^\n",
        "e.cu:4:33: error: member reference base type 'int' is not a structure or union\n",
        "    4 | template<class T> void g(T t){ t.foo(); }\n",
        "      |                                ~^~~~\n",
        "e.cu:5:11: note: in instantiation of function template specialization 'g<int>' requested here\n",
        "    5 | void h(){ g(1); }\n",
        "      |           ^\n",
        "lib/rng.h:9:1: warning: something else\n",
        "2 warnings and 2 errors generated.\n",
    );

    #[test]
    fn gcc_errors_come_first_with_their_context_and_warnings_are_counted() {
        let out = errors_first(GCC, "SEE");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0], "e.cu: In function \u{2018}int f()\u{2019}:",
            "{out}"
        );
        assert!(lines[1].starts_with("e.cu:3:22: error:"), "{out}");
        assert_eq!(lines[3].trim(), "|                      ^", "{out}");
        assert!(
            out.contains("e.cu:5:12:   required from here\ne.cu:4:34: error:"),
            "{out}"
        );
        assert!(!out.contains("unused"), "{out}");
        assert!(
            out.ends_with("note: 2 warnings not shown (in lib/rng.h); SEE"),
            "{out}"
        );
    }

    #[test]
    fn clang_errors_keep_their_notes() {
        let out = errors_first(CLANG, "SEE");
        assert!(
            out.starts_with("e.cu:3:22: error: expected expression\n"),
            "{out}"
        );
        assert!(
            out.contains("~^~~~\ne.cu:5:11: note: in instantiation"),
            "{out}"
        );
        assert!(!out.contains("generated."), "{out}");
        assert!(!out.contains("something else"), "{out}");
        assert!(
            out.ends_with("note: 2 warnings not shown (in lib/rng.h); SEE"),
            "{out}"
        );
    }

    #[test]
    fn a_log_without_errors_is_kept() {
        let log = "ld: something odd\n";
        assert_eq!(errors_first(log, "SEE"), "ld: something odd");
        let only_warnings = "a.cu:1:1: warning: w\n";
        assert_eq!(errors_first(only_warnings, "SEE"), only_warnings.trim_end());
    }
}
