//! Redis's glob matching (`stringmatchlen` of Redis 7.2+): `*`, `?`,
//! `[abc]`, `[^a-z]`, and `\` escapes, used by KEYS, SCAN/HSCAN/SSCAN MATCH,
//! COMMAND LIST FILTERBY PATTERN and CONFIG GET.
//!
//! Invariant: matching is bounded. A naive backtracker is exponential in the
//! number of `*` (`a*a*a*…b` against a run of `a`s never finishes); like
//! Redis, once the rest of a pattern after a `*` fails at every position of
//! the rest of the string, no earlier `*` may retry with a longer match
//! (`skip_longer`), which makes the work polynomial (at most about
//! `stars × len(s)` calls). Nesting is capped at 1000 as in Redis.

/// True when `s` matches `pattern`.
///
/// A lone `*` matches everything, the empty string included: that is the
/// all-keys shortcut every Redis caller (KEYS, SCAN, HSCAN, SSCAN) takes
/// before it calls the matcher. Otherwise the empty string matches only the
/// empty pattern, as `stringmatchlen` answers (`**` does not match "").
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    if pattern == b"*" {
        return true;
    }
    if s.is_empty() {
        return pattern.is_empty();
    }
    let mut skip_longer = false;
    match_at(pattern, s, nocase, &mut skip_longer, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

/// A byte as C's signed `char`.
fn signed(b: u8) -> i32 {
    b as i8 as i32
}

/// `tolower` in the C locale: only `A`-`Z` change.
fn lower(c: i32) -> i32 {
    if (b'A' as i32..=b'Z' as i32).contains(&c) {
        c + 32
    } else {
        c
    }
}

fn match_at(mut p: &[u8], mut s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: u32) -> bool {
    // Redis caps recursion to stay safe against adversarial patterns.
    if nesting > 1000 {
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
                while !s.is_empty() {
                    if match_at(&p[1..], s, nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                // The rest of the pattern matched nowhere in the rest of the
                // string: a longer match for an earlier `*` cannot help.
                *skip_longer = true;
                return false;
            }
            b'?' => {
                s = &s[1..];
                p = &p[1..];
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
                        // Redis compares C `char`s, signed on x86 and ARM
                        // Linux builds: `[a-\xff]` is the range -1..=97.
                        let (mut lo, mut hi, mut c) = (signed(p[i]), signed(p[i + 2]), signed(s[0]));
                        if lo > hi {
                            std::mem::swap(&mut lo, &mut hi);
                        }
                        if nocase {
                            lo = lower(lo);
                            hi = lower(hi);
                            c = lower(c);
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
    use super::{lower, matches, signed};

    #[test]
    fn redis_glob_cases() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("*", "", true),
            ("**", "", false),
            ("", "", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[a-b]llo", "hcllo", false),
            ("h[b-a]llo", "hallo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hallo", false),
            ("key:*:x", "key:12:x", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
            ("a[", "ab", false),
            ("a[b", "ab", true),
            ("a\\", "a\\", true),
            ("[\\]]", "]", true),
        ];
        for (p, s, want) in cases {
            assert_eq!(matches(p.as_bytes(), s.as_bytes(), false), *want, "{p} vs {s}");
        }
        assert!(matches(b"MAX*", b"maxclients", true));
        // Signed-char ranges, as Redis's C compares them.
        assert!(!matches(b"[a-\xff]", b"z", false));
        assert!(matches(b"[a-\xff]", b"\x00", false));
    }

    /// Redis's matcher before the `skipLongerMatches` fix: exponential, but
    /// the reference for what a pattern means on small inputs.
    fn reference(p: &[u8], s: &[u8], nocase: bool) -> bool {
        fn go(mut p: &[u8], mut s: &[u8], nocase: bool) -> bool {
            let eq = |a: u8, b: u8| if nocase { a.eq_ignore_ascii_case(&b) } else { a == b };
            while !p.is_empty() && !s.is_empty() {
                match p[0] {
                    b'*' => {
                        while p.len() > 1 && p[1] == b'*' {
                            p = &p[1..];
                        }
                        if p.len() == 1 {
                            return true;
                        }
                        return (0..s.len()).any(|i| go(&p[1..], &s[i..], nocase));
                    }
                    b'?' => {}
                    b'[' => {
                        let mut i = 1;
                        let not = p.get(1) == Some(&b'^');
                        i += not as usize;
                        let mut hit = false;
                        loop {
                            if i >= p.len() {
                                i = p.len() - 1;
                                break;
                            }
                            if p[i] == b'\\' && i + 1 < p.len() {
                                i += 1;
                                hit |= p[i] == s[0];
                            } else if p[i] == b']' {
                                break;
                            } else if i + 2 < p.len() && p[i + 1] == b'-' {
                                let (mut lo, mut hi) = (signed(p[i]), signed(p[i + 2]));
                                if lo > hi {
                                    std::mem::swap(&mut lo, &mut hi);
                                }
                                let c = signed(s[0]);
                                let (lo, hi, c) = if nocase { (lower(lo), lower(hi), lower(c)) } else { (lo, hi, c) };
                                hit |= c >= lo && c <= hi;
                                i += 2;
                            } else {
                                hit |= eq(p[i], s[0]);
                            }
                            i += 1;
                        }
                        if hit == not {
                            return false;
                        }
                        p = &p[i..];
                    }
                    b'\\' if p.len() >= 2 => {
                        p = &p[1..];
                        if !eq(p[0], s[0]) {
                            return false;
                        }
                    }
                    c => {
                        if !eq(c, s[0]) {
                            return false;
                        }
                    }
                }
                p = &p[1..];
                s = &s[1..];
                if s.is_empty() {
                    while p.first() == Some(&b'*') {
                        p = &p[1..];
                    }
                    break;
                }
            }
            p.is_empty() && s.is_empty()
        }
        if p == b"*" {
            return true;
        }
        !s.is_empty() && go(p, s, nocase) || s.is_empty() && p.is_empty()
    }

    /// xorshift64*: deterministic cases without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Fuzz: random patterns over a small alphabet rich in metacharacters
    /// agree with the reference on random strings, for both cases.
    #[test]
    fn fuzz_agrees_with_reference() {
        const PAT: &[u8] = b"ab*?[]^-\\Az\xff";
        const STR: &[u8] = b"abAz-]\\*\xff";
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..200_000 {
            let p: Vec<u8> = (0..rng.below(10)).map(|_| PAT[rng.below(PAT.len())]).collect();
            let s: Vec<u8> = (0..rng.below(12)).map(|_| STR[rng.below(STR.len())]).collect();
            let nocase = rng.below(2) == 1;
            assert_eq!(
                matches(&p, &s, nocase),
                reference(&p, &s, nocase),
                "{:?} vs {:?} nocase {nocase}",
                p,
                s
            );
        }
    }

    /// Adversarial patterns finish: many stars against long strings with no
    /// match. The exponential matcher needs longer than the universe for the
    /// first of these; the bounded one does all of them in milliseconds.
    #[test]
    fn star_heavy_patterns_are_bounded() {
        let s = vec![b'a'; 300];
        let mut p = b"a*".repeat(40);
        p.push(b'b');
        let started = std::time::Instant::now();
        assert!(!matches(&p, &s, false));
        let mut rng = Rng(7);
        for _ in 0..2_000 {
            let p: Vec<u8> = (0..rng.below(60)).map(|_| b"a*?b"[rng.below(4)]).collect();
            let s: Vec<u8> = (0..rng.below(200)).map(|_| b"ab"[rng.below(2)]).collect();
            matches(&p, &s, false);
        }
        // A hang check, not a speed target: the old matcher never returned.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "took {:?}",
            started.elapsed()
        );
    }
}
