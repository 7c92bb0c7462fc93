//! Redis's glob matching (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a-z]`,
//! and `\` escapes, used by KEYS, SCAN MATCH and CONFIG GET.

/// True when `s` matches `pattern`.
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    match_at(pattern, s, nocase, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

fn match_at(mut p: &[u8], mut s: &[u8], nocase: bool, depth: u32) -> bool {
    // Redis caps recursion to stay safe against adversarial patterns.
    if depth > 1000 {
        return false;
    }
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for i in 0..s.len() {
                    if match_at(&p[1..], &s[i..], nocase, depth + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                s = &s[1..];
                p = &p[1..];
                continue;
            }
            b'[' => {
                let mut i = 1;
                let not = p.get(1) == Some(&b'^');
                if not {
                    i += 1;
                }
                let mut matched = false;
                loop {
                    if i >= p.len() {
                        // Unterminated class: Redis treats the end as the close.
                        i = p.len() - 1;
                        break;
                    }
                    if p[i] == b'\\' && i + 1 < p.len() {
                        i += 1;
                        if p[i] == s[0] {
                            matched = true;
                        }
                    } else if p[i] == b']' {
                        break;
                    } else if i + 2 < p.len() && p[i + 1] == b'-' {
                        let (mut lo, mut hi) = (p[i], p[i + 2]);
                        let mut c = s[0];
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        if nocase {
                            lo = lo.to_ascii_lowercase();
                            hi = hi.to_ascii_lowercase();
                            c = c.to_ascii_lowercase();
                        }
                        if c >= lo && c <= hi {
                            matched = true;
                        }
                        i += 2;
                    } else if eq(p[i], s[0], nocase) {
                        matched = true;
                    }
                    i += 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
                p = &p[(i + 1).min(p.len())..];
                continue;
            }
            b'\\' if p.len() >= 2 => {
                if !eq(p[1], s[0], nocase) {
                    return false;
                }
                p = &p[2..];
                s = &s[1..];
                continue;
            }
            c => {
                if !eq(c, s[0], nocase) {
                    return false;
                }
                p = &p[1..];
                s = &s[1..];
            }
        }
    }
    if s.is_empty() {
        while !p.is_empty() && p[0] == b'*' {
            p = &p[1..];
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn redis_glob_cases() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("*", "", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[a-b]llo", "hcllo", false),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hallo", false),
            ("key:*:x", "key:12:x", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
        ];
        for (p, s, want) in cases {
            assert_eq!(matches(p.as_bytes(), s.as_bytes(), false), *want, "{p} vs {s}");
        }
        assert!(matches(b"MAX*", b"maxclients", true));
    }
}
